package server_test

import (
	"slices"
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
