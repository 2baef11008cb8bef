package coordinator

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// queue is an unbounded FIFO whose pushes never block: events from the client's
// goroutines go through it to goroutines that may be slow.
type queue[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	signal chan struct{} // has a token while items is not empty or the queue is closed
}

func newQueue[T any]() *queue[T] { return &queue[T]{signal: make(chan struct{}, 1)} }

func (q *queue[T]) push(v T) {
	q.mu.Lock()
	if !q.closed {
		q.items = append(q.items, v)
	}
	q.mu.Unlock()
	q.notify()
}

func (q *queue[T]) notify() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// ready has a value when drain may return something, or the queue was closed.
func (q *queue[T]) ready() <-chan struct{} { return q.signal }

// drain takes everything queued; ok is false once the queue is closed and empty.
func (q *queue[T]) drain() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

func (q *queue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.notify()
}

func (q *queue[T]) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed && len(q.items) == 0
}

// subscriber forwards a Session's events to its channel through a queue, so a slow
// reader never blocks the Session. close delivers what is queued, then closes the
// channel; cancel stops at once, even while the reader has stopped reading.
type subscriber struct {
	q      *queue[Event]
	out    chan Event
	cancel func()
	done   <-chan struct{}
}

func newSubscriber() *subscriber {
	done := make(chan struct{})
	var once sync.Once
	sub := &subscriber{q: newQueue[Event](), out: make(chan Event), done: done,
		cancel: func() { once.Do(func() { close(done) }) }}
	go sub.forward()
	return sub
}

func (sub *subscriber) push(ev Event) { sub.q.push(ev) }
func (sub *subscriber) close()        { sub.q.close() }

func (sub *subscriber) forward() {
	defer close(sub.out)
	for {
		select {
		case <-sub.done:
			return
		case <-sub.q.ready():
		}
		for _, ev := range sub.q.drain() {
			select {
			case sub.out <- ev:
			case <-sub.done:
				return
			}
		}
		if sub.q.isClosed() {
			return
		}
	}
}

// connWatch observes the client's connections from the dialer, for what the client
// library does not expose: the session timeout the server granted, read off the connect
// response (the first frame every new connection receives: length, protocol version,
// timeout in ms, session id, password); and when the client sends SetWatches, which it
// does on reconnecting to a live session to re-register its watches.
type connWatch struct {
	ms atomic.Int64
	// lastDial is the error of the last dial, nil once one succeeds.
	lastDial atomic.Pointer[error]
	// setWatches has a token once a SetWatches request has been written (capacity 1).
	setWatches chan struct{}
}

func newConnWatch() *connWatch { return &connWatch{setWatches: make(chan struct{}, 1)} }

// lastDialError returns the last dial's error, nil if it succeeded or none was made.
func (w *connWatch) lastDialError() error {
	if p := w.lastDial.Load(); p != nil {
		return *p
	}
	return nil
}

func (w *connWatch) timeout() time.Duration { return time.Duration(w.ms.Load()) * time.Millisecond }

func (w *connWatch) wrap(d zk.Dialer) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := d(network, address, timeout)
		w.lastDial.Store(&err)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, w: w}, nil
	}
}

// opSetWatches is the opcode of SetWatches (jute: 101).
const opSetWatches = 101

// watchedConn records the timeout field of the first 12 bytes read, and notes each
// SetWatches frame written (the client writes one request frame per Write: length,
// xid, opcode, body).
type watchedConn struct {
	net.Conn
	w    *connWatch
	head [12]byte
	got  int
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.got < len(c.head) && n > 0 {
		k := copy(c.head[c.got:], p[:n])
		c.got += k
		if c.got == len(c.head) {
			if ms := int32(binary.BigEndian.Uint32(c.head[8:12])); ms > 0 {
				c.w.ms.Store(int64(ms))
			}
		}
	}
	return n, err
}

func (c *watchedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n >= 12 && int32(binary.BigEndian.Uint32(p[8:12])) == opSetWatches {
		select {
		case c.w.setWatches <- struct{}{}:
		default:
		}
	}
	return n, err
}

func defaultDialer(network, address string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout(network, address, timeout)
}

// zkLogger sends the client library's log lines to slog at debug level.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug("zk: " + fmt.Sprintf(format, args...))
}
