package server_test

import (
	"cmp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/test/conformance"
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

// readOnlySession opens, or resumes (id and password), a read-only session on addr from
// the local address from. It returns the connection and the member's answer, or nil if
// the member refused (closed the connection).
func readOnlySession(t *testing.T, from, addr string, id int64, password []byte) (*conformance.Conn, *wire.ConnectResponse) {
	t.Helper()
	c, err := conformance.DialFrom(from, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if password == nil {
		password = make([]byte, wire.PasswordLen)
	}
	req := wire.ConnectRequest{Timeout: 30000, SessionID: id, Password: password, HasReadOnly: true, ReadOnly: true}
	if err := c.SendConnect(&req); err != nil {
		t.Fatal(err)
	}
	resp, _, err := c.ReadConnectResponse(5 * time.Second)
	switch {
	case conformance.IsClosed(err):
		return nil, nil
	case err != nil:
		t.Fatal(err)
	case resp.SessionID == 0 || !resp.ReadOnly:
		t.Fatalf("connect: %+v", resp)
	}
	return c, resp
}

// mntrValue returns the value of key in addr's mntr, or -1.
func mntrValue(t *testing.T, addr, key string) int64 {
	t.Helper()
	out, err := testutil.FourLetterWord(addr, "mntr", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// TestReadOnlySessionsPerAddress replays issue 31's attack on a read-only member: one
// client connects for a read-only session and leaves, over and over (its sessions
// outlive their connections until their timeout). Before, it filled the member's 65,536
// sessions in 34 s and every other read-only client was refused. Now its address gets
// maxClientCnxns sessions and is refused after that, each refusal counted in mntr; a
// client at another address is served; a session of the full address can still be
// resumed, and once its client closes it the address has room for one more.
func TestReadOnlySessionsPerAddress(t *testing.T) {
	const perAddr = 10 // maxClientCnxns: read_only_max_client_cnxns is left at 0
	e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) {
		c.ReadOnlyMode, c.MaxClientCnxns = true, perAddr
	})
	addr := e.Addrs()[0]
	e.Stop(1)
	e.Stop(2)
	testutil.Eventually(t, 15*time.Second, 20*time.Millisecond, func() bool { return isro(t, addr) == "ro" },
		"member 1 never became read-only with both peers gone")

	var first *wire.ConnectResponse
	for i := range 3 * perAddr {
		c, resp := readOnlySession(t, "127.0.0.1", addr, 0, nil)
		if (c != nil) != (i < perAddr) {
			t.Fatalf("read-only session %d from one address: made %v, want %v (the bound is %d)", i+1, c != nil, i < perAddr, perAddr)
		}
		if c != nil {
			first = cmp.Or(first, resp)
			c.Close() // the attacker leaves; the session lives on
		}
	}
	if got := mntrValue(t, addr, "zk_readonly_sessions_refused"); got != 2*perAddr {
		t.Errorf("zk_readonly_sessions_refused = %d, want %d", got, 2*perAddr)
	}
	other, _ := readOnlySession(t, "127.0.0.2", addr, 0, nil)
	if other == nil {
		t.Fatal("a client at another address was refused a read-only session")
	}
	if f := call(t, other, wire.OpGetData, &wire.PathWatchRequest{Path: "/"}); f.Header.Err != wire.OK {
		t.Fatalf("getData / on the other client's read-only session: %v", f.Header.Err)
	}

	resumed, _ := readOnlySession(t, "127.0.0.1", addr, first.SessionID, first.Password)
	if resumed == nil {
		t.Fatal("a read-only session of the full address could not be resumed")
	}
	if f := call(t, resumed, wire.OpCloseSession, nil); f.Header.Err != wire.OK {
		t.Fatalf("closeSession: %v", f.Header.Err)
	}
	if c, _ := readOnlySession(t, "127.0.0.1", addr, 0, nil); c == nil {
		t.Fatal("no room for the address once one of its sessions was closed")
	}
	if c, _ := readOnlySession(t, "127.0.0.1", addr, 0, nil); c != nil {
		t.Fatal("a session past the bound once the room was taken again")
	}
}
