package server_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/test/conformance"
)

// TestFollowerSyncFloodIsBounded: a client pipelines tens of thousands of syncs to a
// follower, and reads nothing until it has sent them all. A sync on a member waits on a
// goroutine of its own for a Raft ReadIndex round; the read loop's throttle keeps at most
// MaxOutstandingPerConn of them at once (unbounded, 196,656 such syncs took a follower
// from 27 to 567 MiB), and every sync is answered, in order, unless the connection is
// closed (a leader change closes every connection).
func TestFollowerSyncFloodIsBounded(t *testing.T) {
	const syncs, perConn = 30000, 100
	e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) { c.MaxOutstandingPerConn = perConn })
	follower := (e.Leader() + 1) % 3
	c := rawSession(t, e.Addrs()[follower])

	base := runtime.NumGoroutine()
	heap := watchHeap(t)
	var most atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			most.Store(max(most.Load(), int64(runtime.NumGoroutine())))
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	})
	sent := make(chan error, 1)
	go func() { sent <- sendSyncs(c, syncs) }()
	answered := readSyncs(t, c, syncs, sent)
	close(stop)
	sampler.Wait()
	grew := heap.growth()
	st := e.Server(follower).Stats()
	t.Logf("%d syncs pipelined to a follower: %d answered; goroutines at most %d above the %d before; the live heap grew by %.1f MiB; %d connection throttle waits",
		syncs, answered, most.Load()-int64(base), base, grew, st.Limits.ConnThrottleWaits)
	if extra := most.Load() - int64(base); extra > perConn+100 {
		t.Errorf("%d goroutines more than before the flood, want at most %d for the syncs and 100 for the rest", extra, perConn)
	}
	if grew > 32 {
		t.Errorf("the live heap grew by %.1f MiB", grew)
	}
	if answered == syncs && st.Limits.ConnThrottleWaits == 0 {
		t.Error("the connection was never throttled")
	}
}

// sendSyncs writes n sync requests, a thousand per write, each write with its own
// deadline: the server reads them only as fast as it answers them.
func sendSyncs(c *conformance.Conn, n int) error {
	const batch = 1000
	for first := 0; first < n; first += batch {
		frames := requestsFrom(int32(first+1), min(batch, n-first), func(int) (wire.Op, wire.Record) {
			return wire.OpSync, &wire.PathRecord{Path: "/"}
		})
		if err := c.WriteRaw(frames); err != nil {
			return err
		}
	}
	return nil
}

// readSyncs waits until every sync is sent, then reads their answers, in order, and
// returns how many came before the server closed the connection, if it did.
func readSyncs(t *testing.T, c *conformance.Conn, n int, sent <-chan error) int {
	t.Helper()
	if err := <-sent; err != nil && !conformance.IsClosed(err) {
		t.Fatalf("sending the syncs: %v", err)
	}
	for i := range n {
		f, err := c.ReadFrame(20 * time.Second)
		if conformance.IsClosed(err) {
			t.Logf("the connection closed after %d answers", i)
			return i
		}
		if err != nil || f.Header.Xid != int32(i+1) || f.Header.Err != wire.OK {
			t.Fatalf("sync %d: %+v %v", i+1, f, err)
		}
	}
	return n
}
