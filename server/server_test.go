package server_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

func connect(t *testing.T, addr string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(zkLogger{t}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for e := range ev {
		if e.State == zk.StateHasSession {
			return c, ev
		}
	}
	t.Fatal("no session")
	return nil, nil
}

type zkLogger struct{ t *testing.T }

func (l zkLogger) Printf(format string, args ...any) {}

func TestSmoke(t *testing.T) {
	addr := testutil.StartPaddock(t, nil)
	c, _ := connect(t, addr)
	if _, err := c.Create("/a", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	data, stat, err := c.Get("/a")
	if err != nil || string(data) != "hello" || stat.Version != 0 {
		t.Fatalf("get: %q %+v %v", data, stat, err)
	}
	children, _, err := c.Children("/")
	if err != nil || !slices.Equal(children, []string{"a", "zookeeper"}) {
		t.Fatalf("children %v %v", children, err)
	}
	_, _, ch, err := c.GetW("/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/a", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-ch:
		if e.Type != zk.EventNodeDataChanged {
			t.Fatalf("event %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
	}
}

// TestRestartKeepsSessionsAndWatches restarts the server under a go-zookeeper/zk client:
// the client reconnects to the same session, its ephemeral survives, and the watches it
// re-registers with setWatches fire for changes made after the restart.
func TestRestartKeepsSessionsAndWatches(t *testing.T) {
	cfg := testutil.PaddockConfig(t)
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClientAddr = "127.0.0.1:" + strconv.Itoa(port)
	srv := testutil.StartServer(t, cfg)
	c, events := connect(t, cfg.ClientAddr)
	sid := c.SessionID()
	if _, err := c.Create("/w", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/w/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, _, dataW, err := c.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childW, err := c.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	waitState(t, events, zk.StateDisconnected)
	testutil.StartServer(t, cfg)
	waitState(t, events, zk.StateHasSession)
	if c.SessionID() != sid {
		t.Fatalf("session changed across restart: %x -> %x", sid, c.SessionID())
	}
	other, _ := connect(t, cfg.ClientAddr)
	if _, err := other.Set("/w", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create("/w/new", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan zk.Event{"data": dataW, "child": childW} {
		select {
		case e := <-ch:
			if e.Path != "/w" {
				t.Fatalf("%s watch fired %+v", name, e)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s watch did not fire after the restart", name)
		}
	}
	children, _, err := c.Children("/w")
	if err != nil || !slices.Equal(children, []string{"eph", "new"}) {
		t.Fatalf("children after restart: %v %v", children, err)
	}
}

func waitState(t *testing.T, events <-chan zk.Event, want zk.State) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case e := <-events:
			if e.State == want {
				return
			}
		case <-timeout:
			t.Fatalf("client never reached %v", want)
		}
	}
}
