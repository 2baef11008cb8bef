package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// A link is one accepted connection and its connection to the target. Its goroutine
// (run) dials the target and then moves bytes with a pipe per direction, each a
// readLoop and a writeLoop; the link ends when both writeLoops have, or when close is
// called.
type link struct {
	p      *Proxy
	client *net.TCPConn
	done   chan struct{} // closed by close: every goroutine of the link returns
	lost   bool          // guarded by p.mu: bytes were discarded, so Drop(false) resets the link

	mu     sync.Mutex
	server *net.TCPConn // guarded by mu; nil until dialled
	pipes  []*pipe      // guarded by mu; client to server and back, once dialled
	closed bool         // guarded by mu
}

func (l *link) run() {
	server, err := l.dial()
	if err != nil {
		l.p.remove(l)
		l.close(true)
		return
	}
	pipes := l.attach(server)
	if pipes == nil {
		return
	}
	var writers sync.WaitGroup
	for _, pp := range pipes {
		writers.Add(1)
		l.p.goTracked(pp.readLoop)
		l.p.goTracked(func() {
			defer writers.Done()
			pp.writeLoop()
		})
	}
	writers.Wait()
	l.p.remove(l)
	l.close(false)
}

func (l *link) dial() (*net.TCPConn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(l.p.ctx, "tcp", l.p.target)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// attach records server as l's connection to the target and returns the pipes to
// run, or closes server and returns nil if l was closed while it was being dialled.
func (l *link) attach(server *net.TCPConn) []*pipe {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		closeConn(server, true)
		return nil
	}
	l.server = server
	l.pipes = []*pipe{newPipe(l, l.client, server), newPipe(l, server, l.client)}
	return l.pipes
}

// queued returns the bytes l holds for Delay, for tests.
func (l *link) queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, pp := range l.pipes {
		pp.mu.Lock()
		for _, c := range pp.queue {
			n += len(c.data)
		}
		pp.mu.Unlock()
	}
	return n
}

// close closes both connections, resetting them if abort is set, and tells every
// goroutine of l to return. It is idempotent.
func (l *link) close(abort bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	close(l.done)
	closeConn(l.client, abort)
	if l.server != nil {
		closeConn(l.server, abort)
	}
}

// closeConn closes c; with abort, with a reset rather than an orderly end, so that the
// other side fails at once whatever it was doing, and bytes not yet sent are thrown away.
func closeConn(c *net.TCPConn, abort bool) {
	if abort {
		_ = c.SetLinger(0)
	}
	_ = c.Close()
}

// A chunk is what one read returned, or the end of the stream.
type chunk struct {
	data   []byte
	readAt time.Time
	end    bool  // the source has ended; err says how, and data is empty
	err    error // with end: io.EOF for an orderly end
}

func (c chunk) cost() int { return len(c.data) + chunkOverhead }

// A pipe moves one direction of a link, src to dst, through a queue: readLoop reads
// and queues, writeLoop takes chunks off in order, holds each as Delay says and writes
// or discards it. The queue is what keeps a delayed chunk from stopping reads.
type pipe struct {
	l        *link
	src, dst *net.TCPConn
	ready    chan struct{} // capacity 1: a chunk was queued
	space    chan struct{} // capacity 1: a chunk was taken off the queue

	mu     sync.Mutex
	queue  []chunk // guarded by mu; oldest first; the head stays queued while written
	queued int     // guarded by mu; the cost of queue, at most queueLimit but for one chunk
}

func newPipe(l *link, src, dst *net.TCPConn) *pipe {
	return &pipe{
		l:     l,
		src:   src,
		dst:   dst,
		ready: make(chan struct{}, 1),
		space: make(chan struct{}, 1),
	}
}

func (pp *pipe) readLoop() {
	buf := make([]byte, readSize)
	for {
		n, err := pp.src.Read(buf)
		now := time.Now()
		if n > 0 && !pp.l.p.dropping(pp.l, n) {
			if !pp.push(chunk{data: bytes.Clone(buf[:n]), readAt: now}) {
				return
			}
		}
		if err != nil {
			pp.push(chunk{end: true, err: err, readAt: now})
			return
		}
	}
}

// push queues c, first waiting for room if the queue is full. It reports false if
// the link was closed meanwhile.
func (pp *pipe) push(c chunk) bool {
	pp.mu.Lock()
	for pp.queued > 0 && pp.queued+c.cost() > queueLimit {
		pp.mu.Unlock()
		select {
		case <-pp.space:
		case <-pp.l.done:
			return false
		}
		pp.mu.Lock()
	}
	pp.queue = append(pp.queue, c)
	pp.queued += c.cost()
	pp.mu.Unlock()
	signal(pp.ready)
	return true
}

func (pp *pipe) writeLoop() {
	for {
		c, ok := pp.head()
		if !ok {
			return
		}
		forward, ok := pp.hold(c)
		if !ok {
			return
		}
		switch {
		case c.end:
			// An end discarded by Drop is swallowed like the bytes: the other side
			// hears nothing until Drop(false) resets the link.
			if forward {
				pp.shut(c.err)
			}
			return
		case forward:
			if !pp.write(c.data) {
				return
			}
		}
		pp.pop()
	}
}

// head returns the oldest queued chunk, waiting for one; it reports false if the link
// was closed first.
func (pp *pipe) head() (chunk, bool) {
	for {
		pp.mu.Lock()
		if len(pp.queue) > 0 {
			c := pp.queue[0]
			pp.mu.Unlock()
			return c, true
		}
		pp.mu.Unlock()
		select {
		case <-pp.ready:
		case <-pp.l.done:
			return chunk{}, false
		}
	}
}

// hold waits until c is due under the current delay and reports whether to write it
// (forward) or discard it (Drop is on). ok is false if the link was closed first.
func (pp *pipe) hold(c chunk) (forward, ok bool) {
	for {
		drop, wait, changed := pp.l.p.verdict(pp.l, c)
		if drop {
			return false, true
		}
		if wait <= 0 {
			return true, true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-changed:
		case <-pp.l.done:
			t.Stop()
			return false, false
		}
		t.Stop()
	}
}

// write writes data to dst; on failure it resets the link and reports false.
func (pp *pipe) write(data []byte) bool {
	n, err := pp.dst.Write(data)
	pp.l.p.forwarded.Add(int64(n))
	if err != nil {
		pp.l.close(true)
		return false
	}
	return true
}

// shut passes on the end of src: an orderly end becomes a half-close of dst, so the
// other direction goes on; anything else (a reset) resets the whole link.
func (pp *pipe) shut(err error) {
	if !errors.Is(err, io.EOF) {
		pp.l.close(true)
		return
	}
	_ = pp.dst.CloseWrite()
}

// pop takes the head chunk off the queue and makes room for the reader.
func (pp *pipe) pop() {
	pp.mu.Lock()
	pp.queued -= pp.queue[0].cost()
	pp.queue[0] = chunk{}
	pp.queue = pp.queue[1:]
	pp.mu.Unlock()
	signal(pp.space)
}

// signal wakes the goroutine waiting on ch, or leaves the wake-up for its next wait.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
