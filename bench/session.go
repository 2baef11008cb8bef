package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// epoch is the origin of nanotime, the monotonic clock every timestamp here is taken on.
var epoch = time.Now()

// nanotime returns the nanoseconds since epoch on the monotonic clock.
func nanotime() int64 { return int64(time.Since(epoch)) }

// maxReplyFrame bounds the replies a session accepts. Servers do not apply jute.maxbuffer
// to what they send (a large getChildren can exceed it), so the bound is generous.
const maxReplyFrame = 64 << 20

// Errors that end a session.
var (
	errRefused    = errors.New("bench: server refused the session (session id 0)")
	errOutOfOrder = errors.New("bench: reply out of order")
	errStalled    = errors.New("bench: no reply within the request timeout")
	errShortFrame = errors.New("bench: reply frame shorter than a reply header")
)

// inflight is a request sent and not yet answered.
type inflight struct {
	xid   int32
	op    wire.Op
	idx   int64 // the workload's index of the op, for checking the reply
	start int64 // nanotime just before the write that carried it
}

// reply is a frame read from the server: the answer to req, or a notification.
type reply struct {
	hdr          wire.ReplyHeader
	req          inflight // zero for a notification
	notification bool
	body         []byte // after the header; aliases the read buffer until the next read
	at           int64  // nanotime when the read that completed the frame returned
}

// session is one ZooKeeper session over one TCP connection, driven by one goroutine: it
// encodes requests into a write buffer that one write sends (so a window of requests
// costs one syscall), keeps the requests in flight in a FIFO ring (the server answers a
// session's requests in order, which the ring checks by xid), and parses replies in place
// from its read buffer. Nothing on this path allocates or locks.
//
// Idle sessions ping: a read that sees nothing for a third of the session timeout since
// the last write sends a ping, whose reply (xid -2) is dropped, as clients do.
// A session is not safe for concurrent use.
type session struct {
	nc        net.Conn
	id        int64
	pingEvery int64 // ns
	reqTimout int64 // ns: a request older than this ends the session
	stopCtx   func() bool

	enc       wire.Encoder
	frameOff  int   // offset in enc of the frame begun by begin
	unstamped int   // requests encoded since the last flush
	lastWrite int64 // nanotime of the last write
	xid       int32

	ring    []inflight // requests in flight, oldest at head
	head, n int

	rbuf   []byte // rbuf[r:w] is read and not yet parsed
	r, w   int
	readAt int64 // nanotime when the last read returned
}

// sessionOptions say how to open sessions.
type sessionOptions struct {
	Timeout        time.Duration // session timeout asked for
	RequestTimeout time.Duration // a request unanswered for this long ends the session
	DialTimeout    time.Duration // the TCP connect and the handshake
	Window         int           // the most requests in flight
	ReadBuffer     int           // initial read buffer size
}

// dial connects to addr and opens a new session. The connection is closed when ctx is
// cancelled, which ends any blocked read or write with an error.
func dial(ctx context.Context, addr string, o sessionOptions) (*session, error) {
	d := net.Dialer{Timeout: o.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &session{
		nc:        nc,
		reqTimout: int64(o.RequestTimeout),
		enc:       *wire.NewEncoder(make([]byte, 0, 4096)),
		ring:      make([]inflight, o.Window+1), // +1: closeSession after a full window
		rbuf:      make([]byte, max(o.ReadBuffer, 512)),
	}
	s.stopCtx = context.AfterFunc(ctx, func() { nc.Close() })
	if err := s.handshake(o); err != nil {
		s.abort()
		return nil, fmt.Errorf("bench: handshake with %s: %w", addr, err)
	}
	return s, nil
}

// handshake sends a ConnectRequest for a new session and reads the ConnectResponse.
func (s *session) handshake(o sessionOptions) error {
	req := wire.ConnectRequest{Timeout: int32(o.Timeout.Milliseconds()), Password: make([]byte, wire.PasswordLen)}
	off := s.enc.BeginFrame()
	req.Encode(&s.enc)
	s.enc.EndFrame(off)
	s.nc.SetDeadline(time.Now().Add(o.DialTimeout))
	if _, err := s.nc.Write(s.enc.Bytes()); err != nil {
		return err
	}
	s.enc.Reset()
	body, err := wire.ReadFrame(s.nc, maxReplyFrame, nil)
	if err != nil {
		return err
	}
	var resp wire.ConnectResponse
	d := wire.NewDecoder(body)
	resp.Decode(d)
	if d.Err() != nil {
		return fmt.Errorf("decode ConnectResponse: %w", d.Err())
	}
	if resp.SessionID == 0 {
		return errRefused
	}
	s.id = resp.SessionID
	s.pingEvery = int64(time.Duration(resp.Timeout) * time.Millisecond / 3)
	s.nc.SetWriteDeadline(time.Time{})
	now := nanotime()
	s.lastWrite = now
	s.setDeadline(now + s.pingEvery)
	return nil
}

// inFlight returns the number of requests awaiting a reply.
func (s *session) inFlight() int { return s.n }

// begin starts a request frame of type op and returns the encoder for its body; end
// finishes it. The request is in flight from then on and is sent by the next flush.
func (s *session) begin(op wire.Op, idx int64) *wire.Encoder {
	if s.n == len(s.ring) {
		panic("bench: more requests in flight than the session's window")
	}
	s.xid++
	s.frameOff = s.enc.BeginFrame()
	s.enc.Int(s.xid)
	s.enc.Int(int32(op))
	s.ring[(s.head+s.n)%len(s.ring)] = inflight{xid: s.xid, op: op, idx: idx}
	s.n++
	return &s.enc
}

// end finishes the frame begun by begin.
func (s *session) end() {
	s.enc.EndFrame(s.frameOff)
	s.unstamped++
}

// pending reports whether requests are encoded and not yet written.
func (s *session) pending() bool { return s.enc.Len() > 0 }

// flush writes the encoded requests in one write, stamping each with the time just before.
func (s *session) flush() error {
	now := nanotime()
	for i := 1; i <= s.unstamped; i++ {
		s.ring[(s.head+s.n-i)%len(s.ring)].start = now
	}
	s.unstamped = 0
	s.lastWrite = now
	_, err := s.nc.Write(s.enc.Bytes())
	s.enc.Reset()
	return err
}

// next returns the next reply or notification, reading from the connection if none is
// buffered. It answers the server's ping replies itself and checks that replies come in
// the order the requests went out.
func (s *session) next() (reply, error) {
	for {
		r, ok, err := s.buffered()
		if ok || err != nil {
			return r, err
		}
		if err := s.fill(); err != nil {
			return reply{}, err
		}
	}
}

// buffered returns the next reply if it is already in the read buffer.
func (s *session) buffered() (reply, bool, error) {
	for {
		avail := s.w - s.r
		if avail < 4 {
			return reply{}, false, nil
		}
		size, err := wire.CheckLength(int32(binary.BigEndian.Uint32(s.rbuf[s.r:])), maxReplyFrame)
		if err != nil {
			return reply{}, false, err
		}
		if avail < 4+size {
			return reply{}, false, nil
		}
		body := s.rbuf[s.r+4 : s.r+4+size]
		s.r += 4 + size
		if size < 16 {
			return reply{}, false, fmt.Errorf("%w: %d bytes", errShortFrame, size)
		}
		r := reply{body: body[16:], at: s.readAt}
		d := wire.NewDecoder(body[:16])
		r.hdr.Decode(d)
		switch r.hdr.Xid {
		case wire.XidPing:
			continue
		case wire.XidNotification:
			r.notification = true
			return r, true, nil
		}
		if s.n == 0 || s.ring[s.head].xid != r.hdr.Xid {
			want := int32(0)
			if s.n > 0 {
				want = s.ring[s.head].xid
			}
			return reply{}, false, fmt.Errorf("%w: xid %d, want %d", errOutOfOrder, r.hdr.Xid, want)
		}
		r.req = s.ring[s.head]
		s.head = (s.head + 1) % len(s.ring)
		s.n--
		return r, true, nil
	}
}

// fill reads at least one more byte into the read buffer, making room first. While it
// waits it sends a ping once a third of the session timeout has passed since the last
// write, and gives up on a request older than the request timeout.
func (s *session) fill() error {
	s.makeRoom()
	for {
		n, err := s.nc.Read(s.rbuf[s.w:])
		if n > 0 {
			s.w += n
			s.readAt = nanotime()
			return nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if err := s.idle(); err != nil {
			return err
		}
	}
}

// makeRoom moves the unparsed bytes to the front of the read buffer and grows it if the
// frame they begin does not fit.
func (s *session) makeRoom() {
	need := 4
	if s.w-s.r >= 4 {
		need += int(binary.BigEndian.Uint32(s.rbuf[s.r:])) // checked by buffered
	}
	if need > len(s.rbuf) {
		grown := make([]byte, need+need/4)
		s.w = copy(grown, s.rbuf[s.r:s.w])
		s.r, s.rbuf = 0, grown
		return
	}
	if s.r == s.w {
		s.r, s.w = 0, 0
	} else if len(s.rbuf)-s.r < need || len(s.rbuf)-s.w < len(s.rbuf)/8 {
		s.w = copy(s.rbuf, s.rbuf[s.r:s.w])
		s.r = 0
	}
}

// idle runs when a read's deadline passes: it checks for a stalled request, pings if the
// session has been quiet, and sets the next deadline.
func (s *session) idle() error {
	now := nanotime()
	if s.n > 0 && now-s.ring[s.head].start > s.reqTimout {
		return fmt.Errorf("%w: xid %d (%v) waited %v", errStalled, s.ring[s.head].xid, s.ring[s.head].op,
			time.Duration(now-s.ring[s.head].start).Round(time.Millisecond))
	}
	if now-s.lastWrite >= s.pingEvery {
		if err := s.ping(now); err != nil {
			return err
		}
	}
	s.setDeadline(max(s.lastWrite, now) + s.pingEvery)
	return nil
}

// ping writes a ping request, which is not in the ring: its reply is dropped on sight.
func (s *session) ping(now int64) error {
	xid, op := wire.XidPing, wire.OpPing
	var b [12]byte
	binary.BigEndian.PutUint32(b[0:], 8)
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	binary.BigEndian.PutUint32(b[8:], uint32(op))
	s.lastWrite = now
	_, err := s.nc.Write(b[:])
	return err
}

func (s *session) setDeadline(at int64) {
	s.nc.SetReadDeadline(epoch.Add(time.Duration(at)))
}

// close ends the session with closeSession, waiting up to timeout for the reply, and
// closes the connection. Requests still in flight are abandoned.
func (s *session) close(timeout time.Duration) error {
	defer s.abort()
	s.enc.Reset()
	s.unstamped = 0
	s.begin(wire.OpCloseSession, -1)
	s.end()
	s.nc.SetWriteDeadline(time.Now().Add(timeout))
	if err := s.flush(); err != nil {
		return err
	}
	s.reqTimout = int64(timeout)
	s.setDeadline(nanotime() + int64(timeout))
	for {
		r, err := s.next()
		if err != nil {
			return fmt.Errorf("bench: closeSession: %w", err)
		}
		if !r.notification && r.req.op == wire.OpCloseSession {
			return nil
		}
	}
}

// abort closes the connection without ending the session.
func (s *session) abort() {
	s.stopCtx()
	s.nc.Close()
}
