package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock/paddock/server/admin"
	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// maxQueuedBytes bounds the replies and notifications waiting for a slow client. Past it
// the client is disconnected rather than allowed to hold memory or block the server.
// One frame of any size is always accepted into an empty queue.
const maxQueuedBytes = 64 << 20

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
	dec       wire.Decoder // the read loop's, reused for every request
	timeout   atomic.Int32 // negotiated session timeout, ms
	reported  atomic.Int64 // when the session's activity was last noted for the leader, Unix ms
	// ids are the connection's identities (ip, digest, super); replaced, never mutated.
	ids atomic.Pointer[[]wire.Identity]

	mu sync.Mutex
	// queue holds, in arrival order, this connection's writes in flight and the requests
	// that arrived after them and must wait to be answered in order. Guarded by mu.
	queue []*request

	outMu    sync.Mutex
	out      wire.Encoder  // frames not yet written; guarded by outMu
	outReady chan struct{} // signals writeLoop that out has frames (capacity 1)
	closing  bool          // close once out is written; guarded by outMu
	closed   bool          // guarded by outMu
	writing  int           // bytes writeLoop has taken from out and not yet written; guarded by outMu
	spare    []byte        // writeLoop's buffer, swapped with out
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{s: s, nc: nc, br: bufio.NewReaderSize(nc, 64<<10), ctx: ctx, cancel: cancel,
		outReady: make(chan struct{}, 1)}
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

func (c *conn) addIdentity(id wire.Identity) {
	old := c.identities()
	for _, o := range old {
		if o == id {
			return
		}
	}
	ids := append(old[:len(old):len(old)], id)
	c.ids.Store(&ids)
}

func (c *conn) canRead(acl []wire.ACL) bool {
	return c.s.cfg.SkipACL || datatree.Allowed(acl, wire.PermRead, c.identities())
}

// serve runs the connection until it closes: it answers a four-letter word or does the
// handshake, then reads requests until the client goes or the server stops.
func (c *conn) serve() {
	defer c.shutdown()
	c.s.goroutine(c.writeLoop)
	var first [4]byte
	if _, err := io.ReadFull(c.br, first[:]); err != nil {
		return
	}
	code := int32(binary.BigEndian.Uint32(first[:]))
	if word, ok := admin.IsFourLetterWord(code); ok {
		c.serveFourLetterWord(word)
		return
	}
	n, err := wire.CheckLength(code, c.s.cfg.MaxBuffer)
	if err != nil {
		c.s.logger.Debug("connect frame rejected", "remote", c.nc.RemoteAddr().String(), "err", err)
		return
	}
	body, err := wire.ReadBody(c.br, n, nil)
	if err != nil {
		return
	}
	if !c.handshake(body) {
		return
	}
	c.readLoop()
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
// request asks to close the connection.
func (c *conn) readLoop() {
	var buf []byte
	for {
		n, err := wire.ReadLength(c.br, c.s.cfg.MaxBuffer)
		if err != nil {
			if errors.Is(err, wire.ErrFrameTooLarge) {
				c.s.logger.Warn("closing connection: frame too large", "remote", c.nc.RemoteAddr().String(),
					"session_id", hexID(c.sessionID.Load()), "err", err)
			}
			return
		}
		body, err := wire.ReadBody(c.br, n, buf)
		if err != nil {
			return
		}
		buf = body[:0]
		c.stats.PacketReceived()
		c.s.received.Add(1)
		if !c.dispatch(body) {
			return
		}
	}
}

// send encodes a frame, adding its length prefix, into the outbound buffer. It returns
// false if the connection is closed or the client is too slow.
func (c *conn) send(encode func(e *wire.Encoder)) bool { return c.enqueue(true, encode) }

func (c *conn) enqueue(framed bool, encode func(e *wire.Encoder)) bool {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	empty, ok := c.beginFrameLocked()
	if !ok {
		return false
	}
	if framed {
		off := c.out.BeginFrame()
		encode(&c.out)
		c.out.EndFrame(off)
	} else {
		encode(&c.out)
	}
	return c.endFrameLocked(empty)
}

// beginFrameLocked reports whether a frame may be queued (ok), and whether the queue is
// empty, which endFrameLocked needs: one frame of any size is always accepted into an
// empty queue.
func (c *conn) beginFrameLocked() (empty, ok bool) {
	if c.closed || c.closing {
		return false, false
	}
	return c.out.Len() == 0 && c.writing == 0, true
}

// endFrameLocked counts the frame just queued and wakes the write loop, or, if the
// client has let more than maxQueuedBytes pile up (counting what the write loop holds
// and has not yet written), closes the connection.
func (c *conn) endFrameLocked(wasEmpty bool) bool {
	if !wasEmpty && c.out.Len()+c.writing > maxQueuedBytes {
		c.s.logger.Warn("closing connection: client too slow to read its replies",
			"remote", c.nc.RemoteAddr().String(), "session_id", hexID(c.sessionID.Load()),
			"queued_bytes", c.out.Len()+c.writing)
		c.closed = true
		c.nc.Close()
		return false
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
	c.outMu.Lock()
	defer c.outMu.Unlock()
	empty, ok := c.beginFrameLocked()
	if !ok {
		return
	}
	off := c.out.BeginFrame()
	h := wire.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}
	h.Encode(&c.out)
	if code == wire.OK && body != nil {
		body.Encode(&c.out)
	}
	c.out.EndFrame(off)
	c.endFrameLocked(empty)
}

// notify sends a watch notification.
func (c *conn) notify(typ wire.EventType, path string, zxid int64) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	empty, ok := c.beginFrameLocked()
	if !ok {
		return
	}
	off := c.out.BeginFrame()
	h := wire.ReplyHeader{Xid: wire.XidNotification, Zxid: zxid}
	h.Encode(&c.out)
	ev := wire.WatcherEvent{Type: typ, State: wire.StateSyncConnected, Path: path}
	ev.Encode(&c.out)
	c.out.EndFrame(off)
	c.endFrameLocked(empty)
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
	c.closed = true
	c.outMu.Unlock()
	c.nc.Close()
	c.cancel()
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
		buf := c.out.Swap(c.spare)
		c.writing = len(buf)
		closing, closed := c.closing, c.closed
		c.outMu.Unlock()
		if closed {
			return
		}
		if len(buf) > 0 {
			if _, err := c.nc.Write(buf); err != nil {
				c.close()
				return
			}
		}
		c.spare = buf[:0]
		c.outMu.Lock()
		c.writing = 0
		done := closing && c.out.Len() == 0
		c.outMu.Unlock()
		if done {
			c.close()
			return
		}
	}
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
	c.s.watches.RemoveWatcher(c)
	c.s.removeConn(c)
}
