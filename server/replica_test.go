package server_test

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/admin"
	"github.com/paddock/paddock/server/wire"
)

// connectTo connects to one of the given servers, through dial if it is not nil.
func connectTo(t *testing.T, addrs []string, dial ...zk.Dialer) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	d := zk.Dialer(net.DialTimeout)
	if len(dial) > 0 {
		d = dial[0]
	}
	c, ev, err := zk.Connect(addrs, 4*time.Second, zk.WithLogger(zkLogger{t}), zk.WithDialer(d))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitConnected(t, c)
	return c, ev
}

func waitConnected(t *testing.T, c *zk.Conn) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() bool {
		return c.State() == zk.StateHasSession
	}, "no session")
}

func TestEnsembleReplicatesWritesToEveryMember(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 1, nil)
	addrs := e.Addrs()
	writer, _ := connectTo(t, addrs[1:2])
	for i := range 50 {
		if _, err := writer.Create(fmt.Sprintf("/n%02d", i), []byte{byte(i)}, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	_, stat, err := writer.Get("/n49")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range addrs {
		c, _ := connectTo(t, []string{a})
		if _, err := c.Sync("/n49"); err != nil {
			t.Fatalf("member %d: sync: %v", i+1, err)
		}
		children, _, err := c.Children("/")
		if err != nil || len(children) != 51 {
			t.Fatalf("member %d: %d children, %v; want 50 and zookeeper", i+1, len(children), err)
		}
		data, st, err := c.Get("/n49")
		if err != nil || !bytes.Equal(data, []byte{49}) || st.Mzxid != stat.Mzxid {
			t.Errorf("member %d: /n49 = %v mzxid %x, %v; want [49] mzxid %x", i+1, data, st.Mzxid, err, stat.Mzxid)
		}
	}
	// The zxid's epoch counts the terms of the log: at least 2 (term 1 is the
	// bootstrap, the first leader's the second).
	if epoch := stat.Mzxid >> 32; epoch < 2 {
		t.Errorf("zxid %x: epoch %d, want at least 2", stat.Mzxid, epoch)
	}
	modes := map[string]int{}
	for i := range addrs {
		modes[e.Server(i).Stats().Mode]++
	}
	if modes[admin.ModeLeader] != 1 || modes[admin.ModeFollower] != 2 || modes[admin.ModeObserver] != 1 {
		t.Errorf("modes %v; want one leader, two followers, one observer", modes)
	}
	config, _, err := writer.Get("/zookeeper/config")
	if err != nil || !strings.Contains(string(config), "server.4=127.0.0.1:") ||
		!strings.Contains(string(config), ":observer;127.0.0.1:") || !strings.HasSuffix(string(config), "version=0") {
		t.Errorf("/zookeeper/config = %q, %v", config, err)
	}
}

func TestEnsembleSessionMovesBetweenMembers(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) { c.TickTime = 200 * time.Millisecond })
	addrs := e.Addrs()
	// A client that can only reach member 1 creates an ephemeral node, then its
	// connection moves to member 2 (the dialer refuses member 1 once cut).
	var mu sync.Mutex
	allowed := addrs[0]
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		mu.Lock()
		ok := address == allowed
		mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("test dialer: %s not allowed", address)
		}
		return net.DialTimeout(network, address, timeout)
	}
	c, _ := connectTo(t, addrs[:2], dialer)
	if _, err := c.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	mu.Lock()
	allowed = addrs[1]
	mu.Unlock()
	e.Server(0).Close() // drops the connection; member 1 is gone for good
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		return c.State() == zk.StateHasSession && c.Server() == addrs[1]
	}, "client did not move to member 2")
	if c.SessionID() != sid {
		t.Fatalf("session %x after the move, want %x", c.SessionID(), sid)
	}
	// The session outlives its timeout on the new member: the member reports its
	// traffic to whichever member leads. What shows a timeout has passed is a second
	// session on member 2, with the same timeout, whose client goes silent after the
	// move: once the leader has expired it, it would have expired the first too had
	// member 2 not reported it.
	var silentConn net.Conn
	silenced := false
	silentDialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if silenced {
			return nil, fmt.Errorf("test dialer: client silenced")
		}
		conn, err := net.DialTimeout(network, address, timeout)
		silentConn = conn
		return conn, err
	}
	silent, _ := connectTo(t, addrs[1:2], silentDialer)
	if _, err := silent.Create("/silent", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	silenced = true
	silentConn.Close()
	mu.Unlock()
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		ok, _, err := c.Exists("/silent")
		return err == nil && !ok
	}, "the silent client's session did not expire")
	if ok, _, err := c.Exists("/eph"); err != nil || !ok || c.SessionID() != sid {
		t.Fatalf("ephemeral node after the move, once a silent session expired: exists %v, %v (session %x, want %x)",
			ok, err, c.SessionID(), sid)
	}
	// Closing the session removes the ephemeral node everywhere.
	c.Close()
	other, _ := connectTo(t, addrs[2:])
	testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
		ok, _, err := other.Exists("/eph")
		return err == nil && !ok
	}, "ephemeral node outlived its session")
}

func TestEnsembleExpiresSessionsOfSilentClients(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) { c.TickTime = 100 * time.Millisecond })
	addrs := e.Addrs()
	follower := (e.Leader() + 1) % 3
	c, _ := connectTo(t, addrs[follower:follower+1])
	if _, err := c.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// The client goes silent without closing its session: the leader expires it.
	e.Stop(follower)
	watcher, _ := connectTo(t, []string{addrs[e.Leader()]})
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		ok, _, err := watcher.Exists("/eph")
		return err == nil && !ok
	}, "the silent client's session did not expire")
}

func TestEnsembleLeaderFailover(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 0, nil)
	addrs := e.Addrs()
	c, _ := connectTo(t, addrs)
	if _, err := c.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, before, _ := c.Get("/before")
	old := e.Leader()
	e.Stop(old)
	start := time.Now()
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		l := e.Leader()
		return l >= 0 && l != old
	}, "no new leader")
	t.Logf("new leader after %v", time.Since(start).Round(time.Millisecond))
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		_, err := c.Create("/after", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || err == zk.ErrNodeExists
	}, "no write after the failover")
	_, after, err := c.Get("/after")
	if err != nil || after.Czxid>>32 <= before.Czxid>>32 {
		t.Errorf("zxid after failover %x, before %x, %v: want a later epoch", after.Czxid, before.Czxid, err)
	}
	// The old leader comes back and catches up.
	e.Start(old)
	e.WaitServing()
	back, _ := connectTo(t, addrs[old:old+1])
	if _, err := back.Sync("/after"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := back.Exists("/after"); err != nil || !ok {
		t.Errorf("restarted member: /after exists %v, %v", ok, err)
	}
}

// TestEnsembleRollingRestartMovesAMember follows docs/ensemble.md: member 3 moves to
// a new peer port, every member restarted in turn with the new configuration.
func TestEnsembleRollingRestartMovesAMember(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 0, nil)
	c, _ := connectTo(t, e.Addrs())
	if _, err := c.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	old := e.Configs[2].Ensemble[2]
	moved, err := server.ParseMember(old)
	if err != nil {
		t.Fatal(err)
	}
	entry := fmt.Sprintf("3=127.0.0.1:%d:%d;%s", port, port, moved.ClientAddr)
	for _, i := range []int{0, 1, 2} { // member 3 last
		e.Stop(i)
		e.Configs[i].Ensemble = append(e.Configs[i].Ensemble[:2:2], entry)
		e.Start(i)
		// Until member 3 restarts, the members restarted before it dial its new
		// address, where nothing listens yet: a majority serves, not all.
		testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
			_, err := c.Create(fmt.Sprintf("/after-%d", i+1), nil, 0, zk.WorldACL(zk.PermAll))
			return err == nil || err == zk.ErrNodeExists
		}, "no writes after restarting member %d", i+1)
	}
	e.WaitServing()
	// Member 3 takes part on its new address: with member 1 down, 2 and 3 are the quorum.
	e.Stop(0)
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		_, err := c.Create("/quorum-of-2-and-3", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || err == zk.ErrNodeExists
	}, "members 2 and 3 take no writes: member 3 is not reachable on its new address")
}

func TestEnsembleReconfigAddsAndRemovesMembers(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) { c.ReconfigEnabled, c.SkipACL = true, true })
	c, _ := connectTo(t, e.Addrs()[:3])
	if _, err := c.Create("/before", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, cfgStat, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatal(err)
	}
	watch := configWatch(t, c)

	// A fourth member starts empty and waits; the reconfig adds it.
	four, entry := e.AddMember(false)
	e.Start(four)
	if _, err := c.IncrementalReconfig([]string{entry}, nil, 12345); err != zk.ErrBadVersion {
		t.Errorf("reconfig at a wrong config version: %v, want ErrBadVersion", err)
	}
	stat, err := c.IncrementalReconfig([]string{entry}, nil, -1)
	if err != nil {
		t.Fatalf("reconfig adding member 4: %v", err)
	}
	if stat.Version != cfgStat.Version+1 || stat.Mzxid <= cfgStat.Mzxid {
		t.Errorf("/zookeeper/config stat after reconfig: version %d mzxid %x; before %d %x", stat.Version, stat.Mzxid,
			cfgStat.Version, cfgStat.Mzxid)
	}
	select {
	case ev := <-watch:
		if ev.Type != zk.EventNodeDataChanged {
			t.Errorf("config watch: %v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Error("no watch event for /zookeeper/config")
	}
	e.WaitServing()
	joined, _ := connectTo(t, e.Addrs()[four:])
	if _, err := joined.Sync("/before"); err != nil {
		t.Fatal(err)
	}
	data, _, err := joined.Get("/before")
	if err != nil || string(data) != "x" {
		t.Fatalf("member 4 reads /before = %q, %v", data, err)
	}
	config, _, _ := joined.Get("/zookeeper/config")
	if !strings.Contains(string(config), "server.4=") || !strings.Contains(string(config), fmt.Sprintf("version=%x", stat.Mzxid)) {
		t.Errorf("member 4's /zookeeper/config = %q", config)
	}
	// The leader's figures are its Raft status as its watchLoop last read it (every
	// election timeout / 10): member 4 may serve before they count it.
	var q *admin.QuorumStats
	if !testutil.WaitFor(10*time.Second, 20*time.Millisecond, func() bool {
		q = e.Server(e.Leader()).Stats().Quorum
		return q != nil && q.Size == 4 && q.Followers == 3
	}) {
		t.Errorf("leader's quorum stats %+v, want size 4 and 3 followers", q)
	}

	// Removing member 1 leaves 2, 3 and 4, which go on without it.
	if _, err := joined.IncrementalReconfig(nil, []string{"1"}, -1); err != nil {
		t.Fatalf("reconfig removing member 1: %v", err)
	}
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		return e.Server(0).Stats().NotServing
	}, "member 1 still serves after its removal")
	e.Stop(0)
	e.Stop(1) // of 2, 3 and 4, two are a quorum
	e.WaitServing()
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		_, err := joined.Create("/after", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || err == zk.ErrNodeExists
	}, "members 3 and 4 take no writes")
}

// TestEnsembleReconfigReplacesALostMember follows docs/ensemble.md: a member whose
// disk is lost is removed, comes back empty as a joining member and is added again.
func TestEnsembleReconfigReplacesALostMember(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) {
		c.ReconfigEnabled, c.SkipACL, c.SnapCount = true, true, 100
	})
	leader := e.Leader()
	c, _ := connectTo(t, e.Addrs()[leader:leader+1])
	for i := range 300 { // the leader compacts its log past the start
		if _, err := c.Create(fmt.Sprintf("/n%03d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	lost := (leader + 1) % 3
	id := fmt.Sprint(lost + 1)
	e.Stop(lost)
	if _, err := c.IncrementalReconfig(nil, []string{id}, -1); err != nil {
		t.Fatalf("reconfig removing member %s: %v", id, err)
	}
	entry := "server." + e.Configs[lost].Ensemble[lost]
	e.Configs[lost].DataDir = t.TempDir()
	e.Configs[lost].Join = true
	e.Start(lost)
	if _, err := c.IncrementalReconfig([]string{entry}, nil, -1); err != nil {
		t.Fatalf("reconfig adding member %s back: %v", id, err)
	}
	e.WaitServing()
	back, _ := connectTo(t, e.Addrs()[lost:lost+1])
	if _, err := back.Sync("/"); err != nil {
		t.Fatal(err)
	}
	if children, _, err := back.Children("/"); err != nil || len(children) != 301 {
		t.Fatalf("member %s after the replacement: %d children, %v; want 301", id, len(children), err)
	}
}

func configWatch(t *testing.T, c *zk.Conn) <-chan zk.Event {
	t.Helper()
	_, _, ch, err := c.GetW("/zookeeper/config")
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestEnsembleOfFiveSurvivesTwoFailures(t *testing.T) {
	e := testutil.StartEnsemble(t, 5, 0, nil)
	c, _ := connectTo(t, e.Addrs())
	if _, err := c.Create("/five", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// Two members down, the leader among them: three of five are a quorum.
	leader := e.Leader()
	e.Stop(leader)
	e.Stop((leader + 1) % 5)
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		_, err := c.Create("/three-of-five", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || err == zk.ErrNodeExists
	}, "three of five members take no writes")
	// A third down: no quorum, no member serves.
	for i := range 5 {
		if e.Server(i) != nil {
			e.Stop(i)
			break
		}
	}
	for i := range 5 {
		if s := e.Server(i); s != nil {
			testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool { return s.Stats().NotServing },
				"member %d still serves with two of five members up", i+1)
		}
	}
}

// TestEnsembleRefusesAClientAheadOfIt: a member refuses a client that has seen a
// zxid it has not applied, closing the connection without an answer, as ZooKeeper
// does; the client then tries another member.
func TestEnsembleRefusesAClientAheadOfIt(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 0, nil)
	c, _ := connectTo(t, e.Addrs()[:1])
	if _, err := c.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, stat, err := c.Exists("/x")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := connectTo(t, e.Addrs()[1:2])
	if _, err := other.Sync("/x"); err != nil { // member 2 has applied the create
		t.Fatal(err)
	}
	for _, tt := range []struct {
		seen   int64
		answer bool
	}{{stat.Mzxid, true}, {stat.Mzxid + 1000, false}} {
		nc, err := net.DialTimeout("tcp", e.Addrs()[1], 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var enc wire.Encoder
		off := enc.BeginFrame()
		req := wire.ConnectRequest{LastZxidSeen: tt.seen, Timeout: 4000, Password: make([]byte, wire.PasswordLen)}
		req.Encode(&enc)
		enc.EndFrame(off)
		if _, err := nc.Write(enc.Bytes()); err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := nc.Read(make([]byte, 64))
		nc.Close()
		if got := n > 0; got != tt.answer {
			t.Errorf("lastZxidSeen %x (member at %x or later): answered %v (%v), want %v", tt.seen, stat.Mzxid, got, err, tt.answer)
		}
	}
}
