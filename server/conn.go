package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock/paddock/internal/sasl/digestmd5"
	"github.com/paddock/paddock/server/admin"
	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// maxConnQueuedBytes bounds the replies and notifications waiting for one slow client.
// Past it the client is disconnected rather than allowed to hold memory or block the
// server. One frame of any size is always accepted into an empty queue: since reads are
// refused whose replies would pass jute.maxbuffer (replyHeadroom), that frame is at most
// a few MiB (a multi's results, a four-letter word's report). 64 MiB is what a client that pipelines 64
// maximal reads and reads its replies as they come may legitimately have waiting; the
// server-wide Config.MaxQueuedBytes, not this, protects the process.
const maxConnQueuedBytes = 64 << 20

// outChunk is the size at which the outbound buffer is set aside whole and a new one
// begun: replies piling up for a client that does not read fill a list of chunks, each
// copied at most once as it grows, instead of one buffer that grows, and is copied,
// without end.
const outChunk = 256 << 10

// maxKeptBuffer is the largest outbound buffer a connection keeps for reuse once it is
// written. It holds a batch of hundreds of typical replies, so the hot path writes and
// reuses the same two buffers; larger ones are given back, so that the memory a
// connection holds follows the bytes it has queued, not its peak, and an idle
// connection holds at most two of these.
const maxKeptBuffer = 64 << 10

// maxWriteBatch bounds the chunks the write loop takes from the queue for one write. A
// connection dropped for the bytes it holds (Server.shedQueued) gives its queue back at
// once, but what its write loop has taken is freed only when that write fails, once the
// goroutine runs again: taking the whole queue, the write loops of dropped connections
// held as much as the limit again, uncounted. 1 MiB is still hundreds of typical
// replies a system call.
const maxWriteBatch = 1 << 20

// maxKeptReadBuffer is the largest request buffer the read loop keeps between frames,
// the size of its bufio.Reader: a client that once sent a megabyte does not hold one.
const maxKeptReadBuffer = 64 << 10

// conn is one client connection: a read loop that decodes and dispatches requests in
// order, and a write loop that drains the outbound buffer with as few writes as possible.
type conn struct {
	s      *Server
	nc     net.Conn
	ip     string // remote IP, for ip ACLs and maxClientCnxns
	br     *bufio.Reader
	ctx    context.Context // cancelled when the connection closes
	cancel context.CancelFunc
	stats  admin.ConnStats
	est    time.Time // when the connection was accepted

	sessionID atomic.Int64 // set once by the handshake
	draining  atomic.Bool  // reading has stopped; close once the queued replies are out
	// awaiting is set while the handshake waits for a member to serve again
	// (replica.takesClients): a member that stops serving leaves it open.
	awaiting atomic.Bool
	// readOnly says the connection's session is a read-only member's local session
	// (readonly.go); set at the handshake, before the read loop starts.
	readOnly atomic.Bool
	dec      wire.Decoder // the read loop's, reused for every request
	timeout  atomic.Int32 // negotiated session timeout, ms
	reported atomic.Int64 // when the session's activity was last noted for the leader, Unix ms

	// pending counts this connection's requests read and not yet answered; each is also
	// counted in Server.outstanding. Once the read loop has ended, releasePending takes
	// what is left out of the server's count and leaves pending far below zero, so that
	// a request answered after that (a write applied after its client left) is not
	// taken out twice.
	pending atomic.Int64
	waiting atomic.Bool   // the read loop waits for room (throttle)
	room    chan struct{} // signalled when pending falls while waiting is set (capacity 1)

	// ids are the connection's identities (ip, digest, sasl, x509, super); replaced, never mutated.
	ids atomic.Pointer[[]wire.Identity]
	// sasl is the connection's SASL exchange, from its first sasl request (saslStep);
	// only the read loop touches it.
	sasl *digestmd5.Server
	// x509 says the client gave a verified certificate at the TLS handshake, which
	// gave it the x509 identity; set before the read loop starts.
	x509 bool

	mu sync.Mutex
	// queue holds, in arrival order, this connection's writes in flight and the requests
	// that arrived after them and must wait to be answered in order. Guarded by mu.
	queue []*request

	outMu    sync.Mutex
	out      wire.Encoder  // frames not yet written, after those in full; guarded by outMu
	full     [][]byte      // earlier frames not yet written, in chunks of about outChunk; guarded by outMu
	outReady chan struct{} // signals writeLoop that out has frames (capacity 1)
	closing  bool          // close once out is written; guarded by outMu
	closed   bool          // guarded by outMu
	spare    []byte        // writeLoop's buffer, swapped with out
	// queued counts the bytes in out and those writeLoop has taken and not yet written;
	// each is also counted in Server.queued. Written under outMu; read without it by
	// the server when it looks for the connections holding the most.
	queued atomic.Int64
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{s: s, nc: nc, br: bufio.NewReaderSize(nc, 64<<10), ctx: ctx, cancel: cancel,
		outReady: make(chan struct{}, 1), room: make(chan struct{}, 1)}
	c.ip = remoteIP(nc.RemoteAddr())
	ids := []wire.Identity{{Scheme: datatree.SchemeIP, ID: c.ip}}
	c.ids.Store(&ids)
	c.est = time.Now()
	return c
}

func remoteIP(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

func (c *conn) identities() []wire.Identity { return *c.ids.Load() }

// Bounds on a connection's identities: every txn it proposes carries them all, into
// the log and to every member, and every ACL check walks them. ZooKeeper sets none; no
// real client comes near them.
const (
	maxIdentities     = 32      // distinct identities, the ip one included
	maxIdentityLength = 4 << 10 // bytes of one identity's id (a digest's user name and hash)
)

// addIdentity adds ids, in order, to the connection's identities, those it does not
// hold yet, and reports false, adding none, if that would take it past maxIdentities
// or one is longer than maxIdentityLength. The order is ZooKeeper's order of
// addAuthInfo calls: whoAmI lists the identities in an order that depends on it
// (zooKeeperOrder).
func (c *conn) addIdentity(ids ...wire.Identity) bool {
	old := c.identities()
	all := old[:len(old):len(old)]
	for _, id := range ids {
		if slices.Contains(all, id) {
			continue
		}
		if len(all) >= maxIdentities || len(id.Scheme)+len(id.ID) > maxIdentityLength {
			return false
		}
		all = append(all, id)
	}
	if len(all) > len(old) {
		c.ids.Store(&all)
	}
	return true
}

func (c *conn) canRead(acl []wire.ACL) bool {
	return c.s.cfg.SkipACL || datatree.Allowed(acl, wire.PermRead, c.identities())
}

// serve runs the connection until it closes: it answers a four-letter word or does the
// handshake, then reads requests until the client goes or the server stops. The client
// has HandshakeTimeout from the accept to send its ConnectRequest or four-letter word.
func (c *conn) serve() {
	defer c.shutdown()
	c.s.goroutine(c.writeLoop)
	if !c.tlsHandshake() {
		return
	}
	c.nc.SetReadDeadline(c.est.Add(c.s.cfg.HandshakeTimeout))
	var first [4]byte
	if _, err := io.ReadFull(c.br, first[:]); err != nil {
		c.handshakeFailed(err)
		return
	}
	code := int32(binary.BigEndian.Uint32(first[:]))
	if word, ok := admin.IsFourLetterWord(code); ok {
		c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.HandshakeTimeout)) // as long again to take the answer
		c.serveFourLetterWord(word)
		return
	}
	n, err := wire.CheckLength(code, min(c.s.cfg.MaxBuffer, wire.MaxConnectFrame))
	if err != nil {
		c.s.limits.framesRejected.Add(1)
		c.s.logger.Debug("connect frame rejected", "remote", c.nc.RemoteAddr().String(), "err", err)
		return
	}
	body, err := wire.ReadBody(c.br, n, nil)
	if err != nil {
		c.handshakeFailed(err)
		return
	}
	c.nc.SetReadDeadline(time.Time{})
	if !c.handshake(body) {
		return
	}
	c.readLoop()
}

// handshakeFailed notes why a connection ended before its handshake: a client that
// sent nothing complete within HandshakeTimeout is counted (ZooKeeper's
// sessionless_connections_expired). Not logged above Debug: anyone can open connections.
func (c *conn) handshakeFailed(err error) {
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		c.s.limits.sessionlessExpired.Add(1)
		c.s.logger.Debug("closing sessionless connection: no connect request in time",
			"remote", c.nc.RemoteAddr().String(), "handshake_timeout", c.s.cfg.HandshakeTimeout)
	}
}

func (c *conn) serveFourLetterWord(word string) {
	c.stats.PacketReceived()
	var b writerBuffer
	if err := c.s.admin.Serve(&b, word); err != nil {
		c.s.logger.Warn("four-letter word failed", "word", word, "err", err)
	}
	c.enqueue(false, func(e *wire.Encoder) { e.Raw(b) })
	c.closeAfterFlush()
	<-c.ctx.Done()
}

// writerBuffer collects a four-letter word's output.
type writerBuffer []byte

func (w *writerBuffer) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

// readLoop reads frames until the connection fails, a frame is too large, or a
// request asks to close the connection. Before each frame it waits for room (throttle).
func (c *conn) readLoop() {
	var buf []byte
	for c.throttle() {
		n, err := wire.ReadLength(c.br, c.s.cfg.MaxBuffer)
		if err != nil {
			if errors.Is(err, wire.ErrFrameTooLarge) {
				c.s.limits.framesRejected.Add(1)
				c.s.logger.Warn("closing connection: frame too large", "remote", c.nc.RemoteAddr().String(),
					"session_id", hexID(c.sessionID.Load()), "err", err)
			}
			return
		}
		body, err := wire.ReadBody(c.br, n, buf)
		if err != nil {
			return
		}
		c.stats.PacketReceived()
		c.s.received.Add(1)
		if !c.dispatch(body) { // decoded records never alias body: it may be reused now
			return
		}
		buf = nil
		if cap(body) <= maxKeptReadBuffer {
			buf = body[:0]
		}
	}
}

// throttle waits, before the read loop reads another request, until the connection may
// have one more outstanding: fewer than MaxOutstandingPerConn of its own, and, while the
// server has MaxOutstanding requests outstanding, none at all (ZooKeeper 3.6's rule:
// a connection with requests in process stops reading while the server is over
// globalOutstandingLimit). The client's further requests then wait in TCP buffers, so
// backpressure reaches it. It returns false when the connection or the server closes.
func (c *conn) throttle() bool {
	ok, own := c.mayRead()
	if ok {
		return true
	}
	if own {
		c.s.limits.connThrottleWaits.Add(1)
	} else {
		c.s.limits.throttleWaits.Add(1)
	}
	for !ok {
		if !c.waitRoom(own) {
			return false
		}
		ok, own = c.mayRead()
	}
	return true
}

// mayRead reports whether the connection may read another request now, and if not,
// whether its own cap (own) rather than the server's stops it.
func (c *conn) mayRead() (ok, own bool) {
	mine := c.pending.Load()
	if mine >= int64(c.s.cfg.MaxOutstandingPerConn) {
		return false, true
	}
	return mine == 0 || c.s.outstanding.Load() < int64(c.s.cfg.MaxOutstanding), false
}

// waitRoom waits for this connection's pending count to fall or, unless own (the
// connection is at its own cap), for the server's outstanding count to fall below
// MaxOutstanding. The wakers (answered, releasePending) read the flags set here after
// changing the counts, and the counts are read again here after setting the flags, so
// no wake-up is lost. It returns false when the connection or the server closes.
func (c *conn) waitRoom(own bool) bool {
	s := c.s
	c.waiting.Store(true)
	defer c.waiting.Store(false)
	var serverRoom chan struct{} // nil when own: never ready
	if !own {
		s.throttled.Add(1)
		defer s.throttled.Add(-1)
		serverRoom = s.roomChan()
	}
	if ok, _ := c.mayRead(); ok {
		return true
	}
	select {
	case <-c.room:
	case <-serverRoom:
	case <-c.ctx.Done():
		return false
	case <-s.stopping:
		return false
	}
	return true
}

// requestUnit is the frame size a request counts as one outstanding request for: a
// request counts once, and once more for each requestUnit of its frame. The bounds on
// outstanding requests then bound the memory requests hold too — a decoded request
// takes up to about five times its frame (a multiRead of tiny paths) — where counting
// requests alone would let a thousand maximal multiReads held behind writes take
// gigabytes: the server's limit of 1000 holds at most about 64 MiB of frames.
const requestUnit = 64 << 10

// requestWeight is how many outstanding requests a request of a size-byte frame counts as.
func requestWeight(size int) int64 { return 1 + int64(size/requestUnit) }

// admit counts a request read, of weight w (requestWeight), in the connection's and the
// server's outstanding counts.
func (c *conn) admit(w int64) {
	c.pending.Add(w)
	c.s.outstanding.Add(w)
}

// answered takes an answered request out of the outstanding counts and wakes a read
// loop waiting for room. It never blocks: the apply path and the completions of
// requests answered later call it.
func (c *conn) answered(w int64) {
	if c.pending.Add(-w) < 0 {
		return // released: the server's count no longer holds it
	}
	n := c.s.outstanding.Add(-w)
	if c.waiting.Load() {
		select {
		case c.room <- struct{}{}:
		default:
		}
	}
	c.s.wakeThrottledBelow(n)
}

// roomChan returns the channel closed when the server's outstanding count next falls
// below MaxOutstanding while read loops wait.
func (s *Server) roomChan() chan struct{} {
	s.roomMu.Lock()
	defer s.roomMu.Unlock()
	return s.room
}

// wakeThrottledBelow wakes the read loops waiting for the server's outstanding count
// to fall, if it has: n is the count just left by a decrement.
func (s *Server) wakeThrottledBelow(n int64) {
	if n >= int64(s.cfg.MaxOutstanding) || s.throttled.Load() == 0 {
		return
	}
	s.roomMu.Lock()
	close(s.room)
	s.room = make(chan struct{})
	s.roomMu.Unlock()
}

// releasedPending is what pending holds once released: far below zero, so that no
// number of late answers brings it back up to zero.
const releasedPending = math.MinInt64 / 2

// releasePending takes the requests the connection still has outstanding (writes in
// flight, requests queued behind them, syncs) out of the server's count when the
// connection ends. Those answered later are not taken out again (answered).
func (c *conn) releasePending() {
	if left := c.pending.Swap(releasedPending); left > 0 {
		c.s.wakeThrottledBelow(c.s.outstanding.Add(-left))
	}
}

// send encodes a frame, adding its length prefix, into the outbound buffer. It returns
// false if the connection is closed or the client is too slow.
func (c *conn) send(encode func(e *wire.Encoder)) bool { return c.enqueue(true, encode) }

func (c *conn) enqueue(framed bool, encode func(e *wire.Encoder)) bool {
	c.s.makeRoom(0)
	c.outMu.Lock()
	start, ok := c.beginFrameLocked(0)
	if ok {
		if framed {
			off := c.out.BeginFrame()
			encode(&c.out)
			c.out.EndFrame(off)
		} else {
			encode(&c.out)
		}
		ok = c.endFrameLocked(start, 0)
	}
	c.outMu.Unlock()
	c.s.makeRoom(0) // its size was not known before: a four-letter word's report may be large
	return ok
}

// beginFrameLocked reports whether a frame may be queued, and where in out it starts,
// which endFrameLocked needs. size is the frame's length when it is known to be large,
// else 0: a frame of outChunk or more is encoded into a buffer of its exact size, what
// out held being set aside first, where append's growth would leave up to a quarter of
// it unused — memory the queue's count would not see (docs/limits.md).
func (c *conn) beginFrameLocked(size int) (start int, ok bool) {
	if c.closed || c.closing {
		return 0, false
	}
	if size >= outChunk {
		if c.out.Len() > 0 {
			c.full = append(c.full, c.out.Swap(nil))
		}
		c.out.Grow(size)
	}
	return c.out.Len(), true
}

// endFrameLocked counts the frame just queued (from start to the end of out) and wakes
// the write loop, or, if the client has let more than maxConnQueuedBytes pile up
// (counting what the write loop holds and has not yet written), closes the connection.
// One frame of any size is always accepted into an empty queue. The caller has made
// room for it in the server's count first (Server.makeRoom), counting reserved bytes
// ahead, which the frame's own bytes replace here in one step.
func (c *conn) endFrameLocked(start int, reserved int64) bool {
	size := int64(c.out.Len() - start)
	wasEmpty := c.queued.Load() == 0
	c.queued.Add(size)
	c.s.queued.Add(size - reserved)
	if !wasEmpty && c.queued.Load() > maxConnQueuedBytes {
		c.s.limits.connsDropped.Add(1)
		c.s.logger.Warn("closing connection: client too slow to read its replies",
			"remote", c.nc.RemoteAddr().String(), "session_id", hexID(c.sessionID.Load()),
			"queued_bytes", c.queued.Load())
		c.closeLocked()
		c.abort()
		return false
	}
	if c.out.Len() >= outChunk {
		c.full = append(c.full, c.out.Swap(nil))
	}
	c.stats.PacketSent()
	c.s.sent.Add(1)
	select {
	case c.outReady <- struct{}{}:
	default:
	}
	return true
}

// reply sends a reply header and, if the code is OK and body is set, its body.
// (It encodes in place rather than through send's closure: this is the hot path.)
func (c *conn) reply(xid int32, zxid int64, code wire.Code, body wire.Record) {
	size := frameLenBytes + replyHeaderLen
	if code == wire.OK {
		size += bodyLen(body)
	}
	ahead := int64(0) // a large reply is counted before it is built (makeRoom)
	if size >= outChunk {
		ahead = int64(size)
	}
	c.s.makeRoom(ahead)
	c.outMu.Lock()
	if start, ok := c.beginFrameLocked(size); ok {
		off := c.out.BeginFrame()
		h := wire.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}
		h.Encode(&c.out)
		if code == wire.OK && body != nil {
			body.Encode(&c.out)
		}
		c.out.EndFrame(off)
		c.endFrameLocked(start, ahead)
	} else if ahead != 0 {
		c.s.queued.Add(-ahead) // not queued: the connection is closed
	}
	c.outMu.Unlock()
}

// notify sends a watch notification.
func (c *conn) notify(typ wire.EventType, path string, zxid int64) {
	c.s.makeRoom(0)
	c.outMu.Lock()
	if start, ok := c.beginFrameLocked(0); ok {
		off := c.out.BeginFrame()
		h := wire.ReplyHeader{Xid: wire.XidNotification, Zxid: zxid}
		h.Encode(&c.out)
		ev := wire.WatcherEvent{Type: typ, State: wire.StateSyncConnected, Path: path}
		ev.Encode(&c.out)
		c.out.EndFrame(off)
		c.endFrameLocked(start, 0)
	}
	c.outMu.Unlock()
}

// closeAfterFlush closes the connection once everything queued has been written.
func (c *conn) closeAfterFlush() {
	c.outMu.Lock()
	c.closing = true
	c.outMu.Unlock()
	select {
	case c.outReady <- struct{}{}:
	default:
	}
}

// close closes the connection now, dropping whatever is queued. Idempotent. The server
// forgets the connection before the socket closes, so a client that sees the close and
// asks cons or srvr at once is not counted twice, as in ZooKeeper.
func (c *conn) close() {
	c.s.removeConn(c)
	c.outMu.Lock()
	c.closeLocked()
	c.outMu.Unlock()
	c.nc.Close() // not under outMu: it waits for a write in progress to give up
	c.cancel()
}

// closeLocked marks the connection closed and gives up what it has queued, in the
// server's count too. Idempotent.
func (c *conn) closeLocked() {
	if c.closed {
		return
	}
	c.closed = true
	c.s.queued.Add(-c.queued.Swap(0))
	c.out.Swap(nil)
	c.full = nil
}

// abort has the connection's own goroutines close it, without waiting for anything:
// its socket's deadline passes and its context ends, so that its read and write loops,
// wherever they wait, fail and call close.
func (c *conn) abort() {
	c.nc.SetDeadline(time.Unix(1, 0))
	c.cancel()
}

// drop closes the connection for holding queued bytes the server needs back
// (Server.shedQueued): its queue is given up at once, out of the server's count and
// out of memory, as a client past its own limit's is (endFrameLocked), and its own
// goroutines, woken by abort, finish the close. Holding the bytes until then let
// connections dropped and not yet closed hold as much again as the limit (issue 31).
// It never blocks on I/O: outMu is only ever held to encode or take a frame, and the
// caller holds no outMu.
func (c *conn) drop() {
	c.outMu.Lock()
	c.closeLocked()
	c.outMu.Unlock()
	c.abort()
}

// writeLoop writes queued frames, all that have accumulated in one write call.
func (c *conn) writeLoop() {
	for {
		select {
		case <-c.outReady:
		case <-c.ctx.Done():
			return
		}
		c.outMu.Lock()
		full, buf, more := c.takeLocked()
		closing, closed := c.closing, c.closed
		c.outMu.Unlock()
		if closed {
			return
		}
		n, err := c.writeOut(full, buf)
		if err != nil {
			c.close()
			return
		}
		if buf != nil && cap(buf) <= maxKeptBuffer {
			c.spare = buf[:0]
		}
		if done := c.written(n, closing); done {
			c.close()
			return
		}
		if more {
			select {
			case c.outReady <- struct{}{}:
			default:
			}
		}
	}
}

// takeLocked takes what the write loop writes next: the chunks set aside, up to
// maxWriteBatch bytes of them (at least one), and, once they are all taken, out, which
// then continues in the spare buffer. more says chunks were left for the next round.
func (c *conn) takeLocked() (full [][]byte, buf []byte, more bool) {
	n, size := 0, 0
	for n < len(c.full) && (n == 0 || size+len(c.full[n]) <= maxWriteBatch) {
		size += len(c.full[n])
		n++
	}
	if n < len(c.full) {
		full = slices.Clone(c.full[:n])
		clear(c.full[:n]) // the queue no longer holds them: the write loop does
		c.full = c.full[n:]
		return full, nil, true
	}
	full, c.full = c.full, nil
	buf, c.spare = c.out.Swap(c.spare), nil
	return full, buf, false
}

// writeOut writes the chunks set aside, then buf, in one system call where it can.
func (c *conn) writeOut(full [][]byte, buf []byte) (int, error) {
	if len(full) == 0 {
		if len(buf) == 0 {
			return 0, nil
		}
		return c.nc.Write(buf)
	}
	bufs := net.Buffers(append(full, buf))
	n, err := bufs.WriteTo(c.nc)
	return int(n), err
}

// written takes n bytes just written out of the queued counts, and reports whether
// the connection was closing and everything queued is now out.
func (c *conn) written(n int, closing bool) bool {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if !c.closed { // once closed, closeLocked has taken the connection's bytes out
		c.queued.Add(-int64(n))
		c.s.queued.Add(-int64(n))
	}
	return closing && c.out.Len() == 0 && len(c.full) == 0
}

// shutdown releases everything the connection holds once its read loop has ended.
// The session lives on until it expires or is closed.
func (c *conn) shutdown() {
	if c.draining.Load() {
		// The last request asked for the connection to close after its reply (closeSession,
		// a failed auth, an unknown op): wait until the write loop has sent it.
		timer := time.NewTimer(5 * time.Second)
		select {
		case <-c.ctx.Done():
		case <-c.s.stopping:
		case <-timer.C:
		}
		timer.Stop()
	}
	c.close()
	c.releasePending()
	c.s.watches.RemoveWatcher(c)
	c.s.removeConn(c)
}
