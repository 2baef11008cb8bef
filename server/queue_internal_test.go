package server

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/paddock/paddock/server/wire"
)

// queueFixture is a server that is never started, with n connections over pipes whose
// far ends read nothing and whose write loops do not run: every frame queued stays
// queued, as for clients that never read.
func queueFixture(t *testing.T, maxQueued int64, n int) (*Server, []*conn) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.MaxQueuedBytes = maxQueued
	s, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*conn, n)
	for i := range conns {
		conns[i] = fixtureConn(t, s)
	}
	return s, conns
}

// held returns the bytes c's queue holds and the memory its buffers take.
func held(c *conn) (queued, bytes, capacity int) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	for _, b := range c.full {
		bytes, capacity = bytes+len(b), capacity+cap(b)
	}
	return int(c.queued.Load()), bytes + c.out.Len(), capacity + cap(c.out.Bytes())
}

// replySizes are the sizes of node data the property test reads: the boundaries of
// outChunk, where a frame gets a buffer of its own, and of a reply at jute.maxbuffer.
var replySizes = []int{0, 1, 100, outChunk - 1 - 88, outChunk - 88, outChunk, 512 << 10, wire.DefaultMaxBuffer}

// TestQueueBound: whatever replies and notifications are queued for clients that never
// read, in whatever order (seeded), the server's count is the sum of its connections'
// and stays within MaxQueuedBytes — a large reply counted before it is built, a small
// frame past it by its own size at most — the connections dropped were those holding
// the most, and a dropped connection holds nothing: its bytes left the count and memory
// at once. A large reply's buffer is its size. (Before issue 31 a dropped connection
// kept its queue, outside the count, until its own goroutines ran, and meanwhile the
// others filled the limit again.)
func TestQueueBound(t *testing.T) {
	datas := make([][]byte, len(replySizes))
	for i, n := range replySizes {
		datas[i] = make([]byte, n)
	}
	for seed := range uint64(50) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 31))
			maxQueued := int64(wire.DefaultMaxBuffer + rng.IntN(8<<20))
			s, conns := queueFixture(t, maxQueued, 2+rng.IntN(8))
			for step := range 40 {
				before := make([]int64, len(conns))
				for i, c := range conns {
					before[i] = c.queued.Load()
				}
				who := rng.IntN(len(conns))
				small := int64(0)
				if rng.IntN(4) == 0 {
					path := "/" + string(make([]byte, rng.IntN(64)))
					conns[who].notify(wire.EventNodeDataChanged, path, 1)
					small = frameLenBytes + replyHeaderLen + 12 + int64(len(path))
				} else {
					data := datas[rng.IntN(len(datas))]
					conns[who].reply(int32(step), 1, wire.OK, &wire.GetDataResponse{Data: data})
					if size := frameLenBytes + replyHeaderLen + bodyLen(&wire.GetDataResponse{Data: data}); size < outChunk {
						small = int64(size)
					}
				}
				checkQueue(t, s, conns, before, who, maxQueued+small)
			}
		})
	}
}

// checkQueue checks the invariants of TestQueueBound after a frame was queued for
// conns[who].
func checkQueue(t *testing.T, s *Server, conns []*conn, before []int64, who int, bound int64) {
	t.Helper()
	var sum int64
	for i, c := range conns {
		queued, bytes, capacity := held(c)
		if c.closed {
			if queued != 0 || bytes != 0 || capacity != 0 {
				t.Fatalf("connection %d dropped and still holding %d queued, %d bytes in buffers of %d", i, queued, bytes, capacity)
			}
			continue
		}
		if queued != bytes {
			t.Fatalf("connection %d: %d bytes counted, %d held", i, queued, bytes)
		}
		if capacity > bytes+bytes/4+2*outChunk {
			t.Fatalf("connection %d: %d bytes held in buffers of %d", i, bytes, capacity)
		}
		sum += int64(queued)
	}
	if got := s.queued.Load(); got != sum {
		t.Fatalf("the server counts %d queued, its connections %d", got, sum)
	}
	if sum > bound {
		t.Fatalf("%d bytes queued, past the bound of %d", sum, bound)
	}
	for d, dc := range conns {
		if !dc.closed || d == who || before[d] == 0 {
			continue
		}
		for k, kc := range conns {
			if !kc.closed && k != who && before[k] > before[d] {
				t.Fatalf("connection %d dropped holding %d while %d, holding %d, was kept", d, before[d], k, before[k])
			}
		}
	}
}

// TestQueueBoundConcurrent: replies built at the same time on many connections each
// count before they are built, so the queue never passes MaxQueuedBytes by more than
// the replies being built at that moment, and once they are all queued it is within
// it; the connections dropped hold nothing.
func TestQueueBoundConcurrent(t *testing.T) {
	const (
		maxQueued = 8 << 20
		writers   = 16
		replies   = 40
	)
	s, conns := queueFixture(t, maxQueued, writers)
	data := make([]byte, 512<<10)
	frame := int64(frameLenBytes + replyHeaderLen + bodyLen(&wire.GetDataResponse{Data: data}))
	var peak int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			for i := range replies {
				c.reply(int32(i), 1, wire.OK, &wire.GetDataResponse{Data: data})
				mu.Lock()
				peak = max(peak, s.queued.Load())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if peak > maxQueued+writers*frame {
		t.Errorf("the queue reached %d bytes, past %d and a reply being built by each writer", peak, int64(maxQueued))
	}
	if got := s.queued.Load(); got > maxQueued {
		t.Errorf("%d bytes queued once every reply was, past the limit of %d", got, int64(maxQueued))
	}
	checkQueue(t, s, conns, make([]int64, writers), -1, maxQueued)
}
