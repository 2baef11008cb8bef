package ensemble

import (
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

// TestMultiServerClientAcrossFailovers kills, one after another, the member a client
// with every member in its connect string is connected to, or the leader, and starts
// it again. The session must survive each failover with its ephemeral node, and the
// watches set before a failover must fire for changes made after it: once the client
// has reconnected, or while it was kept from reconnecting (then the member it comes
// back to must fire them when go-zk sets them again, as SetWatches asks).
func TestMultiServerClientAcrossFailovers(t *testing.T) {
	c := newCluster(t, 3, clusterOptions{})
	s := &roamingSession{t: t, c: c}
	var events <-chan zk.Event
	s.client, events = connectVia(t, c.addrs(), s.away.dial)
	s.sid, s.events = s.client.SessionID(), watchSession(t, events)
	s.other, _ = connect(t, c.addrs())
	for _, p := range []string{"/watched", "/parent"} {
		if _, err := s.other.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.client.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	s.failover(0, "connected", false)
	s.failover(1, "leader", false)
	s.failover(2, "connected", true)
	s.failover(3, "leader", true)
	if n := s.events.expired(); n > 0 {
		t.Errorf("the session expired %d times", n)
	}
	for i := range c.members {
		conn := c.memberConn(i)
		if _, err := conn.Sync("/eph"); err != nil {
			t.Fatalf("member %d: sync: %v", i+1, err)
		}
		if ok, stat, err := conn.Exists("/eph"); err != nil || !ok || stat.EphemeralOwner != s.sid {
			t.Errorf("member %d: /eph: exists %v, %v, owner %#x; want the session's", i+1, ok, err, owner(stat))
		}
	}
	// Closing the session removes its ephemeral node everywhere.
	s.client.Close()
	testutil.Eventually(t, recoverBound, 20*time.Millisecond, func() bool {
		ok, _, err := s.other.Exists("/eph")
		return err == nil && !ok
	}, "/eph outlived its session")
}

// roamingSession is TestMultiServerClientAcrossFailovers's client and what it checks.
type roamingSession struct {
	t      *testing.T
	c      *cluster
	client *zk.Conn       // every member in its connect string, dialling through away
	away   gate           // closed: client cannot reconnect
	sid    int64          // client's session
	events *sessionEvents // client's
	other  *zk.Conn       // makes the changes client's watches are to see
}

// failover sets client's watches, kills the member client is connected to (kill
// "connected") or the leader ("leader"), waits until client has its session back on
// another member and checks the watches, the session and its ephemeral node; then it
// starts the member again. whileAway makes the changes the watches see while client is
// kept from reconnecting; otherwise they are made once it has.
func (s *roamingSession) failover(round int, kill string, whileAway bool) {
	t, c := s.t, s.c
	t.Helper()
	victim := c.waitLeader(recoverBound)
	if kill == "connected" {
		victim = slices.Index(c.addrs(), s.client.Server())
	}
	_, _, dataWatch, err := s.client.GetW("/watched")
	if err != nil {
		t.Fatalf("round %d: get /watched: %v", round, err)
	}
	_, _, childWatch, err := s.client.ChildrenW("/parent")
	if err != nil {
		t.Fatalf("round %d: children of /parent: %v", round, err)
	}
	lost, was := s.events.disconnects(), s.client.Server()
	killed := time.Now()
	s.away.close(whileAway)
	c.kill(victim)
	if whileAway {
		testutil.Eventually(t, recoverBound, 10*time.Millisecond, func() bool { return s.events.disconnects() > lost },
			"round %d: the client was not disconnected", round)
		s.change(round)
		s.away.close(false)
	}
	testutil.Eventually(t, recoverBound, 10*time.Millisecond, func() bool {
		return s.events.disconnects() > lost && s.client.State() == zk.StateHasSession &&
			s.client.Server() != c.members[victim].addr()
	}, "round %d: the session did not move off member %d; state %v", round, victim+1, s.client.State())
	t.Logf("round %d: member %d (%s) killed, client on %s: session back on %s %v later", round, victim+1, kill,
		was, s.client.Server(), time.Since(killed).Round(time.Millisecond))
	if got := s.client.SessionID(); got != s.sid {
		t.Fatalf("round %d: session %#x, want %#x", round, got, s.sid)
	}
	if !whileAway {
		s.change(round)
	}

	expectEvent(t, dataWatch, zk.EventNodeDataChanged, "/watched")
	expectEvent(t, childWatch, zk.EventNodeChildrenChanged, "/parent")
	if data, _, err := s.client.Get("/watched"); err != nil || string(data) != fmt.Sprintf("round %d", round) {
		t.Fatalf("round %d: /watched = %q, %v", round, data, err)
	}
	if ok, stat, err := s.client.Exists("/eph"); err != nil || !ok || stat.EphemeralOwner != s.sid {
		t.Fatalf("round %d: /eph: exists %v, %v, owner %#x; want the session's", round, ok, err, owner(stat))
	}
	c.start(victim)
	c.waitServing(recoverBound)
}

// change makes round's changes to what the watches watch: /watched's data and a new
// child of /parent.
func (s *roamingSession) change(round int) {
	s.t.Helper()
	if err := setRetry(s.other, "/watched", fmt.Appendf(nil, "round %d", round)); err != nil {
		s.t.Fatal(err)
	}
	if err := createRetry(s.other, fmt.Sprintf("/parent/r%d", round), nil, recoverBound); err != nil {
		s.t.Fatal(err)
	}
}

// gate is a go-zk dialer that fails every dial while closed.
type gate struct {
	closed atomic.Bool
}

func (g *gate) close(closed bool) { g.closed.Store(closed) }

func (g *gate) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	if g.closed.Load() {
		return nil, fmt.Errorf("test: dialling %s held back", address)
	}
	return net.DialTimeout(network, address, timeout)
}

func owner(stat *zk.Stat) int64 {
	if stat == nil {
		return 0
	}
	return stat.EphemeralOwner
}

// setRetry sets path's data whatever its version, trying again through connection
// trouble.
func setRetry(conn *zk.Conn, path string, data []byte) error {
	deadline := time.Now().Add(recoverBound)
	for {
		_, err := conn.Set(path, data, -1)
		if err == nil {
			return nil
		}
		if !retryable(err) || time.Now().After(deadline) {
			return fmt.Errorf("set %s: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond) // go-zk is reconnecting; don't spin
	}
}

// expectEvent waits for a watch to fire with the given type and path.
func expectEvent(t *testing.T, watch <-chan zk.Event, typ zk.EventType, path string) {
	t.Helper()
	select {
	case e := <-watch:
		if e.Type != typ || e.Path != path || e.Err != nil {
			t.Fatalf("watch fired with %v on %s (err %v), want %v on %s", e.Type, e.Path, e.Err, typ, path)
		}
	case <-time.After(recoverBound):
		t.Fatalf("watch for %v on %s did not fire within %v", typ, path, recoverBound)
	}
}

// sessionEvents counts a session's state changes, draining go-zk's event channel.
type sessionEvents struct {
	mu   sync.Mutex
	seen map[zk.State]int // guarded by mu
}

// watchSession counts the session events on events until the test ends (go-zk never
// closes the channel).
func watchSession(t *testing.T, events <-chan zk.Event) *sessionEvents {
	s := &sessionEvents{seen: map[zk.State]int{}}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case e := <-events:
				if e.Type == zk.EventSession {
					s.mu.Lock()
					s.seen[e.State]++
					s.mu.Unlock()
				}
			case <-done:
				return
			}
		}
	}()
	return s
}

func (s *sessionEvents) disconnects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[zk.StateDisconnected]
}

func (s *sessionEvents) expired() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[zk.StateExpired]
}
