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
	// The zxid's epoch is the Raft term, which is at least 2 (term 1 is the bootstrap).
	if epoch := stat.Mzxid >> 32; epoch < 2 {
		t.Errorf("zxid %x: epoch %d, want the raft term", stat.Mzxid, epoch)
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
	// The session outlives several of its timeouts on the new member: the member
	// reports its traffic to whichever member leads.
	time.Sleep(3 * time.Second)
	if ok, _, err := c.Exists("/eph"); err != nil || !ok {
		t.Fatalf("ephemeral node after the move: exists %v, %v", ok, err)
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
