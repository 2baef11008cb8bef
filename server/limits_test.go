package server_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/test/conformance"
)

// rawSession opens a raw connection with a new session.
func rawSession(t *testing.T, addr string) *conformance.Conn {
	t.Helper()
	c, err := conformance.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, 16)}); err != nil {
		t.Fatal(err)
	}
	resp, _, err := c.ReadConnectResponse(5 * time.Second)
	if err != nil || resp.SessionID == 0 {
		t.Fatalf("connect: %+v %v", resp, err)
	}
	return c
}

// call sends one request and returns its reply, skipping notifications.
func call(t *testing.T, c *conformance.Conn, op wire.Op, rec wire.Record) *conformance.Frame {
	t.Helper()
	xid := c.NextXid()
	if err := c.Send(xid, op, rec); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := c.ReadFrame(10 * time.Second)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if f.Header.Xid == xid {
			return f
		}
	}
}

func waitClosed(t *testing.T, c *conformance.Conn) {
	t.Helper()
	for {
		_, err := c.ReadFrame(10 * time.Second)
		if conformance.IsClosed(err) {
			return
		}
		if err != nil {
			t.Fatalf("want the server to close the connection, got %v", err)
		}
	}
}

func TestMaxClientCnxnsPerIP(t *testing.T) {
	addr := testutil.StartPaddock(t, func(c *server.Config) { c.MaxClientCnxns = 2 })
	a := rawSession(t, addr)
	rawSession(t, addr)
	third, err := conformance.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	third.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, 16)})
	if _, _, err := third.ReadConnectResponse(5 * time.Second); !conformance.IsClosed(err) {
		t.Fatalf("third connection from one IP: want it closed unanswered, got %v", err)
	}
	a.Close()
	testutil.Eventually(t, 5*time.Second, 20*time.Millisecond, func() bool {
		c, err := conformance.Dial(addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, 16)})
		resp, _, err := c.ReadConnectResponse(time.Second)
		return err == nil && resp.SessionID != 0
	}, "a slot freed by a closed connection is never reused")
}

// TestBadClientDisturbsNoOne: an oversized frame closes that connection only; its session
// and ephemerals live on, and every other session carries on.
func TestBadClientDisturbsNoOne(t *testing.T) {
	addr := testutil.StartPaddock(t, func(c *server.Config) { c.MaxBuffer = 4096 })
	good, bad := rawSession(t, addr), rawSession(t, addr)
	f := call(t, bad, wire.OpCreate, &wire.CreateRequest{Path: "/bad-eph", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral})
	if f.Header.Err != wire.OK {
		t.Fatalf("create: %v", f.Header.Err)
	}
	if err := bad.SendBody(bad.NextXid(), wire.OpSetData, make([]byte, 8192)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, bad)
	f = call(t, good, wire.OpExists, &wire.PathWatchRequest{Path: "/bad-eph"})
	if f.Header.Err != wire.OK {
		t.Fatalf("the bad client's ephemeral went with its connection: %v", f.Header.Err)
	}
	f = call(t, good, wire.OpCreate, &wire.CreateRequest{Path: "/good", ACL: wire.OpenACLUnsafe})
	if f.Header.Err != wire.OK {
		t.Fatalf("another session was disturbed: %v", f.Header.Err)
	}
}

// TestSlowReaderIsDisconnected: a client that asks for far more than it reads is cut off
// once its queued replies pass the limit, and never holds up anyone else.
func TestSlowReaderIsDisconnected(t *testing.T) {
	srv := testutil.StartServer(t, testutil.PaddockConfig(t))
	addr := srv.Addr().String()
	setup := rawSession(t, addr)
	big := make([]byte, 1000_000)
	if f := call(t, setup, wire.OpCreate, &wire.CreateRequest{Path: "/big", Data: big, ACL: wire.OpenACLUnsafe}); f.Header.Err != wire.OK {
		t.Fatalf("create: %v", f.Header.Err)
	}
	slow := rawSession(t, addr)
	const asked = 200 // 200 MB of replies, never read
	for i := 0; i < asked; i++ {
		if err := slow.Send(slow.NextXid(), wire.OpGetData, &wire.PathWatchRequest{Path: "/big"}); err != nil {
			break // the server already hung up
		}
	}
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() bool { return srv.Stats().Connections == 1 },
		"the slow reader's connection was never closed")
	other := rawSession(t, addr)
	if f := call(t, other, wire.OpExists, &wire.PathWatchRequest{Path: "/big"}); f.Header.Err != wire.OK {
		t.Fatalf("another client was held up: %v", f.Header.Err)
	}
	var n int
	for {
		_, err := slow.ReadFrame(10 * time.Second)
		if err != nil {
			if !conformance.IsClosed(err) {
				t.Fatalf("want the slow reader disconnected, got %v after %d replies", err, n)
			}
			break
		}
		n++
	}
	// The server may hold 64 MiB for a client, plus what the kernel buffers (a few MB
	// for a socket nobody reads): about 70 one-megabyte replies, never twice that.
	if n > 80 {
		t.Fatalf("the slow reader got %d one-megabyte replies before it was cut off: the server held more than its 64 MiB limit", n)
	}
}

func TestAdminHTTP(t *testing.T) {
	cfg := testutil.PaddockConfig(t)
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.AdminPprof = true
	srv := testutil.StartServer(t, cfg)
	c, _ := connect(t, srv.Addr().String())
	if _, err := c.Create("/metrics-node", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get("http://" + srv.AdminAddr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return string(b)
	}
	if body := get("/commands/srvr"); !strings.Contains(body, `"server_stats"`) || !strings.Contains(body, `"command": "server_stats"`) {
		t.Fatalf("srvr: %s", body)
	}
	if body := get("/commands/mntr"); !strings.Contains(body, `"znode_count": 6,`) {
		t.Fatalf("mntr does not count the new znode: %s", body)
	}
	if body := get("/metrics"); !strings.Contains(body, "zk_znode_count") && !strings.Contains(body, "znode") {
		t.Fatalf("metrics: %.500s", body)
	}
	if body := get("/debug/pprof/"); !strings.Contains(body, "goroutine") {
		t.Fatalf("pprof index: %.300s", body)
	}
}

// TestFourLetterWordWhitelist: a word off the whitelist is refused in ZooKeeper's words,
// and go-zookeeper/zk's FLWSrvr parses srvr (the default whitelist).
func TestFourLetterWordWhitelist(t *testing.T) {
	addr := testutil.StartPaddock(t, func(c *server.Config) { c.FourLetterWords = []string{"srvr"} })
	stats, ok := zk.FLWSrvr([]string{addr}, 5*time.Second)
	if !ok || stats[0].Error != nil || stats[0].Mode != zk.ModeStandalone {
		t.Fatalf("FLWSrvr: %+v", stats[0])
	}
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write([]byte("ruok"))
	got, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "ruok is not executed because it is not in the whitelist.\n" {
		t.Fatalf("ruok off the whitelist: %q", got)
	}
}
