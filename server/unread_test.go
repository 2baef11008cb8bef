package server_test

import (
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/test/conformance"
)

// goMemory returns what the Go runtime holds from the OS and has not given back: what
// the soft memory limit bounds, the process's RSS less its binary.
func goMemory(sample []metrics.Sample) uint64 {
	metrics.Read(sample)
	return sample[0].Value.Uint64() - sample[1].Value.Uint64()
}

func goMemorySample() []metrics.Sample {
	return []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
}

// watchPeaks samples, every millisecond and without forcing collections, goMemory and
// the bytes srv has queued for clients, until stop is called, which returns their peaks.
func watchPeaks(t *testing.T, srv *server.Server) (stop func() (memory uint64, queued int64)) {
	t.Helper()
	var memory atomic.Uint64
	var queued atomic.Int64
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		sample := goMemorySample()
		for {
			memory.Store(max(memory.Load(), goMemory(sample)))
			queued.Store(max(queued.Load(), srv.Stats().Limits.QueuedBytes))
			select {
			case <-quit:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var once sync.Once
	stop = func() (uint64, int64) {
		once.Do(func() { close(quit); <-done })
		return memory.Load(), queued.Load()
	}
	t.Cleanup(func() { stop() })
	return stop
}

// TestNeverReadingClientsMemory replays issue 31's flood: clients that pipeline reads
// and set watches on a large node and never read a reply, reconnecting (a new session)
// once the server has dropped them, round after round, while a writer fires their
// watches. The memory the process holds (the Go runtime's, what RSS is less the binary)
// must stay under the bound docs/limits.md states: the soft memory limit the server
// sets from its state and max_queued_bytes (gctune.go), and what a collection lets be
// allocated while it runs. Before, a dropped connection's replies stayed counted out
// of the limit until its goroutines closed it, others filled the limit meanwhile, and
// the memory limit followed twice the live heap, queue included: 350 to 409 MiB of RSS
// against 153 documented.
func TestNeverReadingClientsMemory(t *testing.T) {
	t.Setenv("GOGC", "") // gcTuneLoop tunes unless the operator set these
	t.Setenv("GOMEMLIMIT", "")
	const (
		maxQueued = 64 << 20
		nodeSize  = 256 << 10
		clients   = 24
		reads     = 48 // 12 MiB unread a client: under its own 64 MiB, 4.5 times the server's limit together
		rounds    = 3
	)
	srv := startBounded(t, func(c *server.Config) { c.MaxQueuedBytes = maxQueued })
	addr := srv.Addr().String()
	writer := rawSessionFor(t, addr, 40000) // a round may take longer than rawSession's 10 s under the race detector
	mustCreate(t, writer, "/big", make([]byte, nodeSize), wire.FlagPersistent)
	state := liveHeap()
	limit := uint64(server.MemoryLimitFor(state, maxQueued))
	flood := requests(reads, func(i int) (wire.Op, wire.Record) {
		if i%4 == 3 {
			return wire.OpExists, &wire.PathWatchRequest{Path: "/big", Watch: true}
		}
		return wire.OpGetData, &wire.PathWatchRequest{Path: "/big", Watch: true}
	})

	peaks := watchPeaks(t, srv)
	for round := range rounds {
		dropped := srv.Stats().Limits.ConnectionsDropped
		conns := make([]*conformance.Conn, clients)
		for i := range conns {
			conns[i] = rawSession(t, addr)
			go conns[i].WriteRaw(flood) // blocks once the server stops reading a dropped connection
		}
		testutil.Eventually(t, 60*time.Second, 5*time.Millisecond, func() bool {
			return srv.Stats().Limits.ConnectionsDropped-dropped >= clients/2
		}, "round %d: %d connections dropped, want at least %d", round, srv.Stats().Limits.ConnectionsDropped-dropped, clients/2)
		call(t, writer, wire.OpSetData, &wire.SetDataRequest{Path: "/big", Data: make([]byte, nodeSize), Version: -1})
		for _, c := range conns {
			c.Close()
		}
	}
	got, queued := peaks()
	st := srv.Stats().Limits
	t.Logf("%d rounds of %d never-reading clients asking %d MiB each, %d MiB allowed queued: %d connections dropped; "+
		"%.1f MiB queued at the peak; state %.1f MiB, memory limit %.1f MiB, Go's memory peaked at %.1f MiB",
		rounds, clients, reads*nodeSize>>20, maxQueued>>20, st.ConnectionsDropped, mib(queued),
		mib(int64(state)), mib(int64(limit)), mib(int64(got)))
	// The queue: the limit, and a reply being built by each client's read loop.
	if bound := int64(maxQueued + clients*nodeSize); queued > bound {
		t.Errorf("%.1f MiB queued at the peak, past the bound of %.1f MiB", mib(queued), mib(bound))
	}
	if bound := limit + collectionAllowance; got > bound {
		t.Errorf("Go's memory peaked at %.1f MiB, over the bound of %.1f MiB (the memory limit %.1f and %.1f allocated while a collection runs)",
			mib(int64(got)), mib(int64(bound)), mib(int64(limit)), mib(collectionAllowance))
	}
}

// rawSessionFor opens a raw connection with a new session of timeout ms.
func rawSessionFor(t *testing.T, addr string, timeout int32) *conformance.Conn {
	t.Helper()
	c, err := conformance.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SendConnect(&wire.ConnectRequest{Timeout: timeout, Password: make([]byte, 16)}); err != nil {
		t.Fatal(err)
	}
	if resp, _, err := c.ReadConnectResponse(5 * time.Second); err != nil || resp.SessionID == 0 {
		t.Fatalf("connect: %+v %v", resp, err)
	}
	return c
}

// collectionAllowance is how far past the soft memory limit the heap may grow while a
// collection runs under a flood: what is allocated between its start and its end.
const collectionAllowance = 32 << 20
