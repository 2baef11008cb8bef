package bench

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// fakeServer accepts one connection on a loopback port, answers its ConnectRequest with
// a session of the given timeout and hands the connection to script.
func fakeServer(t *testing.T, timeout time.Duration, script func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := wire.ReadFrame(c, wire.DefaultMaxBuffer, nil); err != nil {
			return
		}
		resp := wire.ConnectResponse{Timeout: int32(timeout.Milliseconds()), SessionID: 0x42, Password: make([]byte, 16)}
		writeFrame(c, resp.Encode)
		script(c)
	}()
	return ln.Addr().String()
}

func writeFrame(c net.Conn, body func(e *wire.Encoder)) error {
	e := wire.NewEncoder(nil)
	off := e.BeginFrame()
	body(e)
	e.EndFrame(off)
	_, err := c.Write(e.Bytes())
	return err
}

// readRequest reads one request frame and returns its header.
func readRequest(c net.Conn) (wire.RequestHeader, error) {
	var h wire.RequestHeader
	b, err := wire.ReadFrame(c, wire.DefaultMaxBuffer, nil)
	if err != nil {
		return h, err
	}
	h.Decode(wire.NewDecoder(b))
	return h, nil
}

func replyTo(c net.Conn, xid int32) error {
	return writeFrame(c, func(e *wire.Encoder) { (&wire.ReplyHeader{Xid: xid, Zxid: 1}).Encode(e) })
}

func fakeOptions() sessionOptions {
	return sessionOptions{Timeout: 300 * time.Millisecond, RequestTimeout: 5 * time.Second,
		DialTimeout: 5 * time.Second, Window: 4, ReadBuffer: 512}
}

func exists(s *session) {
	e := s.begin(wire.OpExists, 0)
	e.String("/")
	e.Bool(false)
	s.end()
}

// A session waiting long for a reply pings (every third of the session timeout) so the
// server keeps it, and drops the ping replies.
func TestSessionPingsWhileWaiting(t *testing.T) {
	var pings atomic.Int32
	addr := fakeServer(t, 300*time.Millisecond, func(c net.Conn) {
		h, err := readRequest(c)
		if err != nil {
			return
		}
		c.SetReadDeadline(time.Now().Add(450 * time.Millisecond))
		for {
			p, err := readRequest(c)
			if err != nil {
				break
			}
			if p.Xid == wire.XidPing && p.Op == wire.OpPing {
				pings.Add(1)
				replyTo(c, wire.XidPing)
			}
		}
		replyTo(c, h.Xid)
		readRequest(c) // until the client goes
	})
	s, err := dial(t.Context(), addr, fakeOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.abort()
	exists(s)
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	r, err := s.next()
	if err != nil {
		t.Fatal(err)
	}
	if r.notification || r.req.xid != 1 || r.req.op != wire.OpExists {
		t.Errorf("got %+v, want the reply to xid 1", r)
	}
	if lat := time.Duration(r.at - r.req.start); lat < 400*time.Millisecond {
		t.Errorf("latency %v, want at least the server's 450 ms delay", lat)
	}
	if n := pings.Load(); n < 2 {
		t.Errorf("%d pings in 450 ms with a 300 ms session timeout, want at least 2", n)
	}
}

// Replies must come in request order; one that does not ends the session.
func TestSessionRejectsOutOfOrderReplies(t *testing.T) {
	addr := fakeServer(t, 300*time.Millisecond, func(c net.Conn) {
		readRequest(c)
		readRequest(c)
		replyTo(c, 2)
		replyTo(c, 1)
		readRequest(c)
	})
	s, err := dial(t.Context(), addr, fakeOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.abort()
	exists(s)
	exists(s)
	s.flush()
	if _, err := s.next(); !errors.Is(err, errOutOfOrder) {
		t.Errorf("next() = %v, want %v", err, errOutOfOrder)
	}
}

// A request that gets no reply ends the session after the request timeout.
func TestSessionGivesUpOnAStalledRequest(t *testing.T) {
	addr := fakeServer(t, 300*time.Millisecond, func(c net.Conn) {
		for {
			if _, err := readRequest(c); err != nil {
				return
			}
		}
	})
	o := fakeOptions()
	o.RequestTimeout = 250 * time.Millisecond
	s, err := dial(t.Context(), addr, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.abort()
	exists(s)
	s.flush()
	start := time.Now()
	_, err = s.next()
	if !errors.Is(err, errStalled) {
		t.Fatalf("next() = %v, want %v", err, errStalled)
	}
	if el := time.Since(start); el < o.RequestTimeout || el > 2*time.Second {
		t.Errorf("gave up after %v, want a little over %v", el, o.RequestTimeout)
	}
}

// discardConn is a net.Conn whose writes vanish.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error) { return len(b), nil }

// Issuing a request, writing it, parsing its reply and recording its latency must not
// allocate: the load generator would otherwise measure its own garbage collector.
func TestHotPathDoesNotAllocate(t *testing.T) {
	for _, workload := range []struct {
		name string
		gen  generator
		op   wire.Op
		body func(e *wire.Encoder)
	}{
		{"get", &readGen{prefix: []byte("/bench/get-x/"), nodes: 1000, op: wire.OpGetData, valueSize: 100},
			wire.OpGetData, (&wire.GetDataResponse{Data: make([]byte, 100)}).Encode},
		{"create", &createGen{prefix: []byte("/bench/create-x/"), value: make([]byte, 100)},
			wire.OpCreate, nil},
	} {
		t.Run(workload.name, func(t *testing.T) {
			s := &session{nc: discardConn{}, enc: *wire.NewEncoder(make([]byte, 0, 4096)),
				ring: make([]inflight, 5), rbuf: make([]byte, 4096)}
			w := &worker{s: s, hist: NewHistogram(), errs: map[string]int64{}}
			p := &phase{gen: workload.gen, record: true}
			var i int64
			e := wire.NewEncoder(make([]byte, 0, 4096))
			allocs := testing.AllocsPerRun(1000, func() {
				workload.gen.issue(s, i)
				if err := s.flush(); err != nil {
					t.Fatal(err)
				}
				// The server's reply arrives in the read buffer.
				e.Reset()
				off := e.BeginFrame()
				(&wire.ReplyHeader{Xid: s.xid, Zxid: i}).Encode(e)
				if workload.body != nil {
					workload.body(e)
				} else {
					putPath(e, []byte("/bench/create-x/"), i)
				}
				e.EndFrame(off)
				s.r, s.w, s.readAt = 0, copy(s.rbuf, e.Bytes()), nanotime()
				r, ok, err := s.buffered()
				if !ok || err != nil {
					t.Fatalf("buffered() = %v, %v", ok, err)
				}
				w.handle(p, r)
				i++
			})
			if allocs != 0 {
				t.Errorf("%v allocations per request", allocs)
			}
			if w.done.Load() == 0 || len(w.errs) != 0 {
				t.Errorf("done %d, errors %v: the replies were not accepted", w.done.Load(), w.errs)
			}
		})
	}
}
