package conformance

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// maxReplyFrame bounds the replies Conn accepts. Servers have no limit on what they send;
// the suite never asks for more than a few megabytes.
const maxReplyFrame = 64 << 20

// Conn is a raw ZooKeeper client connection: it sends any request with any xid, or any
// bytes, and reads every reply and notification in wire order. It does nothing on its own
// (no pings, no reconnects), so the server sees exactly what a test sends. A Conn is not
// safe for concurrent use.
type Conn struct {
	nc  net.Conn
	br  *bufio.Reader
	buf []byte

	// pending holds the requests sent and not yet answered, oldest first, so that a reply
	// can be decoded by the opcode of the request with its xid.
	pending []pendingRequest
	xid     int32 // last xid handed out by NextXid

	// LastZxid is the largest zxid seen in a reply header (not in pings or notifications),
	// as clients track it for reconnects.
	LastZxid int64
}

type pendingRequest struct {
	xid int32
	op  wire.Op
}

// Dial opens a TCP connection to addr without sending anything.
func Dial(addr string, timeout time.Duration) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, br: bufio.NewReader(nc)}, nil
}

// DialFrom opens a TCP connection to addr from the local IP address local (another
// loopback address, 127.0.0.2, is another client address to the server).
func DialFrom(local, addr string, timeout time.Duration) (*Conn, error) {
	d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, br: bufio.NewReader(nc)}, nil
}

// Close closes the TCP connection; the session stays alive on the server until it expires.
func (c *Conn) Close() error { return c.nc.Close() }

// LocalAddr returns the client side of the connection, as 4lw commands print it.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// WriteRaw writes b as is, for malformed frames and four-letter words.
func (c *Conn) WriteRaw(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write(b)
	return err
}

// WriteFrame writes payload with its 4-byte length prefix.
func (c *Conn) WriteFrame(payload []byte) error {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(payload)), uint32(len(payload)))
	return c.WriteRaw(append(b, payload...))
}

// SendConnect writes a ConnectRequest frame. req.HasReadOnly selects whether the optional
// readOnly byte is sent (Java and kazoo send it, go-zookeeper/zk does not).
func (c *Conn) SendConnect(req *wire.ConnectRequest) error {
	e := wire.NewEncoder(nil)
	req.Encode(e)
	return c.WriteFrame(e.Bytes())
}

// ReadConnectResponse reads the server's answer to a ConnectRequest and returns it with
// the frame's payload length (36 without the readOnly byte, 37 with it, for a 16-byte password).
func (c *Conn) ReadConnectResponse(timeout time.Duration) (*wire.ConnectResponse, int, error) {
	body, err := c.readFrame(timeout)
	if err != nil {
		return nil, 0, err
	}
	var resp wire.ConnectResponse
	d := wire.NewDecoder(body)
	resp.Decode(d)
	if d.Err() != nil {
		return nil, len(body), fmt.Errorf("conformance: decode ConnectResponse: %w", d.Err())
	}
	return &resp, len(body), nil
}

// NextXid returns the next request xid: 1, 2, 3, ... as the Java client numbers them.
func (c *Conn) NextXid() int32 {
	c.xid++
	return c.xid
}

// Send writes a request with the given xid; rec may be nil for requests without a body.
func (c *Conn) Send(xid int32, op wire.Op, rec wire.Record) error {
	e := wire.NewEncoder(nil)
	if rec != nil {
		rec.Encode(e)
	}
	return c.SendBody(xid, op, e.Bytes())
}

// SendBody writes a request whose body is given as raw bytes, e.g. a truncated record.
func (c *Conn) SendBody(xid int32, op wire.Op, body []byte) error {
	e := wire.NewEncoder(nil)
	off := e.BeginFrame()
	(&wire.RequestHeader{Xid: xid, Op: op}).Encode(e)
	b := append(e.Bytes(), body...)
	binary.BigEndian.PutUint32(b[off:], uint32(len(b)-off-4))
	if err := c.WriteRaw(b); err != nil {
		return err
	}
	c.pending = append(c.pending, pendingRequest{xid: xid, op: op})
	return nil
}

// Frame is one reply or notification as read from the wire.
type Frame struct {
	Header wire.ReplyHeader
	// Op is the opcode of the request this frame answers (matched by xid, oldest pending
	// first), OpNotification for xid -1, or OpError if no pending request has the xid.
	Op wire.Op
	// Body is the payload after the 16-byte header.
	Body []byte
	// Len is the frame's payload length (header included).
	Len int
}

// ErrShortFrame is returned for a frame too short to hold a ReplyHeader.
var ErrShortFrame = errors.New("conformance: frame shorter than a reply header")

// ReadFrame reads the next reply or notification, waiting at most timeout. io.EOF means the
// server closed the connection.
func (c *Conn) ReadFrame(timeout time.Duration) (*Frame, error) {
	body, err := c.readFrame(timeout)
	if err != nil {
		return nil, err
	}
	if len(body) < 16 {
		return nil, fmt.Errorf("%w: %d bytes", ErrShortFrame, len(body))
	}
	f := &Frame{Len: len(body), Body: body[16:]}
	d := wire.NewDecoder(body)
	f.Header.Decode(d)
	f.Op = c.matchPending(f.Header.Xid)
	if f.Op != wire.OpNotification && f.Op != wire.OpPing && f.Header.Zxid > c.LastZxid {
		c.LastZxid = f.Header.Zxid
	}
	return f, nil
}

// matchPending removes and returns the op of the oldest pending request with xid.
func (c *Conn) matchPending(xid int32) wire.Op {
	if xid == wire.XidNotification {
		return wire.OpNotification
	}
	for i, p := range c.pending {
		if p.xid == xid {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			return p.op
		}
	}
	return wire.OpError
}

func (c *Conn) readFrame(timeout time.Duration) ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	body, err := wire.ReadFrame(c.br, maxReplyFrame, c.buf)
	if err != nil {
		return nil, err
	}
	c.buf = body[:0]
	out := make([]byte, len(body)) // frames outlive the next read
	copy(out, body)
	return out, nil
}

// IsClosed reports whether err means the server closed (or reset) the connection.
func IsClosed(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// IsTimeout reports whether err is a read deadline passing.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// NewResponse returns an empty response record for a reply to op with err == 0, or nil if
// that reply has no body.
func NewResponse(op wire.Op) wire.Record {
	switch op {
	case wire.OpNotification:
		return &wire.WatcherEvent{}
	case wire.OpCreate, wire.OpSync:
		return &wire.PathRecord{}
	case wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		return &wire.Create2Response{}
	case wire.OpExists, wire.OpSetData, wire.OpSetACL:
		return &wire.StatResponse{}
	case wire.OpGetData:
		return &wire.GetDataResponse{}
	case wire.OpGetACL:
		return &wire.GetACLResponse{}
	case wire.OpGetChildren, wire.OpGetEphemerals:
		return &wire.ChildrenResponse{}
	case wire.OpGetChildren2:
		return &wire.ChildrenResponse{WithStat: true}
	case wire.OpMulti, wire.OpMultiRead:
		return &wire.MultiResponse{}
	case wire.OpGetAllChildrenNumber, wire.OpAddWatch:
		return &wire.IntResponse{}
	case wire.OpWhoAmI:
		return &wire.WhoAmIResponse{}
	}
	return nil
}

// Decode decodes the frame's body by the opcode it answers. It returns the record (nil if
// the reply has no body: an error reply, or an op without a response record) and the
// number of body bytes left over, which should be zero.
func (f *Frame) Decode() (wire.Record, int, error) {
	rec := NewResponse(f.Op)
	if f.Header.Err != wire.OK && f.Op != wire.OpNotification {
		rec = nil // ZooKeeper sends no body with an error
	}
	if rec == nil {
		return nil, len(f.Body), nil
	}
	d := wire.NewDecoder(f.Body)
	rec.Decode(d)
	if d.Err() != nil {
		return nil, 0, fmt.Errorf("conformance: decode %v reply: %w", f.Op, d.Err())
	}
	return rec, d.Remaining(), nil
}
