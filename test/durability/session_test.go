package durability

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/test/conformance"
)

const (
	// sessionTick is the session test's tick: expiry is checked on its boundaries.
	sessionTick = 200 * time.Millisecond
	// resumedTimeout is the timeout of the session whose client comes back: far longer
	// than a restart takes, including go-zookeeper/zk's one-second reconnect back-off.
	resumedTimeout = 20 * time.Second
	// orphanTimeout is the timeout of the session whose client never comes back.
	orphanTimeout = 4 * time.Second
)

// TestSessionsAcrossRestart kills the server under two sessions. The one whose client
// comes back within its timeout is resumed by go-zookeeper/zk with the same id, and keeps
// its ephemeral nodes and its watch; the one whose client never comes back gets a fresh
// timeout from the restart, expires when it runs out, and its ephemeral node goes. A
// session closed before a crash stays closed.
func TestSessionsAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := testutil.PaddockProcessOptions{
		DataDir: filepath.Join(dir, "data"),
		Env:     []string{fmt.Sprintf("PADDOCK_SERVER_TICK_TIME=%v", sessionTick), "PADDOCK_SERVER_MAX_SESSION_TIMEOUT=60s"},
		LogPath: filepath.Join(dir, "server-1.log"),
	}
	p := startPaddock(t, opts)

	var events eventLog
	a, err := connect(p.Addr, resumedTimeout, nil, nil, events.add)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	aID := a.SessionID()
	mustCreate(t, a, "/s", 0)
	mustCreate(t, a, "/s/watched", 0)
	aEph := []string{mustCreate(t, a, "/s/a-eph", zk.FlagEphemeral), mustCreate(t, a, "/s/a-seq-", zk.FlagEphemeral|zk.FlagSequence)}
	_, _, watch, err := a.GetW("/s/watched")
	if err != nil {
		t.Fatal(err)
	}
	bID, bPassword := orphanSession(t, p.Addr, "/s/b-eph")

	before, err := p.Zxid()
	if err != nil {
		t.Fatal(err)
	}
	mark := events.len()
	p.Kill()
	checkLog(t, p, "before the crash")

	// The same port: the client reconnects to the address it knows.
	opts.Port, opts.Fixed, opts.LogPath = p.Port(), true, filepath.Join(dir, "server-2.log")
	p = startPaddock(t, opts)
	if z, err := p.Zxid(); err != nil || z < before {
		t.Fatalf("restarted at zxid 0x%x (%v); it was 0x%x before the crash", z, err, before)
	}
	c, err := connect(p.Addr, 10*time.Second, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The orphan got a fresh timeout at recovery, which came after the process started.
	if ok, _, err := c.Exists("/s/b-eph"); err != nil || (!ok && time.Since(p.Started) < orphanTimeout) {
		t.Errorf("/s/b-eph exists: %v (%v) %v after the restart; its session (timeout %v) expired early",
			ok, err, time.Since(p.Started), orphanTimeout)
	}

	testutil.Eventually(t, 15*time.Second, 10*time.Millisecond, func() bool {
		return slices.Contains(events.since(mark), zk.StateHasSession)
	}, "go-zookeeper/zk did not get its session back after the restart; session events since the crash: %v", events.since(mark))
	if got := a.SessionID(); got != aID || slices.Contains(events.since(mark), zk.StateExpired) {
		t.Fatalf("after the restart the client has session 0x%x (events %v); want 0x%x resumed", got, events.since(mark), aID)
	}
	for _, path := range aEph {
		checkOwner(t, c, path, aID)
	}
	if _, err := c.Set("/s/watched", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-watch:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/s/watched" {
			t.Errorf("watch fired with %+v, want NodeDataChanged on /s/watched", ev)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the data watch set before the crash did not fire after the restart")
	}
	aEph = append(aEph, mustCreate(t, a, "/s/a-after", zk.FlagEphemeral))

	// The orphan expires once its fresh timeout runs out, not before.
	var gone time.Duration
	testutil.Eventually(t, orphanTimeout+10*time.Second, 20*time.Millisecond, func() bool {
		ok, _, err := c.Exists("/s/b-eph")
		gone = time.Since(p.Started)
		return err == nil && !ok
	}, "/s/b-eph of the orphaned session (timeout %v) still exists", orphanTimeout)
	if gone < orphanTimeout {
		t.Errorf("the orphaned session (timeout %v) expired %v after the restart", orphanTimeout, gone)
	}
	t.Logf("the orphaned session expired %v after the restart", gone.Round(time.Millisecond))
	if resp := resumeRaw(t, p.Addr, bID, bPassword); resp.SessionID != 0 || resp.Timeout > 0 {
		t.Errorf("resuming the expired session 0x%x: %+v, want it refused as expired (session id 0, timeout 0)", bID, resp)
	}
	for _, path := range aEph {
		checkOwner(t, c, path, aID)
	}

	// A closed session is gone for good: the crash must not bring it back.
	a.Close()
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool {
		ok, _, err := c.Exists("/s/a-eph")
		return err == nil && !ok
	}, "/s/a-eph is still there after its session was closed")
	p.Kill()
	checkLog(t, p, "after the restart")
	opts.LogPath = filepath.Join(dir, "server-3.log")
	p = startPaddock(t, opts)
	d, err := connect(p.Addr, 10*time.Second, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	children, _, err := d.Children("/s")
	if err != nil || !slices.Equal(children, []string{"watched"}) {
		t.Errorf("after closing every session and a crash, /s has %q (%v), want only watched", children, err)
	}
	checkLog(t, p, "after the second restart")
}

// eventLog records a go-zookeeper/zk client's session states; the client's own event
// channel drops events when nobody reads it.
type eventLog struct {
	mu     sync.Mutex
	states []zk.State
}

func (l *eventLog) add(e zk.Event) {
	if e.Type != zk.EventSession {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states = append(l.states, e.State)
}

func (l *eventLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.states)
}

func (l *eventLog) since(i int) []zk.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.states[i:])
}

func mustCreate(t *testing.T, c *zk.Conn, path string, flags int32) string {
	t.Helper()
	got, err := c.Create(path, []byte(path), flags, worldACL)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return got
}

func checkOwner(t *testing.T, c *zk.Conn, path string, owner int64) {
	t.Helper()
	ok, stat, err := c.Exists(path)
	if err != nil || !ok {
		t.Errorf("%s: exists %v (%v); want it owned by session 0x%x", path, ok, err, owner)
	} else if stat.EphemeralOwner != owner {
		t.Errorf("%s is owned by session 0x%x, want 0x%x", path, stat.EphemeralOwner, owner)
	}
}

// orphanSession opens a session with a raw client, creates an ephemeral node in it and
// leaves: the client never pings, reconnects or closes the session.
func orphanSession(t *testing.T, addr, path string) (id int64, password []byte) {
	t.Helper()
	conn, err := conformance.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp := handshake(t, conn, &wire.ConnectRequest{Timeout: int32(orphanTimeout.Milliseconds()), Password: make([]byte, 16)})
	if got := time.Duration(resp.Timeout) * time.Millisecond; got != orphanTimeout {
		t.Fatalf("negotiated timeout %v, want %v", got, orphanTimeout)
	}
	req := &wire.CreateRequest{Path: path, Data: []byte(path), Flags: 1, // ephemeral
		ACL: []wire.ACL{{Perms: wire.PermAll, Scheme: "world", ID: "anyone"}}}
	if err := conn.Send(conn.NextXid(), wire.OpCreate, req); err != nil {
		t.Fatal(err)
	}
	f, err := conn.ReadFrame(5 * time.Second)
	if err != nil || f.Header.Err != wire.OK {
		t.Fatalf("create %s: %+v, %v", path, f, err)
	}
	return resp.SessionID, resp.Password
}

// resumeRaw asks to resume session id with password and returns the server's answer.
func resumeRaw(t *testing.T, addr string, id int64, password []byte) *wire.ConnectResponse {
	t.Helper()
	conn, err := conformance.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return handshake(t, conn, &wire.ConnectRequest{Timeout: int32(orphanTimeout.Milliseconds()), SessionID: id, Password: password})
}

func handshake(t *testing.T, conn *conformance.Conn, req *wire.ConnectRequest) *wire.ConnectResponse {
	t.Helper()
	if err := conn.SendConnect(req); err != nil {
		t.Fatal(err)
	}
	resp, _, err := conn.ReadConnectResponse(5 * time.Second)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return resp
}
