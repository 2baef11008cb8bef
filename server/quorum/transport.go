package quorum

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Transport limits.
const (
	maxFrame     = 64 << 20 // largest message frame accepted from a peer
	minBackoff   = 20 * time.Millisecond
	maxBackoff   = time.Second
	writeTimeout = 5 * time.Second
)

// Frame kinds.
const (
	frameRaft byte = 0
	frameNote byte = 1
)

// Transport carries raftpb.Messages between members over TCP. Each member listens on
// its peer address; to each other member it keeps one outbound connection, fed by a
// bounded queue. A frame is a uint32 big-endian length, a kind byte and the body:
// frameRaft, a marshalled raftpb.Message; frameNote, the sender's id (uint64
// big-endian) and a note's bytes. Messages are fire-and-forget: when a peer's queue
// is full or its connection fails the message is dropped and the peer reported
// unreachable, and Raft retransmits. Send is safe for concurrent use; Close is
// idempotent.
type Transport struct {
	ln          net.Listener
	recv        func(*raftpb.Message) // called from a connection's read loop
	onNote      func(from uint64, data []byte)
	self        uint64          // this member's id, the sender of its notes
	unreachable func(id uint64) // called when a message to id was lost
	logger      *slog.Logger
	queueLen    int

	peersMu sync.RWMutex
	peers   map[uint64]*peer // guarded by peersMu; changed by SetPeers

	stop chan struct{}  // closed by Close
	wg   sync.WaitGroup // every goroutine of the transport

	mu      sync.Mutex            // guards inbound and closed
	inbound map[net.Conn]struct{} // accepted connections, closed by Close
	closed  bool
}

// peer is the outbound side towards one member.
type peer struct {
	id    uint64
	addr  string
	queue chan []byte   // marshalled messages waiting for writeLoop
	gone  chan struct{} // closed when SetPeers removes the peer

	mu   sync.Mutex // guards conn
	conn net.Conn   // the current connection, closed by Close to unblock writeLoop
}

// NewTransport starts serving ln and connecting to peers (id → address; the local
// member, self, must not be among them). recv gets every Raft message received,
// onNote (if not nil) every note; unreachable gets the id of a peer a message could
// not be sent to. None of them may block for long. queueLen bounds each peer's queue.
func NewTransport(ln net.Listener, self uint64, peers map[uint64]string, queueLen int,
	recv func(*raftpb.Message), onNote func(from uint64, data []byte), unreachable func(uint64),
	logger *slog.Logger) *Transport {
	t := &Transport{
		ln: ln, self: self, recv: recv, onNote: onNote, unreachable: unreachable, logger: logger,
		peers: make(map[uint64]*peer), stop: make(chan struct{}),
		inbound: make(map[net.Conn]struct{}),
	}
	t.queueLen = queueLen
	t.SetPeers(peers)
	t.goroutine(t.acceptLoop)
	return t
}

// SetPeers makes peers (id → address, without this member) the members messages go
// to: new ones get a connection, removed ones lose theirs, and a changed address
// is dialled from then on.
func (t *Transport) SetPeers(peers map[uint64]string) {
	t.mu.Lock() // held throughout: Close must not wait for goroutines while one is added
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.peersMu.Lock()
	defer t.peersMu.Unlock()
	for id, p := range t.peers {
		if addr, ok := peers[id]; !ok || addr != p.addr {
			close(p.gone)
			p.closeConn()
			delete(t.peers, id)
		}
	}
	for id, addr := range peers {
		if _, ok := t.peers[id]; ok || id == t.self {
			continue
		}
		p := &peer{id: id, addr: addr, queue: make(chan []byte, t.queueLen), gone: make(chan struct{})}
		t.peers[id] = p
		t.goroutine(func() { t.writeLoop(p) })
	}
}

// peer returns the peer with id, if there is one.
func (t *Transport) peer(id uint64) (*peer, bool) {
	t.peersMu.RLock()
	defer t.peersMu.RUnlock()
	p, ok := t.peers[id]
	return p, ok
}

func (p *peer) closeConn() {
	p.mu.Lock()
	if p.conn != nil {
		p.conn.Close()
	}
	p.mu.Unlock()
}

func (t *Transport) goroutine(fn func()) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		fn()
	}()
}

// Addr is the address the transport listens on.
func (t *Transport) Addr() net.Addr { return t.ln.Addr() }

// Send queues msgs for their peers without blocking. A message to an unknown peer or
// to a full queue is dropped.
func (t *Transport) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		p, ok := t.peer(m.GetTo())
		if !ok {
			t.logger.Debug("message to unknown peer dropped", "to", m.GetTo(), "type", m.GetType().String())
			continue
		}
		b, err := proto.MarshalOptions{}.MarshalAppend([]byte{frameRaft}, m)
		if err != nil {
			t.logger.Error("marshal message", "to", m.GetTo(), "err", err)
			continue
		}
		if !t.enqueue(p, b) {
			t.logger.Debug("peer queue full, message dropped", "to", p.id, "type", m.GetType().String())
			t.unreachable(p.id)
		}
	}
}

// SendNote queues a note for member to without blocking; it is dropped when to is
// unknown or its queue is full.
func (t *Transport) SendNote(to uint64, data []byte) {
	p, ok := t.peer(to)
	if !ok {
		return
	}
	b := make([]byte, 9, 9+len(data))
	b[0] = frameNote
	binary.BigEndian.PutUint64(b[1:], t.self)
	if !t.enqueue(p, append(b, data...)) {
		t.logger.Debug("peer queue full, note dropped", "to", p.id)
	}
}

func (t *Transport) enqueue(p *peer, frame []byte) bool {
	select {
	case p.queue <- frame:
		return true
	default:
		return false
	}
}

// writeLoop keeps a connection to p and writes its queue to it, redialling with
// exponential backoff after a failure.
func (t *Transport) writeLoop(p *peer) {
	backoff := minBackoff
	for {
		conn, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			t.unreachable(p.id)
			if !t.sleep(p, backoff) {
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		if !p.setConn(conn, t) {
			return
		}
		err = t.writeConn(p, conn)
		p.setConn(nil, t)
		conn.Close()
		if err == nil {
			return // stopping
		}
		t.logger.Debug("peer connection lost", "peer", p.id, "err", err)
		t.unreachable(p.id)
	}
}

// setConn records p's current connection; false when the transport is closed or p
// removed.
func (p *peer) setConn(c net.Conn, t *Transport) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conn = c
	select {
	case <-t.stop:
		return false
	case <-p.gone:
		return false
	default:
		return true
	}
}

// writeConn writes queued frames to conn until a write fails (the error) or the
// transport stops (nil). It flushes whenever the queue runs empty.
func (t *Transport) writeConn(p *peer, conn net.Conn) error {
	w := bufio.NewWriterSize(conn, 64<<10)
	var hdr [4]byte
	for {
		var b []byte
		select {
		case b = <-p.queue:
		case <-t.stop:
			return nil
		case <-p.gone:
			return nil
		}
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		for {
			binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
			w.Write(hdr[:])
			if _, err := w.Write(b); err != nil {
				return err
			}
			select {
			case b = <-p.queue:
				continue
			default:
			}
			break
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// sleep waits d; false if the transport stopped or p was removed meanwhile.
func (t *Transport) sleep(p *peer, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.stop:
		return false
	case <-p.gone:
		return false
	}
}

// acceptLoop accepts peers' connections until the listener closes.
func (t *Transport) acceptLoop() {
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				t.logger.Warn("peer accept failed", "err", err)
			}
			return
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			conn.Close()
			return
		}
		t.inbound[conn] = struct{}{}
		t.mu.Unlock()
		t.goroutine(func() { t.readLoop(conn) })
	}
}

// readLoop decodes frames from one peer connection and hands them to recv.
func (t *Transport) readLoop(conn net.Conn) {
	defer func() {
		t.mu.Lock()
		delete(t.inbound, conn)
		t.mu.Unlock()
		conn.Close()
	}()
	r := bufio.NewReaderSize(conn, 64<<10)
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrame {
			t.logger.Warn("peer frame too large", "remote", conn.RemoteAddr().String(), "size", n)
			return
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return
		}
		if !t.deliver(b) {
			t.logger.Warn("bad peer frame", "remote", conn.RemoteAddr().String(), "size", n)
			return
		}
	}
}

// deliver hands one frame to recv or onNote; false if it is malformed.
func (t *Transport) deliver(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch b[0] {
	case frameRaft:
		m := new(raftpb.Message)
		if err := proto.Unmarshal(b[1:], m); err != nil {
			return false
		}
		t.recv(m)
	case frameNote:
		if len(b) < 9 {
			return false
		}
		if t.onNote != nil {
			t.onNote(binary.BigEndian.Uint64(b[1:]), b[9:])
		}
	default:
		return false
	}
	return true
}

// Close stops the listener, closes every connection and waits for the transport's
// goroutines. Messages still queued are dropped.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.stop)
	err := t.ln.Close()
	for c := range t.inbound {
		c.Close()
	}
	t.mu.Unlock()
	t.peersMu.RLock()
	for _, p := range t.peers {
		p.closeConn()
	}
	t.peersMu.RUnlock()
	t.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("quorum: close listener: %w", err)
	}
	return nil
}
