package conformance

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// DefaultReadTimeout bounds the wait for one frame a scenario expects.
const DefaultReadTimeout = 10 * time.Second

// Scenario is one run of a scenario function against one server. The function drives
// sessions through it; everything they send and receive goes into the transcript. A fatal
// problem (a connection that cannot be made, a frame that does not come) aborts the run
// with Fatalf, which records the reason as the transcript's last line.
type Scenario struct {
	// Addr is the server's client address.
	Addr string
	// Root is the scenario's own top-level path; nothing else uses it.
	Root string
	// T is the transcript.
	T *Transcript

	sessions []*Session
}

type abort struct{ msg string }

// Run runs fn against the server at addr with its own root path and returns the rendered
// transcript. err is non-nil if fn aborted (the transcript then ends with the reason).
//
// Afterwards, without recording, every session fn left open is closed (reconnecting dropped
// ones) and the root's subtree is deleted, so that no session expiry, TTL expiry or container
// reaping happens later, in another scenario, and consumes a zxid there.
func Run(addr, root string, fn func(*Scenario)) (transcript string, err error) {
	sc := &Scenario{Addr: addr, Root: root, T: NewTranscript(root)}
	func() {
		defer func() {
			if r := recover(); r != nil {
				a, ok := r.(abort)
				if !ok {
					panic(r)
				}
				sc.T.Add("ABORTED: %s", a.msg)
				err = fmt.Errorf("conformance: scenario aborted: %s", a.msg)
			}
		}()
		fn(sc)
	}()
	sc.cleanup()
	text := sc.T.Render() // before deleteTree: times must be judged against this run
	sc.deleteTree()
	return text, err
}

// Fatalf aborts the scenario.
func (sc *Scenario) Fatalf(format string, args ...any) {
	panic(abort{fmt.Sprintf(format, args...)})
}

// Note adds a comment line to the transcript, to make it readable.
func (sc *Scenario) Note(format string, args ...any) {
	sc.T.Add("# "+format, args...)
}

// Path returns Root + "/" + rel, or Root for "".
func (sc *Scenario) Path(rel string) string {
	if rel == "" {
		return sc.Root
	}
	return sc.Root + "/" + rel
}

func (sc *Scenario) cleanup() {
	for _, s := range sc.sessions {
		s.closeQuietly()
	}
}

// deleteTree deletes the scenario's root and everything under it in one multi, as the
// super user (both targets are configured with the super digest of super:test), so that
// no container or TTL node can be reaped halfway.
func (sc *Scenario) deleteTree() {
	c, err := Dial(sc.Addr, 5*time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	if c.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, wire.PasswordLen)}) != nil {
		return
	}
	if _, _, err := c.ReadConnectResponse(DefaultReadTimeout); err != nil {
		return
	}
	call := func(op wire.Op, rec wire.Record) *Frame {
		xid := c.NextXid()
		if c.Send(xid, op, rec) != nil {
			return nil
		}
		for {
			f, err := c.ReadFrame(DefaultReadTimeout)
			if err != nil {
				return nil
			}
			if f.Header.Xid == xid {
				return f
			}
		}
	}
	call(wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("super:test")})
	var ops []wire.MultiOp
	var walk func(path string)
	walk = func(path string) {
		f := call(wire.OpGetChildren, &wire.PathWatchRequest{Path: path})
		if f == nil || f.Header.Err != wire.OK {
			return
		}
		rec, _, err := f.Decode()
		if err != nil {
			return
		}
		for _, child := range rec.(*wire.ChildrenResponse).Children {
			walk(path + "/" + child)
		}
		ops = append(ops, wire.MultiOp{Op: wire.OpDelete, Req: &wire.PathVersionRequest{Path: path, Version: -1}})
	}
	walk(sc.Root)
	if len(ops) > 0 {
		call(wire.OpMulti, &wire.MultiRequest{Ops: ops})
	}
	call(wire.OpCloseSession, nil)
}

// ConnectOptions are the fields of a ConnectRequest a scenario varies.
type ConnectOptions struct {
	// Timeout is the requested session timeout in ms; zero means 10000.
	Timeout int32
	// ReadOnlyByte sends the optional trailing readOnly byte, with value ReadOnly.
	ReadOnlyByte bool
	ReadOnly     bool
	// SessionID and Password resume a session; LastZxidSeen is sent as is.
	SessionID    int64
	Password     []byte
	LastZxidSeen int64
}

// Session is one client connection of a scenario with its session state.
type Session struct {
	Label    string
	ID       int64
	Password []byte
	Timeout  int32

	sc     *Scenario
	c      *Conn
	open   bool // the TCP connection is usable
	closed bool // the session was closed (closeSession) or refused
}

// Connect opens a new connection and session labelled label (e.g. "s1") and records the
// handshake. The session is closed at the end of the scenario if still open.
func (sc *Scenario) Connect(label string, o ConnectOptions) *Session {
	s := &Session{Label: label, sc: sc}
	sc.sessions = append(sc.sessions, s)
	s.handshake(o, true)
	return s
}

// Dial opens a connection that is not (yet) a session, for raw bytes and four-letter words.
func (sc *Scenario) Dial(label string) *Session {
	c, err := Dial(sc.Addr, 5*time.Second)
	if err != nil {
		sc.Fatalf("%s: dial %s: %v", label, sc.Addr, err)
	}
	s := &Session{Label: label, sc: sc, c: c, open: true, closed: true}
	sc.sessions = append(sc.sessions, s)
	return s
}

func (s *Session) handshake(o ConnectOptions, record bool) *wire.ConnectResponse {
	c, err := Dial(s.sc.Addr, 5*time.Second)
	if err != nil {
		s.sc.Fatalf("%s: dial %s: %v", s.Label, s.sc.Addr, err)
	}
	s.c, s.open = c, true
	req := &wire.ConnectRequest{
		LastZxidSeen: o.LastZxidSeen, Timeout: o.Timeout, SessionID: o.SessionID,
		Password: o.Password, HasReadOnly: o.ReadOnlyByte, ReadOnly: o.ReadOnly,
	}
	if req.Timeout == 0 {
		req.Timeout = 10000
	}
	if req.Password == nil {
		req.Password = make([]byte, wire.PasswordLen)
	}
	if record {
		s.sc.T.Add("%s > %s", s.Label, s.sc.T.DescribeConnectRequest(req))
	}
	if err := c.SendConnect(req); err != nil {
		s.sc.Fatalf("%s: send ConnectRequest: %v", s.Label, err)
	}
	resp, n, err := c.ReadConnectResponse(DefaultReadTimeout)
	if err != nil {
		if IsClosed(err) {
			s.open = false
			if record {
				s.sc.T.Add("%s < closed by server", s.Label)
			}
			return nil
		}
		s.sc.Fatalf("%s: read ConnectResponse: %v", s.Label, err)
	}
	if resp.SessionID != 0 {
		s.ID, s.Password, s.Timeout = resp.SessionID, resp.Password, resp.Timeout
		s.closed = false
		s.sc.T.AddSession(s.Label, resp.SessionID, resp.Password)
	} else {
		s.closed = true
	}
	if record {
		s.sc.T.Add("%s < %s", s.Label, s.sc.T.DescribeConnectResponse(resp, n))
	}
	return resp
}

// Reconnect drops the current connection (if any) and resumes the session on a new one,
// sending lastZxidSeen as the Java client would. It records the handshake.
func (s *Session) Reconnect(o ConnectOptions) *wire.ConnectResponse {
	if s.open {
		s.c.Close()
		s.open = false
	}
	o.SessionID, o.Password = s.ID, s.Password
	if o.LastZxidSeen == 0 && s.c != nil {
		o.LastZxidSeen = s.c.LastZxid
	}
	if o.Timeout == 0 {
		o.Timeout = s.Timeout
	}
	last := s.c
	resp := s.handshake(o, true)
	if last != nil && s.c != last {
		s.c.LastZxid = max(s.c.LastZxid, last.LastZxid)
		s.c.xid = last.xid
	}
	return resp
}

// Conn returns the session's current raw connection.
func (s *Session) Conn() *Conn { return s.c }

// Send sends a request with the given xid and records it; it does not wait for the reply.
func (s *Session) Send(xid int32, op wire.Op, rec wire.Record) {
	s.sc.T.Add("%s > #%d %s", s.Label, xid, DescribeRequest(op, rec))
	s.sent(op, s.c.Send(xid, op, rec))
}

// SendBody sends a request with a raw body and records it with desc.
func (s *Session) SendBody(xid int32, op wire.Op, body []byte, desc string) {
	s.sc.T.Add("%s > #%d %v %s", s.Label, xid, op, desc)
	s.sent(op, s.c.SendBody(xid, op, body))
}

// sent handles the result of writing a request. Whether a write to a connection the server
// has closed fails or the following read does is a race, so both are recorded the same way,
// once: later reads on a closed connection return nil without a record.
func (s *Session) sent(op wire.Op, err error) {
	switch {
	case !s.open:
		s.sc.T.Add("%s < closed by server", s.Label)
	case err == nil:
	case IsClosed(err):
		s.open = false
		s.sc.T.Add("%s < closed by server", s.Label)
	default:
		s.sc.Fatalf("%s: send %v: %v", s.Label, op, err)
	}
}

// WriteRaw writes bytes as is and records desc.
func (s *Session) WriteRaw(b []byte, desc string) {
	s.sc.T.Add("%s > raw %s", s.Label, desc)
	s.sent(wire.OpError, s.c.WriteRaw(b))
}

// Call sends a request with the next xid and reads frames until its reply, recording all
// of them (notifications that arrive first included). It returns the reply, or nil if the
// server closed the connection first.
func (s *Session) Call(op wire.Op, rec wire.Record) *Frame {
	return s.CallXid(s.c.NextXid(), op, rec)
}

// CallXid is Call with a chosen xid.
func (s *Session) CallXid(xid int32, op wire.Op, rec wire.Record) *Frame {
	s.Send(xid, op, rec)
	return s.ReadUntil(xid)
}

// ReadUntil reads and records frames until the reply with xid arrives (returned), or the
// connection closes (nil).
func (s *Session) ReadUntil(xid int32) *Frame {
	for {
		f := s.Read()
		if f == nil || (f.Header.Xid == xid && f.Op != wire.OpNotification) {
			return f
		}
	}
}

// Read reads and records the next frame; nil means the server closed the connection.
func (s *Session) Read() *Frame {
	return s.ReadWithin(DefaultReadTimeout)
}

// ReadWithin is Read with a longer wait, for events that come from timers (container
// reaping, TTL expiry).
func (s *Session) ReadWithin(timeout time.Duration) *Frame {
	if !s.open {
		return nil
	}
	f, err := s.c.ReadFrame(timeout)
	if err != nil {
		if IsClosed(err) {
			s.open = false
			s.sc.T.Add("%s < closed by server", s.Label)
			return nil
		}
		s.sc.Fatalf("%s: read: %v", s.Label, err)
	}
	s.sc.T.Add("%s < %s", s.Label, DescribeFrame(f))
	return f
}

// ExpectClosed reads and records frames until the server closes the connection.
func (s *Session) ExpectClosed() {
	for s.Read() != nil {
	}
}

// Barrier sends a sync and reads up to its reply. Replies and notifications are in order on
// a connection, so anything the server owed this session before the barrier shows up in
// the transcript before the barrier's reply: it is how "nothing else arrives" is checked
// without sleeping.
func (s *Session) Barrier() {
	s.Call(wire.OpSync, &wire.PathRecord{Path: "/"})
}

// ReadText reads everything until the server closes the connection, for four-letter words.
func (s *Session) ReadText() string {
	s.c.nc.SetReadDeadline(time.Now().Add(DefaultReadTimeout))
	b, err := io.ReadAll(s.c.br)
	if err != nil && !IsClosed(err) {
		s.sc.Fatalf("%s: read: %v", s.Label, err)
	}
	s.open = false
	return string(b)
}

// Drop closes the TCP connection without closing the session, as a network failure would.
func (s *Session) Drop() {
	s.sc.T.Add("%s: connection dropped by client", s.Label)
	s.c.Close()
	s.open = false
}

// Close closes the session (closeSession) and expects the server to close the connection.
func (s *Session) Close() {
	s.Call(wire.OpCloseSession, nil)
	s.ExpectClosed()
	s.closed = true
}

// closeQuietly closes a session left open, without recording: on its connection if that is
// still usable, else on a new one.
func (s *Session) closeQuietly() {
	defer func() {
		if s.c != nil {
			s.c.Close()
		}
	}()
	if s.closed || s.ID == 0 {
		return
	}
	if !s.open {
		c, err := Dial(s.sc.Addr, 5*time.Second)
		if err != nil {
			return
		}
		s.c.Close()
		s.c = c
		req := &wire.ConnectRequest{Timeout: s.Timeout, SessionID: s.ID, Password: s.Password}
		if c.SendConnect(req) != nil {
			return
		}
		if resp, _, err := c.ReadConnectResponse(DefaultReadTimeout); err != nil || resp.SessionID == 0 {
			return
		}
	}
	xid := s.c.NextXid()
	if s.c.Send(xid, wire.OpCloseSession, nil) != nil {
		return
	}
	for {
		f, err := s.c.ReadFrame(DefaultReadTimeout)
		if err != nil || (f.Header.Xid == xid && f.Op != wire.OpNotification) {
			return
		}
	}
}

// Lines splits text into lines without a trailing empty one.
func Lines(text string) []string {
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// CallQuiet sends a request with the next xid and returns its reply without recording
// anything, for replies a scenario records only in part; nil means the connection closed.
func (s *Session) CallQuiet(op wire.Op, rec wire.Record) *Frame {
	xid := s.c.NextXid()
	if err := s.c.Send(xid, op, rec); err != nil {
		s.sc.Fatalf("%s: send %v: %v", s.Label, op, err)
	}
	for {
		f, err := s.c.ReadFrame(DefaultReadTimeout)
		if err != nil {
			if IsClosed(err) {
				s.open = false
				return nil
			}
			s.sc.Fatalf("%s: read: %v", s.Label, err)
		}
		if f.Header.Xid == xid && f.Op != wire.OpNotification {
			return f
		}
	}
}
