package faultproxy

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain fails the run if a goroutine of a Proxy outlives the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := waitForProxyGoroutines(2 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "faultproxy: goroutines leaked:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// waitForProxyGoroutines waits until no goroutine runs code of a Proxy and returns the
// stacks of those still running when timeout passes ("" if none).
func waitForProxyGoroutines(timeout time.Duration) string {
	var leaked string
	waitFor(timeout, func() bool {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		leaked = ""
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			for _, fn := range []string{"faultproxy.(*Proxy)", "faultproxy.(*link)", "faultproxy.(*pipe)"} {
				if strings.Contains(g, fn) {
					leaked += g + "\n\n"
					break
				}
			}
		}
		return leaked == ""
	})
	return leaked
}

// waitFor polls cond until it holds (true) or timeout passes (false).
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !waitFor(2*time.Second, cond) {
		t.Fatalf("after 2s: %s", what)
	}
}

// echoServer writes back whatever a connection sends it and closes the connection when
// the client ends its side.
type echoServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// startEcho starts an echoServer on 127.0.0.1 and returns it; it is stopped at cleanup.
func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln, conns: make(map[net.Conn]struct{})}
	e.wg.Add(1)
	go e.acceptLoop()
	t.Cleanup(e.stop)
	return e
}

func (e *echoServer) addr() string { return e.ln.Addr().String() }

func (e *echoServer) acceptLoop() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.mu.Lock()
		e.conns[c] = struct{}{}
		e.mu.Unlock()
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			_, _ = io.Copy(c, c)
			_ = c.Close()
		}()
	}
}

// stop closes the listener and every connection and waits for the goroutines. It is
// idempotent.
func (e *echoServer) stop() {
	_ = e.ln.Close()
	e.mu.Lock()
	for c := range e.conns {
		_ = c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip sends msg on c and reads it back from the echo server behind the proxy.
func roundTrip(c net.Conn, msg string) error {
	if _, err := c.Write([]byte(msg)); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if string(got) != msg {
		return fmt.Errorf("read %q, want %q", got, msg)
	}
	return nil
}

// expectSilence asserts that nothing arrives on c for a while and the connection is
// still open: a read times out rather than failing.
func expectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	defer c.SetReadDeadline(time.Time{})
	n, err := c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read = %d, %v; want a timeout (silence, not an end or a reset)", n, err)
	}
}

// expectBroken asserts that a read on c fails soon with an end or a reset, not a timeout.
func expectBroken(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read = %d, %v; want an end of stream or a reset", n, err)
	}
}

// expectRefused asserts that a connection to addr is accepted and closed at once: the
// dial fails with a reset, or the first read fails with an end or a reset.
func expectRefused(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("dial: %v; want success or a reset", err)
		}
		return
	}
	defer c.Close()
	expectBroken(t, c)
}

func TestForward(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())

	const size = 4 << 20
	want := make([]byte, size)
	_, _ = rand.Read(want)
	written := make(chan error, 1)
	go func() {
		_, err := c.Write(want)
		written <- err
	}()
	got := make([]byte, size)
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes read back differ from bytes written")
	}
	eventually(t, "stats count the connection and both directions", func() bool {
		s := p.Stats()
		return s == Stats{Conns: 1, BytesForwarded: 2 * size}
	})
}

func TestHalfCloseIsForwarded(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())

	if _, err := c.Write([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	// The echo server sees the end only if the proxy passes it on; it then closes,
	// and that end comes back after the echoed bytes.
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "last words" {
		t.Fatalf("read %q, %v; want %q and an end of stream", got, err, "last words")
	}
}

func TestDelay(t *testing.T) {
	const d = 100 * time.Millisecond
	e := startEcho(t)
	p := newProxy(t, e.addr())

	t.Run("round trip", func(t *testing.T) {
		p.Delay(d)
		defer p.Delay(0)
		c := dial(t, p.Addr())
		start := time.Now()
		if err := roundTrip(c, "x"); err != nil {
			t.Fatal(err)
		}
		// Held once on the way there and once on the way back.
		if rtt := time.Since(start); rtt < 2*d {
			t.Fatalf("round trip took %v, want at least %v", rtt, 2*d)
		}
	})

	t.Run("connections do not wait for each other", func(t *testing.T) {
		p.Delay(d)
		defer p.Delay(0)
		const n = 8
		conns := make([]net.Conn, n)
		for i := range conns {
			conns[i] = dial(t, p.Addr())
		}
		start := time.Now()
		errs := make(chan error, n)
		for i, c := range conns {
			go func() { errs <- roundTrip(c, fmt.Sprint("conn ", i)) }()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		// Serialised, it would take n*2*d.
		if el := time.Since(start); el > n*2*d/2 {
			t.Fatalf("%d concurrent round trips took %v, want about %v", n, el, 2*d)
		}
	})

	t.Run("order kept under concurrent writers", func(t *testing.T) {
		p.Delay(20 * time.Millisecond)
		defer p.Delay(0)
		const conns, msgs = 4, 50
		var wg sync.WaitGroup
		errs := make(chan error, conns)
		for i := range conns {
			c := dial(t, p.Addr())
			wg.Add(2)
			go func() {
				defer wg.Done()
				for seq := range uint32(msgs) {
					var b [8]byte
					binary.BigEndian.PutUint32(b[:4], uint32(i))
					binary.BigEndian.PutUint32(b[4:], seq)
					if _, err := c.Write(b[:]); err != nil {
						errs <- err
						return
					}
					time.Sleep(time.Millisecond) // separate chunks, not one coalesced write
				}
			}()
			go func() {
				defer wg.Done()
				errs <- readSequence(c, uint32(i), msgs)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("throughput not limited to a chunk per delay", func(t *testing.T) {
		p.Delay(d)
		defer p.Delay(0)
		c := dial(t, p.Addr())
		const size = 4 << 20 // 128 chunks or more: 12.8s or more if each waited for the last
		data := make([]byte, size)
		_, _ = rand.Read(data)
		start := time.Now()
		go func() { _, _ = c.Write(data) }()
		got := make([]byte, size)
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatal("bytes read back differ from bytes written")
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("%d bytes through a %v delay took %v", size, d, el)
		}
	})

	t.Run("heal releases held chunks", func(t *testing.T) {
		p.Delay(10 * time.Second)
		c := dial(t, p.Addr())
		if _, err := c.Write([]byte("held")); err != nil {
			t.Fatal(err)
		}
		expectSilence(t, c) // held, and meanwhile surely read by the proxy
		p.Heal()
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		got := make([]byte, 4)
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("held chunk not released by Heal: %v", err)
		}
	})
}

// readSequence reads msgs 8-byte messages from c and checks that they are connection
// id's, numbered 0, 1, 2... in order.
func readSequence(c net.Conn, id uint32, msgs int) error {
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	var b [8]byte
	for want := range uint32(msgs) {
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return fmt.Errorf("conn %d: message %d: %w", id, want, err)
		}
		gotID, seq := binary.BigEndian.Uint32(b[:4]), binary.BigEndian.Uint32(b[4:])
		if gotID != id || seq != want {
			return fmt.Errorf("conn %d: got message %d of conn %d, want message %d", id, seq, gotID, want)
		}
	}
	return nil
}

func TestDrop(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	busy := dial(t, p.Addr())
	idle := dial(t, p.Addr())
	for _, c := range []net.Conn{busy, idle} {
		if err := roundTrip(c, "before"); err != nil {
			t.Fatal(err)
		}
	}

	p.Drop(true)
	if _, err := busy.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	expectSilence(t, busy)
	late := dial(t, p.Addr()) // accepted while dropping
	if _, err := late.Write([]byte("lost too")); err != nil {
		t.Fatal(err)
	}
	expectSilence(t, late)
	eventually(t, "the proxy discards what was written", func() bool {
		return p.Stats().BytesDropped == int64(len("lost")+len("lost too"))
	})

	p.Drop(false)
	expectBroken(t, busy)
	expectBroken(t, late)
	if err := roundTrip(idle, "after"); err != nil {
		t.Fatalf("a connection that lost nothing: %v", err)
	}
	if err := roundTrip(dial(t, p.Addr()), "fresh"); err != nil {
		t.Fatalf("a new connection: %v", err)
	}
}

func TestDropDiscardsHeldChunks(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	p.Delay(10 * time.Second)
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	p.Drop(true)
	eventually(t, "the held chunk is discarded", func() bool {
		return p.Stats().BytesDropped == 4
	})
	p.Heal()
	expectBroken(t, c)
}

func TestPartition(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	if err := roundTrip(c, "before"); err != nil {
		t.Fatal(err)
	}

	p.Partition()
	expectBroken(t, c)
	expectRefused(t, p.Addr())
	eventually(t, "the refused connection is counted", func() bool {
		return p.Stats().Conns == 2
	})

	p.Heal()
	if err := roundTrip(dial(t, p.Addr()), "after"); err != nil {
		t.Fatalf("a new connection after Heal: %v", err)
	}
}

func TestUnreachableTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	p := newProxy(t, target)
	expectRefused(t, p.Addr())
}

func TestCloseEndsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	e := startEcho(t)
	p, err := New(e.addr())
	if err != nil {
		t.Fatal(err)
	}

	plain := dial(t, p.Addr())
	if err := roundTrip(plain, "x"); err != nil {
		t.Fatal(err)
	}
	// A connection with a chunk held by Delay, and one whose sender has filled the
	// queue and is blocked.
	p.Delay(10 * time.Second)
	held := dial(t, p.Addr())
	if _, err := held.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	full := dial(t, p.Addr())
	writeDone := make(chan error, 1)
	go func() {
		_, err := full.Write(make([]byte, 2*queueLimit))
		writeDone <- err
	}()
	// 15 MiB: the queue is full but for a chunk and the per-chunk overheads, and the
	// reader waits for room.
	eventually(t, "a full queue held", func() bool { return p.queued() >= queueLimit-queueLimit/16 })

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, c := range []net.Conn{plain, held} {
		expectBroken(t, c)
	}
	select {
	case err := <-writeDone:
		if err == nil {
			t.Fatal("a write blocked on a full queue succeeded after Close")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a write blocked on a full queue did not fail after Close")
	}
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		_ = c.Close()
		t.Fatal("dialling a closed proxy succeeded")
	}

	e.stop()
	for _, c := range []net.Conn{plain, held, full} {
		_ = c.Close()
	}
	if !waitFor(2*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
	}
}
