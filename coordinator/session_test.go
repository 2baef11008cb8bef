package coordinator

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/paddock/paddock/internal/testutil"
)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string // "" for valid
	}{
		{DefaultConfig(), ""},
		{Config{SessionTimeout: time.Second}, "servers: none given"},
		{Config{Servers: []string{"localhost"}, SessionTimeout: time.Second}, `server "localhost": want host:port`},
		{Config{Servers: []string{"a:1"}}, "session timeout 0s"},
		{Config{Servers: []string{"a:1"}, SessionTimeout: time.Second, Auth: []Auth{{Scheme: "digest"}}}, "scheme and credentials"},
	} {
		err := c.cfg.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestParseAuth(t *testing.T) {
	a, err := ParseAuth("digest:user:pass")
	if err != nil || a != (Auth{Scheme: "digest", Credentials: "user:pass"}) {
		t.Errorf("ParseAuth = %+v, %v", a, err)
	}
	for _, bad := range []string{"", "digest", "digest:", ":x"} {
		if _, err := ParseAuth(bad); err == nil {
			t.Errorf("ParseAuth(%q) accepted", bad)
		}
	}
}

func TestConnectUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	_, err = Connect(ctx, Config{Servers: []string{addr}, SessionTimeout: time.Second})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Connect to nothing = %v, want the deadline and the address", err)
	}
}

// TestSessionLifecycle: states in order through a disconnection and an expiry; the kept
// ephemeral node is re-created under the new session; Close ends everything.
func TestSessionLifecycle(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		cut := testutil.NewCutter()
		// Longer than the client's second between reconnection attempts, so that a short
		// cut keeps the session.
		const timeout = 2 * time.Second // the most both servers grant at 100 ms ticks
		s := connect(t, addr, cuttable(cut), func(c *Config) { c.SessionTimeout = timeout })
		root := testRoot(t, s)
		events, cancel := s.Subscribe()
		defer cancel()
		if ev := nextEvent(t, events); ev.State != StateConnected || ev.SessionID == 0 {
			t.Fatalf("first event %+v, want connected with a session", ev)
		}
		if got := s.Timeout(); got != timeout {
			t.Errorf("negotiated timeout %v, want %v", got, timeout)
		}
		e, err := s.KeepEphemeral(ctxT(t), root+"/member", []byte("v1"))
		if err != nil {
			t.Fatal(err)
		}

		// A short cut: the same session comes back.
		first := s.SessionID()
		cut.Cut()
		if ev := nextEvent(t, events); ev.State != StateSuspended {
			t.Fatalf("after a cut: %+v, want suspended", ev)
		}
		cut.Restore()
		if ev := nextEvent(t, events); ev.State != StateConnected || ev.NewSession || ev.SessionID != first {
			t.Fatalf("after reconnecting: %+v, want the same session 0x%x", ev, first)
		}

		// A cut past the timeout: lost, then a new session, and the node is back.
		expire(t, s, cut)
		want := []State{StateSuspended, StateLost, StateConnected}
		for _, st := range want {
			ev := nextEvent(t, events)
			if ev.State != st {
				t.Fatalf("during expiry: %+v, want %v (sequence %v)", ev, st, want)
			}
			if st == StateConnected && (!ev.NewSession || ev.SessionID == first) {
				t.Fatalf("after expiry: %+v, want a new session", ev)
			}
		}
		testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
			data, stat, err := s.Conn().Get(e.Path())
			return err == nil && string(data) == "v1" && stat.EphemeralOwner == s.SessionID()
		}, "kept node not re-created under the new session")

		// Someone deletes it: it comes back.
		other := connect(t, addr)
		if err := other.Conn().Delete(e.Path(), -1); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
			ok, stat, err := other.Conn().Exists(e.Path())
			return err == nil && ok && stat.EphemeralOwner == s.SessionID()
		}, "kept node not re-created after a delete")

		// Another session cannot take it over.
		if _, err := other.KeepEphemeral(ctxT(t), e.Path(), nil); !errors.Is(err, ErrNodeTaken) {
			t.Errorf("KeepEphemeral of a node held by another session = %v, want ErrNodeTaken", err)
		}
		if err := e.Set(ctxT(t), []byte("v2")); err != nil {
			t.Fatal(err)
		}
		if err := e.Remove(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if ok, _, _ := other.Conn().Exists(e.Path()); ok {
			t.Error("node still there after Remove")
		}

		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, events); ev.State != StateClosed {
			t.Fatalf("after Close: %+v, want closed", ev)
		}
		if _, ok := <-events; ok {
			t.Error("events not closed after StateClosed")
		}
		if err := s.WaitConnected(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("WaitConnected after Close = %v", err)
		}
		s.Close() // idempotent
	})
}

// TestSessionCloseDropsEphemerals: Close ends the session at once, so its kept nodes
// go with it.
func TestSessionCloseDropsEphemerals(t *testing.T) {
	addr := paddockBackend.addr(t)
	s := connect(t, addr)
	root := testRoot(t, s)
	if _, err := s.KeepEphemeral(ctxT(t), root+"/n", nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	other := connect(t, addr)
	if ok, _, err := other.Conn().Exists(root + "/n"); err != nil || ok {
		t.Errorf("after Close the node exists=%v (err %v)", ok, err)
	}
	if _, err := s.KeepEphemeral(ctxT(t), root+"/m", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("KeepEphemeral after Close = %v", err)
	}
}

// TestSessionNegotiatedTimeout: the Session knows the timeout the server granted, not
// the one it asked for, and declares the session lost by that one.
func TestSessionNegotiatedTimeout(t *testing.T) {
	s := connect(t, paddockBackend.addr(t), func(c *Config) { c.SessionTimeout = 10 * time.Millisecond })
	if got, want := s.Timeout(), 2*testTick; got != want {
		t.Errorf("Timeout() = %v, want the server's minimum %v", got, want)
	}
}

// TestSessionAuth: credentials are added to the session (a node only that digest user
// may read is readable), and waiting for an unreachable server with credentials is
// bounded by the context, not by the client's retry cycle.
func TestSessionAuth(t *testing.T) {
	addr := paddockBackend.addr(t)
	auth := Auth{Scheme: "digest", Credentials: "alice:secret"}
	s := connect(t, addr, func(c *Config) { c.Auth = []Auth{auth} })
	root := testRoot(t, s)
	if _, err := s.Conn().Create(root+"/private", []byte("x"), 0, zk.DigestACL(zk.PermAll, "alice", "secret")); err != nil {
		t.Fatal(err)
	}
	if data, _, err := s.Conn().Get(root + "/private"); err != nil || string(data) != "x" {
		t.Errorf("read with the credentials: %q, %v", data, err)
	}
	other := connect(t, addr)
	if _, _, err := other.Conn().Get(root + "/private"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("read without the credentials: %v, want ErrNoAuth", err)
	}

	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Connect(ctx, Config{Servers: []string{"127.0.0.1:" + strconv.Itoa(port)}, SessionTimeout: time.Second, Auth: []Auth{auth}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 2*time.Second {
		t.Errorf("Connect with credentials to nothing = %v after %v, want the deadline", err, time.Since(start))
	}
}
