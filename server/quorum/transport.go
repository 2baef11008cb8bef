package quorum

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Transport timing and bounds.
const (
	minBackoff   = 20 * time.Millisecond
	maxBackoff   = time.Second
	dialTimeout  = time.Second
	writeTimeout = 5 * time.Second
	// maxUnidentified bounds the accepted connections that have not yet said which
	// member they are: each holds little, but nothing else bounds how many there are.
	// Identified connections are bounded by the membership: one per member.
	maxUnidentified = 16
	// noteLimit bounds a note: a report of 8 bytes per session, a million sessions' worth
	// and then some.
	noteLimit = 8 << 20
)

// peerTimeouts bound the phases of a peer connection.
type peerTimeouts struct {
	// handshake bounds how long a connection may take to finish its TLS handshake and
	// exchange hellos (ZooKeeper bounds its quorum handshake too).
	handshake time.Duration
	// idle closes an identified connection on which nothing arrived for that long;
	// keepalive keeps a quiet but live one (a follower's link to another follower
	// carries nothing between elections) well inside it.
	idle, keepalive time.Duration
}

var defaultTimeouts = peerTimeouts{handshake: 10 * time.Second, idle: 30 * time.Second, keepalive: 5 * time.Second}

// transportConfig is what newTransport needs.
type transportConfig struct {
	self     uint64
	peers    map[uint64]string // id → address, without self
	queueLen int               // each peer's outbound queue, in frames
	limits   frameLimits
	tls      *peerTLS // nil: plain TCP
	timeouts peerTimeouts
	// recv gets every Raft message from member from's connection; onNote (if not
	// nil) every note; unreachable the id of a peer a message could not be sent to.
	// None of them may block for long.
	recv   func(from uint64, m *raftpb.Message)
	onNote func(from uint64, data []byte)
	// recvSnap gets every MsgSnap with the stream of its records (snapstream.go);
	// snapshot gives the records of the snapshot at index to send. Nil: none are
	// taken, or sent.
	recvSnap    func(from uint64, m *raftpb.Message, records ReadFunc)
	snapshot    func(index uint64) ReadFunc
	maxSnapshot func() int64 // bounds a received snapshot's bytes, asked as each starts; nil or 0: no bound
	unreachable func(id uint64)
	gone        func(id uint64) // a peer's port refused a connection; nil: not told
	counters    *counters
	refusals    *limitedLog
	logger      *slog.Logger
}

// Transport carries Raft messages and notes between members over TCP, or TLS when
// configured. Each member listens on its peer address; to each other member it keeps
// one outbound connection, fed by a bounded queue, which starts with a hello naming
// the sender and the receiver. The receiving side believes a frame's sender only as
// the connection's member: with TLS the one whose certificate proves its id, without
// it the one the hello named. Messages are fire-and-forget: when a peer's queue is
// full or its connection fails the message is dropped and the peer reported
// unreachable, and Raft retransmits. Send is safe for concurrent use; Close is
// idempotent. The frames are described in frame.go.
type Transport struct {
	ln  net.Listener
	cfg transportConfig

	peersMu sync.RWMutex
	peers   map[uint64]*peer // guarded by peersMu; changed by SetPeers

	snap chan struct{} // one snapshot frame read at a time (capacity 1)
	stop chan struct{} // closed by Close
	wg   sync.WaitGroup

	mu           sync.Mutex          // guards the fields below
	inbound      map[net.Conn]uint64 // accepted connections → their member (0 until its hello)
	byMember     map[uint64]net.Conn // each member's identified inbound connection
	unidentified int                 // accepted connections without a hello yet
	closed       bool
}

// peer is the outbound side towards one member.
type peer struct {
	id    uint64
	addr  string
	queue chan []byte   // frames (kind byte and body) waiting for writeLoop
	gone  chan struct{} // closed when SetPeers removes the peer
	// check (capacity 1) makes writeLoop dial again at once: the peer's connection to
	// us ended, which may say the peer is gone, and the outbound connection, idle
	// while nothing is sent, would only find out at its next write.
	check chan struct{}

	mu   sync.Mutex // guards conn
	conn net.Conn   // the current connection, closed by Close to unblock writeLoop
}

// newTransport starts serving ln and connecting to cfg.peers.
func newTransport(ln net.Listener, cfg transportConfig) *Transport {
	t := &Transport{
		ln: ln, cfg: cfg, peers: make(map[uint64]*peer), snap: make(chan struct{}, 1),
		stop: make(chan struct{}), inbound: make(map[net.Conn]uint64), byMember: make(map[uint64]net.Conn),
	}
	t.SetPeers(cfg.peers)
	t.goroutine(t.acceptLoop)
	return t
}

// SetPeers makes peers (id → address, without this member) the members messages go
// to and come from: new ones get a connection, removed ones lose theirs (both ways),
// and a changed address is dialled from then on.
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
		if _, ok := peers[id]; !ok {
			if c := t.byMember[id]; c != nil {
				c.Close() // its read loop forgets it
			}
		}
	}
	for id, addr := range peers {
		if _, ok := t.peers[id]; ok || id == t.cfg.self {
			continue
		}
		p := &peer{id: id, addr: addr, queue: make(chan []byte, t.cfg.queueLen), gone: make(chan struct{}),
			check: make(chan struct{}, 1)}
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

// Send queues msgs for their peers without blocking. A message to an unknown peer, to
// a full queue, or too large for the peer to take is dropped.
func (t *Transport) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		p, ok := t.peer(m.GetTo())
		if !ok {
			t.cfg.logger.Debug("message to unknown peer dropped", "to", m.GetTo(), "type", m.GetType().String())
			continue
		}
		kind := frameRaft
		if m.GetType() == raftpb.MsgSnap {
			kind = frameSnap
		}
		b, err := proto.MarshalOptions{}.MarshalAppend([]byte{kind}, m)
		if err != nil {
			t.cfg.logger.Error("marshal message", "to", m.GetTo(), "err", err)
			continue
		}
		if len(b) > t.cfg.limits.limit(kind) {
			// The receiver would refuse it and drop the connection: a bug (an entry
			// past Config.MaxEntryBytes) that must not turn into a reconnect loop.
			t.cfg.logger.Error("message too large for the peer protocol, dropped", "to", m.GetTo(),
				"type", m.GetType().String(), "size", len(b), "limit", t.cfg.limits.limit(kind))
			continue
		}
		if !t.enqueue(p, b) {
			t.cfg.logger.Debug("peer queue full, message dropped", "to", p.id, "type", m.GetType().String())
			t.cfg.unreachable(p.id)
		}
	}
}

// SendNote queues a note for member to without blocking; it is dropped when to is
// unknown or its queue is full.
func (t *Transport) SendNote(to uint64, data []byte) {
	p, ok := t.peer(to)
	if !ok || len(data)+1 > t.cfg.limits.note {
		return
	}
	b := make([]byte, 1, 1+len(data))
	b[0] = frameNote
	if !t.enqueue(p, append(b, data...)) {
		t.cfg.logger.Debug("peer queue full, note dropped", "to", p.id)
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
		conn, err := t.dial(p)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) && t.cfg.gone != nil {
				t.cfg.gone(p.id)
			}
			t.cfg.unreachable(p.id)
			if !t.sleep(p, backoff) {
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		if !p.setConn(conn, t) {
			conn.Close()
			return
		}
		err = t.writeConn(p, conn)
		p.setConn(nil, t)
		conn.Close()
		if err == nil {
			return // stopping
		}
		t.cfg.logger.Debug("peer connection lost", "peer", p.id, "err", err)
		t.cfg.unreachable(p.id)
	}
}

// dial connects to p: TCP, the TLS handshake when configured (the peer's certificate
// must prove it is member p.id), then the hellos: this member's, and p's answering
// one, which says p accepted the connection (a member refuses one from a member it
// does not know yet). Frames are only sent once it has, so none are lost to a
// connection about to be refused.
func (t *Transport) dial(p *peer) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", p.addr, dialTimeout)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(t.cfg.timeouts.handshake))
	if t.cfg.tls != nil {
		tc := tls.Client(conn, t.cfg.tls.clientConfig(p.id, p.addr))
		if err := tc.Handshake(); err != nil {
			conn.Close()
			t.cfg.refusals.warn("tls handshake with peer failed", "peer", p.id, "addr", p.addr, "err", err)
			return nil, err
		}
		conn = tc
	}
	err = t.exchangeHellos(conn, p.id)
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

// exchangeHellos sends the dialling member's hello and reads the answer of member id.
func (t *Transport) exchangeHellos(conn net.Conn, id uint64) error {
	if _, err := conn.Write(hello{from: t.cfg.self, to: id}.appendTo(nil)); err != nil {
		return err
	}
	kind, body, err := readFrame(bufio.NewReaderSize(conn, 64), frameLimits{})
	switch {
	case err != nil:
		return fmt.Errorf("no answer to the hello: %w", err)
	case kind != frameHello:
		return fmt.Errorf("hello answered with a frame of kind %d", kind)
	}
	h, err := decodeHello(body)
	if err == nil && (h.from != id || h.to != t.cfg.self) {
		err = fmt.Errorf("hello answered by member %d for member %d", h.from, h.to)
	}
	if err != nil {
		t.cfg.refusals.warn("peer answered the hello wrongly", "peer", id, "err", err)
	}
	return err
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

// keepaliveFrame is the whole of a keepalive frame: its length and its kind.
var keepaliveFrame = []byte{frameKeepalive}

// writeConn writes queued frames to conn until a write fails (the error) or the
// transport stops (nil). It flushes whenever the queue runs empty, and sends a
// keepalive when the queue has been empty for keepaliveEvery.
func (t *Transport) writeConn(p *peer, conn net.Conn) error {
	w := bufio.NewWriterSize(conn, 64<<10)
	keepalive := time.NewTimer(t.cfg.timeouts.keepalive)
	defer keepalive.Stop()
	var hdr [4]byte
	for {
		var b []byte
		select {
		case b = <-p.queue:
		case <-keepalive.C:
			b = keepaliveFrame
		case <-t.stop:
			return nil
		case <-p.gone:
			return nil
		case <-p.check:
			return errCheck
		}
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		for {
			binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
			w.Write(hdr[:])
			if _, err := w.Write(b); err != nil {
				return err
			}
			if b[0] == frameSnap {
				if err := t.streamSnapshot(w, conn, b[1:]); err != nil {
					return err
				}
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
		keepalive.Reset(t.cfg.timeouts.keepalive)
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
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			t.cfg.logger.Warn("peer accept failed", "err", err)
			select {
			case <-t.stop:
				return
			case <-time.After(100 * time.Millisecond): // e.g. out of file descriptors
			}
			continue
		}
		switch ok, stopping := t.admit(conn); {
		case stopping:
			conn.Close()
			return
		case !ok:
			conn.Close()
			t.refuse("peer connection refused: too many unidentified connections",
				"remote", conn.RemoteAddr().String(), "limit", maxUnidentified)
			continue
		}
		t.goroutine(func() { t.serveConn(conn) })
	}
}

// admit registers an accepted connection unless maxUnidentified are already waiting
// for their hello.
func (t *Transport) admit(conn net.Conn) (ok, stopping bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return false, true
	case t.unidentified >= maxUnidentified:
		return false, false
	}
	t.unidentified++
	t.inbound[conn] = 0
	return true, false
}

// refuse counts and logs a connection closed before it carried a message.
func (t *Transport) refuse(msg string, args ...any) {
	t.cfg.counters.connsRefused.Add(1)
	t.cfg.refusals.warn(msg, args...)
}

// serveConn runs an accepted connection: the TLS handshake and the hello, within
// the handshake timeout, then its frames until it fails or goes idle.
func (t *Transport) serveConn(conn net.Conn) {
	defer t.forget(conn)
	remote := conn.RemoteAddr().String()
	conn.SetDeadline(time.Now().Add(t.cfg.timeouts.handshake))
	var nc net.Conn = conn
	if t.cfg.tls != nil {
		tc := tls.Server(conn, t.cfg.tls.serverConfig())
		if err := tc.Handshake(); err != nil {
			t.refuse("peer connection refused: tls handshake failed", "remote", remote, "err", err)
			return
		}
		nc = tc
	}
	ir := &idleReader{conn: conn, r: nc, timeout: t.cfg.timeouts.idle}
	r := bufio.NewReaderSize(ir, 64<<10)
	kind, body, err := readFrame(r, t.cfg.limits)
	if err == nil && kind != frameHello {
		err = fmt.Errorf("first frame of kind %d", kind)
	}
	var h hello
	if err == nil {
		h, err = decodeHello(body)
	}
	if err == nil {
		err = t.checkHello(h, nc)
	}
	if err != nil {
		t.refuse("peer connection refused: no valid hello", "remote", remote, "err", err)
		return
	}
	if !t.identify(conn, h.from) {
		return
	}
	if _, err := nc.Write(hello{from: t.cfg.self, to: h.from}.appendTo(nil)); err != nil {
		return
	}
	conn.SetDeadline(time.Time{})
	ir.idle = true
	t.readLoop(r, h.from, remote)
	t.mu.Lock()
	replaced := t.byMember[h.from] != conn // a newer connection of the member's closed this one
	t.mu.Unlock()
	if !replaced {
		t.checkPeer(h.from)
	}
}

// errCheck ends an outbound connection for checkPeer.
var errCheck = errors.New("the peer's connection to this member ended: dialling again to check on it")

// checkPeer has the connection to member id dialled again, when its connection to this
// member ended other than by being replaced by a newer one: if the peer's process is
// gone, the dial is refused and says so at once (transportConfig.gone), where the idle
// outbound connection would notice only at its next write.
func (t *Transport) checkPeer(id uint64) {
	if p, ok := t.peer(id); ok {
		select {
		case p.check <- struct{}{}:
		default:
		}
	}
}

// checkHello checks that a hello is addressed to this member, from a member, and —
// with TLS — from the member the peer's certificate proves.
func (t *Transport) checkHello(h hello, nc net.Conn) error {
	if h.to != t.cfg.self {
		return fmt.Errorf("hello addressed to member %d, this is member %d", h.to, t.cfg.self)
	}
	p, ok := t.peer(h.from)
	if !ok {
		return fmt.Errorf("hello from member %d, which is not a member", h.from)
	}
	if tc, ok := nc.(*tls.Conn); ok {
		return t.cfg.tls.Proves(tc.ConnectionState().PeerCertificates, h.from, p.addr)
	}
	return nil
}

// identify records conn as member id's connection, closing the one it replaces: a
// member keeps one connection to each other, so a new one means the old one is dead
// (or was an impostor's). False if the transport is closing.
func (t *Transport) identify(conn net.Conn, id uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.unidentified--
	t.inbound[conn] = id
	if old := t.byMember[id]; old != nil {
		old.Close()
	}
	t.byMember[id] = conn
	return true
}

// forget closes an accepted connection and removes it from the transport's books.
func (t *Transport) forget(conn net.Conn) {
	conn.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.inbound[conn]
	if !ok {
		return
	}
	delete(t.inbound, conn)
	switch {
	case id == 0:
		t.unidentified--
	case t.byMember[id] == conn:
		delete(t.byMember, id)
	}
}

// idleReader reads from r. Once idle is set, a read fails when nothing arrived on conn
// for timeout: a peer may send a large frame slowly, but not stall.
type idleReader struct {
	conn    net.Conn
	r       io.Reader
	timeout time.Duration
	idle    bool // set once the connection's handshake is done; before, conn's deadline holds
}

func (ir *idleReader) Read(p []byte) (int, error) {
	if ir.idle {
		ir.conn.SetReadDeadline(time.Now().Add(ir.timeout))
	}
	return ir.r.Read(p)
}

// readLoop reads member from's frames and hands them on until the connection fails,
// goes idle, or breaks the protocol.
func (t *Transport) readLoop(r *bufio.Reader, from uint64, remote string) {
	for {
		err := t.readOne(r, from)
		if err == nil {
			continue
		}
		if errors.Is(err, errFrameKind) || errors.Is(err, errFrameSize) || errors.Is(err, errFrameEmpty) ||
			errors.Is(err, errBadFrame) {
			t.cfg.counters.framesRefused.Add(1)
			t.cfg.refusals.warn("peer connection closed: bad frame", "peer", from, "remote", remote, "err", err)
		}
		return
	}
}

// readOne reads the next frame and hands it on. A snapshot frame first waits for the
// one snapshot slot, which it holds until its stream has been read and handed on:
// however many peers send snapshots, one is received at a time.
func (t *Transport) readOne(r *bufio.Reader, from uint64) error {
	hdr, err := r.Peek(5)
	if err != nil {
		return err
	}
	if hdr[4] == frameSnap {
		select {
		case t.snap <- struct{}{}:
			defer func() { <-t.snap }()
		case <-t.stop:
			return net.ErrClosed
		}
	}
	kind, body, err := readFrame(r, t.cfg.limits)
	if err != nil {
		return err
	}
	if kind == frameSnap {
		return t.readSnapshot(r, from, body)
	}
	return t.deliver(from, kind, body)
}

// errBadFrame marks a frame whose body does not decode.
var errBadFrame = errors.New("malformed frame")

// deliver hands one frame of member from's to recv or onNote.
func (t *Transport) deliver(from uint64, kind byte, body []byte) error {
	switch kind {
	case frameRaft:
		m := new(raftpb.Message)
		if err := proto.Unmarshal(body, m); err != nil {
			return fmt.Errorf("%w: raft message: %v", errBadFrame, err)
		}
		if (m.GetType() == raftpb.MsgSnap) != (kind == frameSnap) {
			return fmt.Errorf("%w: %s in a frame of kind %d", errBadFrame, m.GetType(), kind)
		}
		t.cfg.recv(from, m)
	case frameNote:
		if t.cfg.onNote != nil {
			t.cfg.onNote(from, body)
		}
	case frameKeepalive:
	default: // a second hello, or a snapshot chunk outside its stream
		return fmt.Errorf("%w: kind %d after the hello", errBadFrame, kind)
	}
	return nil
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
