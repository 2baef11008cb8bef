// Package faultproxy is a TCP proxy for tests that puts network faults between two
// endpoints on loopback: delay, a black hole and a partition.
//
// A test of a replicated ensemble puts one Proxy on each directed link A→B — member A
// is configured to dial the proxy's address instead of B's — and then breaks and mends
// links one at a time:
//
//	p, err := faultproxy.New(addrB) // A dials p.Addr() to reach B
//	p.Delay(50 * time.Millisecond)   // a slow link
//	p.Drop(true)                     // a black hole: silence, no reset
//	p.Partition()                    // connections reset, new ones refused
//	p.Heal()                         // plain forwarding again
//
// The proxy sees connections, not messages: a fault on the proxy for A→B affects both
// directions of every connection A opened to B (A's requests and B's replies), and none
// of the connections B opened to A, which go through the proxy for B→A.
//
// Bytes are forwarded in the chunks single reads return (at most 32 KiB), in order,
// with nothing added, removed or reframed except what Drop discards. An end of stream
// (a half-close) is forwarded after the bytes before it; a reset or error on one side
// closes the whole connection. A connection whose target cannot be dialled is closed
// at once.
//
// Every method is safe for concurrent use, and a fault may be changed at any time: it
// applies at once to the connections already open and to new ones.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// readSize is the largest chunk one read takes from a connection.
	readSize = 32 << 10
	// queueLimit bounds the bytes one direction of a connection holds for Delay; past
	// it the proxy stops reading that direction, so TCP flow control slows the sender
	// as a slow link would, instead of the proxy buffering without limit.
	queueLimit = 16 << 20
	// chunkOverhead is charged against queueLimit for every chunk besides its bytes, so
	// that a stream of tiny writes cannot hold unbounded memory either.
	chunkOverhead = 64
	// dialTimeout bounds the dial to the target for one accepted connection.
	dialTimeout = 5 * time.Second
)

// Stats are cumulative counts since New, for assertions; they never decrease.
type Stats struct {
	// Conns counts connections accepted, including those closed at once because of a
	// Partition or because the target could not be dialled.
	Conns int64
	// BytesForwarded counts bytes written onward, both directions together.
	BytesForwarded int64
	// BytesDropped counts bytes discarded by Drop, both directions together.
	BytesDropped int64
}

// Proxy forwards the TCP connections it accepts to one target and injects the faults
// it is told to. It is safe for concurrent use. The zero value is not usable: call New.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // cancelled by Close; bounds the dials to target
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the proxy started; Close waits for it

	closeOnce sync.Once
	closeErr  error // set in closeOnce

	conns, forwarded, dropped atomic.Int64

	mu          sync.Mutex
	delay       time.Duration      // guarded by mu
	drop        bool               // guarded by mu
	partitioned bool               // guarded by mu
	closed      bool               // guarded by mu; no goroutine is started once set
	changed     chan struct{}      // guarded by mu; closed and replaced when delay or drop change, waking writers that wait out a delay
	links       map[*link]struct{} // guarded by mu; connections open or being dialled
}

// New listens on 127.0.0.1:0 and forwards every accepted connection to target (a
// host:port), dialling target anew for each. It starts with no fault. The caller must
// Close the Proxy.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:  target,
		ln:      ln,
		ctx:     ctx,
		cancel:  cancel,
		changed: make(chan struct{}),
		links:   make(map[*link]struct{}),
	}
	p.goTracked(p.acceptLoop)
	return p, nil
}

// Addr returns the address to dial instead of target, as host:port on 127.0.0.1. It
// stays the same for the life of the Proxy, so a member configured with it keeps it
// across faults.
func (p *Proxy) Addr() string {
	return p.ln.Addr().String()
}

// Close stops listening, resets every connection and returns once every goroutine the
// Proxy started has ended. It is idempotent: later calls wait for the first and return
// its result. Dialling Addr after Close fails (unless another listener took the port).
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		links := p.takeLinksLocked(func(*link) bool { return true })
		p.mu.Unlock()
		p.cancel()
		p.closeErr = p.ln.Close()
		for _, l := range links {
			l.close(true)
		}
		p.wg.Wait()
	})
	return p.closeErr
}

// Delay holds every chunk, in both directions, until d after the proxy read it; d <= 0
// means no delay. The delay in force when a chunk falls due is the one that counts, so
// raising the delay holds chunks already waiting longer and lowering it (or Heal)
// releases them sooner. Order within each direction of a connection is kept; unrelated
// connections and the two directions of one do not wait for each other. Reading goes on
// while chunks wait, so throughput is not limited to a chunk per delay, up to 16 MiB
// held per direction; beyond that the proxy stops reading until some is written.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = max(d, 0)
	p.changedLocked()
}

// Drop turns the black hole on or off. While it is on, every byte read, in both
// directions, is discarded (chunks still held by Delay too), connections stay open and
// the other side sees silence, not an end or a reset. Writes into a dropping connection
// keep succeeding, so a sender notices only through missing replies (read deadlines,
// heartbeats). New connections are accepted, dialled to target and dropped likewise.
//
// Turning it off resumes forwarding for bytes read after that, and resets every
// connection that discarded anything — a byte or an end of stream — while Drop was on:
// bytes lost mid-stream would desynchronise a length-prefixed framing, so such a stream
// is corrupt and the endpoints must redial. Connections that discarded nothing, idle
// ones for instance, carry on untouched.
func (p *Proxy) Drop(on bool) {
	p.mu.Lock()
	p.drop = on
	var lost []*link
	if !on {
		lost = p.takeLinksLocked(func(l *link) bool { return l.lost })
	}
	p.changedLocked()
	p.mu.Unlock()
	for _, l := range lost {
		l.close(true)
	}
}

// Partition resets every current connection, so both ends see an error or an end of
// stream at once, and from then on closes every new connection as soon as it is
// accepted (the dial succeeds; the first read or write fails), without dialling target,
// until Heal.
func (p *Proxy) Partition() {
	p.mu.Lock()
	p.partitioned = true
	links := p.takeLinksLocked(func(*link) bool { return true })
	p.mu.Unlock()
	for _, l := range links {
		l.close(true)
	}
}

// Heal ends Partition, Drop and Delay: plain forwarding again. As with Drop(false), the
// connections that discarded bytes are reset; chunks held by Delay are released at once,
// in order.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.partitioned = false
	p.drop = false
	p.delay = 0
	lost := p.takeLinksLocked(func(l *link) bool { return l.lost })
	p.changedLocked()
	p.mu.Unlock()
	for _, l := range lost {
		l.close(true)
	}
}

// Stats returns the counts so far. Each count is read atomically, but not all three at
// one instant; a test polls them until they reach what it expects.
func (p *Proxy) Stats() Stats {
	return Stats{
		Conns:          p.conns.Load(),
		BytesForwarded: p.forwarded.Load(),
		BytesDropped:   p.dropped.Load(),
	}
}

// goTracked runs f in a goroutine that Close waits for. The caller must hold p.mu with
// p.closed false, or run in a goroutine started by goTracked, so that the WaitGroup is
// never added to while Close may be waiting on a zero count.
func (p *Proxy) goTracked(f func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
}

func (p *Proxy) acceptLoop() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or the like: back off rather than spin.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.conns.Add(1)
		p.admit(c.(*net.TCPConn))
	}
}

// admit starts forwarding c, or resets it at once if the proxy is partitioned or closed.
func (p *Proxy) admit(c *net.TCPConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.partitioned {
		closeConn(c, true)
		return
	}
	l := &link{p: p, client: c, done: make(chan struct{})}
	p.links[l] = struct{}{}
	p.goTracked(l.run)
}

// remove forgets l, which has ended on its own.
func (p *Proxy) remove(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}

// takeLinksLocked removes from p.links and returns the links for which match is true,
// for the caller to close once it has released p.mu.
func (p *Proxy) takeLinksLocked(match func(*link) bool) []*link {
	var taken []*link
	for l := range p.links {
		if match(l) {
			delete(p.links, l)
			taken = append(taken, l)
		}
	}
	return taken
}

// changedLocked wakes every writer waiting out a delay, to look at the faults again.
func (p *Proxy) changedLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// dropping reports whether n bytes l just read are to be discarded, and if so counts
// them and marks l as having lost bytes, in one step with Drop's check of that mark.
func (p *Proxy) dropping(l *link, n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.drop {
		return false
	}
	l.lost = true
	p.dropped.Add(int64(n))
	return true
}

// verdict says what to do with chunk c of l now: discard it (drop, counted and marked
// as dropping does), write it (wait <= 0), or wait until wait has passed or changed is
// closed and ask again.
func (p *Proxy) verdict(l *link, c chunk) (drop bool, wait time.Duration, changed <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drop {
		l.lost = true
		p.dropped.Add(int64(len(c.data)))
		return true, 0, nil
	}
	return false, time.Until(c.readAt.Add(p.delay)), p.changed
}

// queued returns the bytes held for Delay on every connection, for tests.
func (p *Proxy) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for l := range p.links {
		n += l.queued()
	}
	return n
}
