package server_test

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/test/conformance"
)

// The tests here replay the floods of issue 16 against a server in this process, with
// small settings, and check the bounds of docs/limits.md: what the server holds stays
// near what the bounds allow, the flooding connections are cut off or slowed, and
// everyone else is served.

// startBounded starts a server for a flood: every client is 127.0.0.1, so no per-IP
// cap; no fsync, since the floods are about memory and waiting, not durability.
func startBounded(t *testing.T, configure func(*server.Config)) *server.Server {
	t.Helper()
	cfg := testutil.PaddockConfig(t)
	cfg.MaxClientCnxns = 0
	cfg.ForceSync = false
	if configure != nil {
		configure(&cfg)
	}
	return testutil.StartServer(t, cfg)
}

// heapWatch samples the live Go heap while a flood runs: it collects garbage and reads
// the heap allocated, over and over, so that what it sees is what the server holds, not
// what the collector has yet to free (the server's GC tuning lets garbage reach several
// times the live heap).
type heapWatch struct {
	base uint64
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// watchHeap notes the live heap and samples it until growth is called.
func watchHeap(t *testing.T) *heapWatch {
	t.Helper()
	w := &heapWatch{base: liveHeap(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			if h := liveHeap(); h > w.peak.Load() {
				w.peak.Store(h)
			}
			select {
			case <-w.stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { w.growth() })
	return w
}

// growth stops the sampling and returns the peak live heap above the start, in MiB.
func (w *heapWatch) growth() float64 {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	return mib(int64(w.peak.Load()) - int64(w.base))
}

// liveHeap collects garbage and returns the heap that collection found live.
func liveHeap() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// requests encodes n request frames, each made by req, with xids from 1.
func requests(n int, req func(i int) (wire.Op, wire.Record)) []byte {
	return requestsFrom(1, n, req)
}

// requestsFrom encodes n request frames, each made by req, with xids from first.
func requestsFrom(first int32, n int, req func(i int) (wire.Op, wire.Record)) []byte {
	var e wire.Encoder
	for i := range n {
		op, rec := req(i)
		off := e.BeginFrame()
		(&wire.RequestHeader{Xid: first + int32(i), Op: op}).Encode(&e)
		if rec != nil {
			rec.Encode(&e)
		}
		e.EndFrame(off)
	}
	return e.Bytes()
}

func mustCreate(t *testing.T, c *conformance.Conn, path string, data []byte, flags int32) {
	t.Helper()
	if f := call(t, c, wire.OpCreate, &wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe, Flags: flags}); f.Header.Err != wire.OK {
		t.Fatalf("create %s: %v", path, f.Header.Err)
	}
}

// TestSessionlessConnectionsExpire: connections that send nothing, or half a connect
// request, are closed after HandshakeTimeout and counted; dump shows when; a session,
// once made, is not held to it.
func TestSessionlessConnectionsExpire(t *testing.T) {
	const timeout = 500 * time.Millisecond
	srv := startBounded(t, func(c *server.Config) { c.HandshakeTimeout = timeout })
	addr := srv.Addr().String()
	var idle []*conformance.Conn
	for i := range 24 {
		c, err := conformance.Dial(addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if i%2 == 1 { // the length and the first bytes of a connect request, no more
			c.WriteRaw([]byte{0, 0, 0, 45, 0, 0, 0, 0, 0, 0})
		}
		idle = append(idle, c)
	}
	testutil.Eventually(t, 5*time.Second, time.Millisecond, func() bool { return len(srv.Connections()) > 0 },
		"no connection listed")
	for _, c := range srv.Connections() {
		if c.Expires.Sub(c.Established) != timeout {
			t.Errorf("a sessionless connection expires %v after it was accepted, want %v", c.Expires.Sub(c.Established), timeout)
		}
	}
	good := rawSession(t, addr)
	for _, c := range idle {
		waitClosed(t, c)
	}
	testutil.Eventually(t, 5*time.Second, 5*time.Millisecond, func() bool {
		return srv.Stats().Limits.SessionlessExpired == 24
	}, "sessionless_connections_expired = %d, want 24", srv.Stats().Limits.SessionlessExpired)
	if f := call(t, good, wire.OpGetData, &wire.PathWatchRequest{Path: "/zookeeper"}); f.Header.Err != wire.OK {
		t.Fatalf("a session older than the handshake timeout: %v", f.Header.Err)
	}
	if n := srv.Stats().Connections; n != 1 {
		t.Fatalf("%d connections open, want the session's alone", n)
	}
}

// TestHalfSentFramesHoldLittle: connect frames announced at a megabyte are refused
// before their body is read; request frames announced at a megabyte and never finished
// hold the memory that arrived, not the megabyte. (Unbounded, 300 of them held 300 MiB.)
func TestHalfSentFramesHoldLittle(t *testing.T) {
	srv := startBounded(t, nil)
	addr := srv.Addr().String()
	const conns = 300
	announce := func(n int) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(n)), make([]byte, 1024)...)
	}

	for range 100 {
		c, err := conformance.Dial(addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.WriteRaw(announce(wire.DefaultMaxBuffer))
		waitClosed(t, c)
	}
	if n := srv.Stats().Limits.FramesRejected; n != 100 {
		t.Errorf("frames_rejected = %d after 100 megabyte connect frames, want 100", n)
	}

	sessions := make([]*conformance.Conn, conns)
	for i := range sessions {
		sessions[i] = rawSession(t, addr)
	}
	heap := watchHeap(t)
	ping := requests(1, func(int) (wire.Op, wire.Record) { return wire.OpPing, nil })
	for _, c := range sessions {
		// A ping, then a megabyte frame of which 1 KiB comes: once the ping is answered,
		// the read loop has gone on to the big frame.
		if err := c.WriteRaw(append(ping, announce(wire.DefaultMaxBuffer)...)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range sessions {
		if f, err := c.ReadFrame(10 * time.Second); err != nil || f.Header.Xid != 1 {
			t.Fatalf("ping: %+v %v", f, err)
		}
	}
	time.Sleep(100 * time.Millisecond) // a window for the sampling, not a wait for the server
	grew := heap.growth()
	t.Logf("%d megabyte frames of which 1 KiB came: the live heap grew by %.1f MiB", conns, grew)
	if grew > 32 {
		t.Fatalf("%d half-sent megabyte frames took the live heap up %.1f MiB; %d KiB of them came", conns, grew, conns)
	}
	if f := call(t, rawSession(t, addr), wire.OpExists, &wire.PathWatchRequest{Path: "/"}); f.Header.Err != wire.OK {
		t.Fatalf("the server stopped serving: %v", f.Header.Err)
	}
}

// TestLargeRepliesRefused: reads whose replies would pass jute.maxbuffer (plus
// headroom) are answered MarshallingError before anything is built, without setting
// their watches, and counted — a multiRead of thousands of getData of a megabyte node
// first of all (unbounded, one asked for gigabytes and killed the server). Replies a
// client may read, a maximal node's data included, still come, and other clients are
// served meanwhile.
func TestLargeRepliesRefused(t *testing.T) {
	srv := startBounded(t, nil)
	addr := srv.Addr().String()
	owner, other := rawSession(t, addr), rawSession(t, addr)
	mustCreate(t, owner, "/big", nil, wire.FlagPersistent)
	mustCreate(t, owner, "/small", []byte("ok"), wire.FlagPersistent)
	// The largest setData a frame can carry: 8 bytes of header, the path, the data and
	// the version. Its getData reply is 64 bytes larger than the request was.
	maximal := make([]byte, wire.DefaultMaxBuffer-8-(4+len("/big"))-4-4)
	if f := call(t, owner, wire.OpSetData, &wire.SetDataRequest{Path: "/big", Data: maximal, Version: -1}); f.Header.Err != wire.OK {
		t.Fatalf("maximal setData: %v", f.Header.Err)
	}
	if f := call(t, owner, wire.OpGetData, &wire.PathWatchRequest{Path: "/big"}); f.Header.Err != wire.OK || f.Len <= wire.DefaultMaxBuffer {
		t.Fatalf("getData of a maximal node: %v, %d bytes", f.Header.Err, f.Len)
	}
	one := &wire.MultiRequest{Ops: []wire.MultiOp{{Op: wire.OpGetData, Req: &wire.PathWatchRequest{Path: "/big"}}}}
	if f := call(t, owner, wire.OpMultiRead, one); f.Header.Err != wire.OK {
		t.Fatalf("multiRead of a maximal node: %v", f.Header.Err)
	}

	var witnessed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // another client reads all along
		for {
			select {
			case <-stop:
				return
			default:
			}
			other.Send(other.NextXid(), wire.OpGetData, &wire.PathWatchRequest{Path: "/small"})
			if f, err := other.ReadFrame(10 * time.Second); err != nil || f.Header.Err != wire.OK {
				t.Errorf("another client's getData: %+v %v", f, err)
				return
			}
			witnessed.Add(1)
		}
	})
	heap := watchHeap(t)
	huge := &wire.MultiRequest{}
	for range 3000 {
		huge.Ops = append(huge.Ops, wire.MultiOp{Op: wire.OpGetData, Req: &wire.PathWatchRequest{Path: "/big", Watch: true}})
	}
	for range 3 {
		f := call(t, owner, wire.OpMultiRead, huge)
		var rest wire.MultiResponse
		d := wire.NewDecoder(f.Body)
		rest.Decode(d)
		if f.Header.Err != wire.ErrMarshallingError || d.Err() != nil || len(rest.Results) != 0 || d.Remaining() != 0 {
			t.Fatalf("multiRead of 3000 megabytes: %v with %d results (%v), want MarshallingError and an empty list",
				f.Header.Err, len(rest.Results), d.Err())
		}
	}
	grew := heap.growth()
	t.Logf("three multiReads of 3000 getData of a megabyte node: the live heap grew by %.1f MiB", grew)
	if grew > 16 {
		t.Errorf("refused multiReads took the live heap up %.1f MiB", grew)
	}
	testutil.Eventually(t, 10*time.Second, time.Millisecond, func() bool { return witnessed.Load() > 0 },
		"another client got no reply while the multiReads were refused")
	close(stop)
	wg.Wait()

	// getChildren, getChildren2 and getEphemerals of 1100 names of 1000 bytes each.
	mustCreate(t, owner, "/wide", nil, wire.FlagPersistent)
	long := strings.Repeat("n", 996)
	if err := owner.WriteRaw(requests(1100, func(i int) (wire.Op, wire.Record) {
		return wire.OpCreate, &wire.CreateRequest{Path: fmt.Sprintf("/wide/%s%04d", long, i), ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral}
	})); err != nil {
		t.Fatal(err)
	}
	for range 1100 {
		if f, err := owner.ReadFrame(10 * time.Second); err != nil || f.Header.Err != wire.OK {
			t.Fatalf("create: %+v %v", f, err)
		}
	}
	for _, op := range []wire.Op{wire.OpGetChildren, wire.OpGetChildren2} {
		if f := call(t, owner, op, &wire.PathWatchRequest{Path: "/wide", Watch: true}); f.Header.Err != wire.ErrMarshallingError {
			t.Errorf("%v of 1.1 MB of names: %v, want MarshallingError", op, f.Header.Err)
		}
	}
	if f := call(t, owner, wire.OpGetEphemerals, &wire.PathRecord{Path: "/wide"}); f.Header.Err != wire.ErrMarshallingError {
		t.Errorf("getEphemerals of 1.1 MB of paths: %v, want MarshallingError", f.Header.Err)
	}
	if st := srv.Stats(); st.Watches != 0 || st.Limits.LargeResponsesRejected != 6 {
		t.Errorf("%d watches set and %d replies refused, want none set and 6 refused", st.Watches, st.Limits.LargeResponsesRejected)
	}
}

// TestSlowReadersDroppedAtServerLimit: 25 clients pipeline reads of a 512 KiB node and
// read nothing. Each stays under its connection's limit, but together they pass the
// server's: the connections holding the most are closed until the total is back under
// it, and the heap stays near it (unbounded, they held 25 × 20 MiB). A client that
// reads its replies is served throughout.
func TestSlowReadersDroppedAtServerLimit(t *testing.T) {
	const limit = 24 << 20
	srv := startBounded(t, func(c *server.Config) { c.MaxQueuedBytes = limit })
	addr := srv.Addr().String()
	good := rawSession(t, addr)
	mustCreate(t, good, "/half", make([]byte, 512<<10), wire.FlagPersistent)
	mustCreate(t, good, "/small", []byte("ok"), wire.FlagPersistent)
	slow := make([]*conformance.Conn, 25)
	for i := range slow {
		slow[i] = rawSession(t, addr)
	}
	flood := requests(40, func(int) (wire.Op, wire.Record) { return wire.OpGetData, &wire.PathWatchRequest{Path: "/half"} })

	heap := watchHeap(t)
	for _, c := range slow {
		go c.WriteRaw(flood) // may block once the server stops reading a dropped connection
	}
	for range 50 {
		if f := call(t, good, wire.OpGetData, &wire.PathWatchRequest{Path: "/small"}); f.Header.Err != wire.OK {
			t.Fatalf("the client that reads: %v", f.Header.Err)
		}
	}
	testutil.Eventually(t, 20*time.Second, 5*time.Millisecond, func() bool {
		return srv.Stats().Limits.ConnectionsDropped >= 20
	}, "connection_drop_count = %d, want at least 20 of the 25", srv.Stats().Limits.ConnectionsDropped)
	grew := heap.growth()
	st := srv.Stats()
	t.Logf("25 × 20 MiB of replies asked for, %d MiB allowed: %d connections dropped, the live heap grew by %.1f MiB",
		limit>>20, st.Limits.ConnectionsDropped, grew)
	// The limit, as much again for what the connections dropped hold until their own
	// goroutines close them, and the spare capacity of buffers: far from 25 × 20 MiB.
	if bound := 5 * limit >> 20; grew > float64(bound) {
		t.Errorf("the live heap grew by %.1f MiB with %d MiB of replies allowed; want at most %d", grew, limit>>20, bound)
	}
	// While replies are still being built the count may pass the limit by them, each
	// counted before it is built (makeRoom); once built, it is within the limit.
	testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return srv.Stats().Limits.QueuedBytes <= limit },
		"%d bytes still queued, over the limit of %d", srv.Stats().Limits.QueuedBytes, limit)
	if f := call(t, good, wire.OpGetData, &wire.PathWatchRequest{Path: "/half"}); f.Header.Err != wire.OK {
		t.Fatalf("the client that reads, after the flood: %v", f.Header.Err)
	}
}

// TestDrainedConnectionGivesBuffersBack: a connection whose 20 MiB of replies piled up
// before its client read them does not keep 20 MiB of buffers once they are written.
func TestDrainedConnectionGivesBuffersBack(t *testing.T) {
	srv := startBounded(t, nil)
	addr := srv.Addr().String()
	setup := rawSession(t, addr)
	mustCreate(t, setup, "/half", make([]byte, 512<<10), wire.FlagPersistent)
	clients := make([]*conformance.Conn, 3)
	for i := range clients {
		clients[i] = rawSession(t, addr)
	}
	heap := watchHeap(t)
	flood := requests(40, func(int) (wire.Op, wire.Record) { return wire.OpGetData, &wire.PathWatchRequest{Path: "/half"} })
	for _, c := range clients {
		if err := c.WriteRaw(flood); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 20*time.Second, 5*time.Millisecond, func() bool {
		return srv.Stats().Limits.QueuedBytes > 3*10<<20
	}, "the replies never piled up: %d bytes queued", srv.Stats().Limits.QueuedBytes)
	for _, c := range clients {
		for range 40 {
			if f, err := c.ReadFrame(10 * time.Second); err != nil || f.Header.Err != wire.OK {
				t.Fatalf("reply: %+v %v", f, err)
			}
		}
	}
	testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return srv.Stats().Limits.QueuedBytes == 0 },
		"%d bytes still queued after every reply was read", srv.Stats().Limits.QueuedBytes)
	peak := heap.growth()
	kept := mib(int64(liveHeap()) - int64(heap.base))
	t.Logf("3 × 20 MiB of replies piled up and read: the live heap peaked %.1f MiB up, %.1f MiB up after", peak, kept)
	if kept > 16 {
		t.Fatalf("after their replies were written, 3 connections still hold %.1f MiB", kept)
	}
}

// TestPipelinedFloodIsThrottled: clients that pipeline tens of thousands of requests
// without reading, writes with reads queued behind them, are throttled: the server's
// outstanding requests never pass MaxOutstanding by more than the number of
// connections, nor one connection's its own limit, and every request is answered, in
// order. (Unbounded, reads queued behind writes piled up without limit.)
func TestPipelinedFloodIsThrottled(t *testing.T) {
	for _, tc := range []struct {
		name              string
		global, perConn   int
		conns             int
		wantGlobalWaiting bool
	}{
		{"server limit", 64, 100, 4, true},
		{"connection limit", 1000, 16, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startBounded(t, func(c *server.Config) { c.MaxOutstanding, c.MaxOutstandingPerConn = tc.global, tc.perConn })
			addr := srv.Addr().String()
			setup := rawSession(t, addr)
			mustCreate(t, setup, "/n", []byte("v"), wire.FlagPersistent)
			const each = 10000
			flood := requests(each, func(i int) (wire.Op, wire.Record) {
				if i%5 == 0 {
					return wire.OpSetData, &wire.SetDataRequest{Path: "/n", Data: []byte("w"), Version: -1}
				}
				return wire.OpGetData, &wire.PathWatchRequest{Path: "/n"}
			})
			clients := make([]*conformance.Conn, tc.conns)
			for i := range clients {
				clients[i] = rawSession(t, addr)
			}
			heap := watchHeap(t)
			var most atomic.Int64
			stop := make(chan struct{})
			var sampler sync.WaitGroup
			sampler.Go(func() {
				for {
					most.Store(max(most.Load(), srv.Stats().Outstanding))
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Microsecond):
					}
				}
			})
			var senders sync.WaitGroup
			for _, c := range clients {
				senders.Go(func() {
					if err := c.WriteRaw(flood); err != nil {
						t.Error(err)
					}
				})
			}
			for _, c := range clients {
				for i := range each {
					f, err := c.ReadFrame(20 * time.Second)
					if err != nil || f.Header.Xid != int32(i+1) || f.Header.Err != wire.OK {
						t.Fatalf("reply %d: %+v %v", i+1, f, err)
					}
				}
			}
			senders.Wait()
			close(stop)
			sampler.Wait()
			grew := heap.growth()
			st := srv.Stats()
			t.Logf("%d × %d pipelined requests: at most %d outstanding, %d+%d throttle waits, the live heap grew by %.1f MiB",
				tc.conns, each, most.Load(), st.Limits.ThrottleWaits, st.Limits.ConnThrottleWaits, grew)
			if bound := int64(min(tc.global, tc.conns*tc.perConn) + tc.conns); most.Load() > bound {
				t.Errorf("%d requests outstanding at once, want at most %d", most.Load(), bound)
			}
			if (st.Limits.ThrottleWaits > 0) != tc.wantGlobalWaiting || (st.Limits.ConnThrottleWaits > 0) == tc.wantGlobalWaiting {
				t.Errorf("request_throttle_wait_count %d, connection_throttle_wait_count %d", st.Limits.ThrottleWaits, st.Limits.ConnThrottleWaits)
			}
			if grew > 16 {
				t.Errorf("the live heap grew by %.1f MiB", grew)
			}
			if st.Outstanding != 0 {
				t.Errorf("%d requests outstanding once all were answered", st.Outstanding)
			}
		})
	}
}

// TestAuthIdentitiesBounded: a connection's identities travel in every txn it proposes,
// so a client that keeps adding digests, or sends one of a megabyte, is refused with
// AuthFailed and the connection closed, as a failed auth is.
func TestAuthIdentitiesBounded(t *testing.T) {
	srv := startBounded(t, nil)
	addr := srv.Addr().String()
	c := rawSession(t, addr)
	auth := func(c *conformance.Conn, cred string) wire.Code {
		if err := c.Send(wire.XidAuth, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte(cred)}); err != nil {
			t.Fatal(err)
		}
		f, err := c.ReadFrame(5 * time.Second)
		if err != nil {
			t.Fatalf("auth %.20q: %v", cred, err)
		}
		return f.Header.Err
	}
	// The ip identity is one; the next 31 digests fit.
	for i := range 31 {
		if code := auth(c, fmt.Sprintf("user%d:pw", i)); code != wire.OK {
			t.Fatalf("digest %d refused: %v", i, code)
		}
	}
	if code := auth(c, "one:more"); code != wire.ErrAuthFailed {
		t.Fatalf("the 33rd identity answered %v, want AuthFailed", code)
	}
	waitClosed(t, c)

	long := rawSession(t, addr)
	if code := auth(long, strings.Repeat("u", 64<<10)+":pw"); code != wire.ErrAuthFailed {
		t.Fatalf("a 64 KiB user name answered %v, want AuthFailed", code)
	}
	waitClosed(t, long)
	// The same digest again adds nothing and is not refused.
	again := rawSession(t, addr)
	for range 40 {
		if code := auth(again, "same:pw"); code != wire.OK {
			t.Fatalf("a repeated digest answered %v", code)
		}
	}
}

// TestLargeRequestsCountForMore: a request counts as one outstanding request, and one
// more per 64 KiB of its frame; once large requests are answered the count is back to
// zero, whatever order they were answered in.
func TestLargeRequestsCountForMore(t *testing.T) {
	srv := startBounded(t, func(c *server.Config) { c.MaxOutstanding, c.MaxOutstandingPerConn = 1000, 8 })
	c := rawSession(t, srv.Addr().String())
	mustCreate(t, c, "/n", []byte("v"), wire.FlagPersistent)
	ops := make([]wire.MultiOp, 6000) // a frame of about 100 KiB: it counts as two
	for i := range ops {
		ops[i] = wire.MultiOp{Op: wire.OpGetData, Req: &wire.PathWatchRequest{Path: "/missing"}}
	}
	const n = 50
	flood := requests(n, func(i int) (wire.Op, wire.Record) {
		if i%5 == 0 {
			return wire.OpSetData, &wire.SetDataRequest{Path: "/n", Data: []byte("w"), Version: -1}
		}
		return wire.OpMultiRead, &wire.MultiRequest{Ops: ops}
	})
	go c.WriteRaw(flood)
	for i := range n {
		if _, err := c.ReadFrame(30 * time.Second); err != nil {
			t.Fatalf("reply %d: %v", i+1, err)
		}
	}
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool { return srv.Stats().Outstanding == 0 },
		"%d outstanding once every request was answered", srv.Stats().Outstanding)
}
