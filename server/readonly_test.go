package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// isro asks addr whether it is read-only.
func isro(t *testing.T, addr string) string {
	t.Helper()
	out, err := testutil.FourLetterWord(addr, "isro", time.Second)
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}

// TestReadOnlyMember: in read-only mode, a member whose two peers are gone serves a
// go-zookeeper client that asks for a read-only session (coordinator.ReadOnlyDialer)
// from its tree, answers its writes and syncs NotReadOnly and keeps it connected, refuses
// a client that does not ask, reports itself read-only (isro, srvr, mntr), and closes
// the read-only session's connection once a peer is back and it follows a leader again.
func TestReadOnlyMember(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) { c.ReadOnlyMode = true })
	addrs := e.Addrs()
	for i, a := range addrs {
		if got := isro(t, a); got != "rw" {
			t.Fatalf("isro on healthy member %d = %q, want rw", i+1, got)
		}
	}
	w, _ := connectTo(t, addrs[:1])
	for _, p := range []string{"/ro", "/ro/a", "/ro/b"} {
		if _, err := w.Create(p, []byte("v"+p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()

	e.Stop(1)
	e.Stop(2)
	testutil.Eventually(t, 15*time.Second, 20*time.Millisecond, func() bool { return isro(t, addrs[0]) == "ro" },
		"member 1 never became read-only with both peers gone")
	srvr, _ := testutil.FourLetterWord(addrs[0], "srvr", time.Second)
	if !strings.Contains(srvr, "READ-ONLY mode; serving only read-only clients\n") || !strings.Contains(srvr, "Mode: read-only\n") {
		t.Errorf("srvr on the read-only member:\n%s", srvr)
	}
	mntr, _ := testutil.FourLetterWord(addrs[0], "mntr", time.Second)
	if !strings.Contains(mntr, "zk_server_state\tread-only\n") {
		t.Errorf("mntr on the read-only member has no zk_server_state read-only:\n%s", mntr)
	}

	ro, events := connectTo(t, addrs[:1], coordinator.ReadOnlyDialer(nil))
	data, _, err := ro.Get("/ro")
	if err != nil || string(data) != "v/ro" {
		t.Fatalf("get /ro on the read-only member = %q, %v", data, err)
	}
	if children, _, err := ro.Children("/ro"); err != nil || strings.Join(children, ",") != "a,b" && strings.Join(children, ",") != "b,a" {
		t.Fatalf("children of /ro = %v, %v", children, err)
	}
	writes := map[string]func() error{
		"create": func() error { _, err := ro.Create("/ro/c", nil, 0, zk.WorldACL(zk.PermAll)); return err },
		"set":    func() error { _, err := ro.Set("/ro/a", []byte("x"), -1); return err },
		"delete": func() error { return ro.Delete("/ro/a", -1) },
		"sync":   func() error { _, err := ro.Sync("/ro"); return err },
		"multi": func() error {
			_, err := ro.Multi(&zk.SetDataRequest{Path: "/ro/a", Data: []byte("x"), Version: -1})
			return err
		},
	}
	for name, write := range writes {
		if err := write(); !coordinator.IsNotReadOnly(err) {
			t.Errorf("%s on a read-only session: %v, want NotReadOnly (-119)", name, err)
		}
	}
	if data, _, err := ro.Get("/ro/a"); err != nil || string(data) != "v/ro/a" {
		t.Fatalf("after the refused writes: get /ro/a = %q, %v; the session should still serve reads", data, err)
	}

	// A client that does not ask for a read-only session is not taken.
	plain, _, err := zk.Connect(addrs[:1], 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	time.Sleep(500 * time.Millisecond)
	if st := plain.State(); st == zk.StateHasSession {
		t.Fatal("a client that did not ask for a read-only session got one")
	}

	// A peer back: a quorum again. The read-only session's connection is closed.
	drain(events)
	e.Start(1)
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool { return isro(t, addrs[0]) == "rw" },
		"member 1 not read-write once a peer was back")
	if !sawState(events, zk.StateDisconnected, 10*time.Second) {
		t.Fatal("the read-only session's connection stayed open once the member served again")
	}
	waitConnected(t, plain)
	if _, err := plain.Create("/ro/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("write on the member once it serves again: %v", err)
	}
}

// drain empties events.
func drain(events <-chan zk.Event) {
	for {
		select {
		case <-events:
		default:
			return
		}
	}
}

// sawState waits up to timeout for an event with state st.
func sawState(events <-chan zk.Event, st zk.State, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-events:
			if ev.State == st {
				return true
			}
		case <-deadline:
			return false
		}
	}
}
