package ensemble

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/internal/testutil/faultproxy"
)

// stopBound is how soon a member cut off from its quorum must stop serving: a few
// election timeouts (a follower waits one to two before it gives up on its leader, a
// leader one before CheckQuorum makes it step down) and the srvr polling.
const stopBound = 6 * electionTimeout

// TestNetworkFaults runs its phases one after the other on one ensemble, each leaving
// it healed and every member serving.
func TestNetworkFaults(t *testing.T) {
	c := newCluster(t, 3, clusterOptions{proxies: true})
	setup, _ := connect(t, c.addrs())
	if _, err := setup.Create("/faults", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []struct {
		name string
		run  func(*testing.T, *cluster)
	}{
		{"isolated follower", isolatedFollower},
		{"isolated leader", isolatedLeader},
		{"slow links and a black hole", slowLinksAndBlackHole},
	} {
		if !t.Run(phase.name, func(t *testing.T) { phase.run(t, c.in(t)) }) {
			return // the ensemble may be left broken
		}
	}
}

// isolatedFollower cuts a follower off: it stops serving and its clients cannot write,
// while the other two go on taking writes; once healed it has them all.
func isolatedFollower(t *testing.T, c *cluster) {
	dir := "/faults/a"
	leader := c.waitLeader(recoverBound)
	f := c.others(leader)[0]
	pinned, _ := connect(t, c.addrs(f))
	majority, _ := connect(t, c.addrs(c.others(f)...))
	if err := createRetry(majority, dir, nil, recoverBound); err != nil {
		t.Fatal(err)
	}

	c.isolate(f)
	t.Logf("follower (member %d) isolated: not serving %v later", f+1,
		c.waitMode(f, modeNotServing, stopBound).Round(time.Millisecond))
	if err := result(t, createAsync(pinned, dir+"/pinned")); err == nil {
		t.Errorf("a client of the isolated member %d created %s/pinned", f+1, dir)
	}
	want := majorityWrites(t, majority, dir)
	latest := []byte("written while a follower was isolated")
	if err := setRetry(majority, dir, latest); err != nil {
		t.Fatal(err)
	}

	c.heal()
	t.Logf("healed: member %d follows %v later", f+1, c.waitMode(f, "follower", recoverBound).Round(time.Millisecond))
	c.expectConverged(f, dir, want, latest)
	c.waitServing(recoverBound)
}

// isolatedLeader cuts the leader off: the other two elect a new one and go on, the old
// one steps down and never acknowledges the write its client made meanwhile; once
// healed it has the majority's writes and not its own.
func isolatedLeader(t *testing.T, c *cluster) {
	dir := "/faults/b"
	old := c.waitLeader(recoverBound)
	rest := c.others(old)
	pinned, _ := connect(t, c.addrs(old))
	majority, _ := connect(t, c.addrs(rest...))
	if err := createRetry(majority, dir, nil, recoverBound); err != nil {
		t.Fatal(err)
	}

	c.isolate(old)
	isolated := time.Now()
	pinnedErr := createAsync(pinned, dir+"/pinned") // taken by the old leader, which cannot commit it
	c.waitMode(old, modeNotServing, stopBound)
	stopped := time.Since(isolated)
	leader := c.waitLeader(failoverBound, rest...)
	t.Logf("leader (member %d) isolated: it stopped serving %v later, member %d leads %v later",
		old+1, stopped.Round(time.Millisecond), leader+1, time.Since(isolated).Round(time.Millisecond))
	if err := result(t, pinnedErr); err == nil {
		t.Errorf("the isolated old leader acknowledged %s/pinned", dir)
	}
	want := majorityWrites(t, majority, dir)
	latest := []byte("written while the old leader was isolated")
	if err := setRetry(majority, dir, latest); err != nil {
		t.Fatal(err)
	}

	c.heal()
	t.Logf("healed: member %d follows %v later", old+1, c.waitMode(old, "follower", recoverBound).Round(time.Millisecond))
	c.expectConverged(old, dir, want, latest)
	c.waitServing(recoverBound)
}

// slowLinksAndBlackHole delays every link and then silences the one from the leader to
// a follower: the follower stops serving (it hears from no leader) and writes go on
// through the others; once healed every member holds every acknowledged write.
func slowLinksAndBlackHole(t *testing.T, c *cluster) {
	dir := "/faults/c"
	setup, _ := connect(t, c.addrs())
	if err := createRetry(setup, dir, nil, recoverBound); err != nil {
		t.Fatal(err)
	}
	w := startWriters(t, c.addrs(), 3, dir)
	w.waitEach(t, 10, nil, recoverBound)

	c.eachProxy(func(p *faultproxy.Proxy) { p.Delay(20 * time.Millisecond) })
	w.waitEach(t, 10, w.counts(), recoverBound)
	leader := c.waitLeader(recoverBound)
	f := c.others(leader)[0]
	c.proxies[leader][f].Drop(true)
	t.Logf("links delayed 20ms, leader (member %d) to member %d dropped: member %d not serving %v later",
		leader+1, f+1, f+1, c.waitMode(f, modeNotServing, stopBound).Round(time.Millisecond))
	w.waitEach(t, 20, w.counts(), recoverBound)
	if st := c.proxies[leader][f].Stats(); st.BytesDropped == 0 {
		t.Errorf("the black hole dropped nothing: %+v", st)
	}

	c.heal()
	t.Logf("healed: member %d follows %v later", f+1, c.waitMode(f, "follower", recoverBound).Round(time.Millisecond))
	w.waitEach(t, 10, w.counts(), recoverBound)
	w.halt()
	acked := w.acked()
	t.Logf("%d writes acknowledged, %d failed with connection trouble", len(acked), w.errors())
	var first []string
	for i := range c.members {
		conn := c.memberConn(i)
		var children []string
		testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
			var err error
			if children, err = syncedChildren(conn, dir); err != nil {
				t.Logf("member %d: %v", i+1, err)
				return false
			}
			return i == 0 || slices.Equal(children, first)
		}, "member %d holds %d nodes under %s after a sync, member 1 %d", i+1, len(children), dir, len(first))
		if i == 0 {
			first = children
		}
		if missing := missingFrom(children, acked, dir+"/"); len(missing) > 0 {
			t.Errorf("member %d lost %d acknowledged writes, e.g. %v", i+1, len(missing), missing[:min(len(missing), 10)])
		}
	}
}

// majorityWrites creates 20 children of dir through conn, a client of the majority,
// and returns their names. A spurious election may close its connection (a leader
// change closes every client connection), so a create is tried again through that.
func majorityWrites(t *testing.T, conn *zk.Conn, dir string) []string {
	t.Helper()
	start := time.Now()
	var names []string
	for k := range 20 {
		name := fmt.Sprintf("n%02d", k)
		if err := createRetry(conn, dir+"/"+name, nil, recoverBound); err != nil {
			t.Fatalf("the majority did not take write %d: %v", k, err)
		}
		names = append(names, name)
	}
	t.Logf("the majority took 20 writes in %v", time.Since(start).Round(time.Millisecond))
	return names
}

// createAsync creates path on conn in a goroutine and sends the error when it returns.
func createAsync(conn *zk.Conn, path string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
		done <- err
	}()
	return done
}

// result waits for the error createAsync sends.
func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(recoverBound):
		t.Fatalf("a create got no answer within %v", recoverBound)
		return nil
	}
}

// expectConverged checks, on member i after a sync, that dir's children are exactly
// want and its data is data.
func (c *cluster) expectConverged(i int, dir string, want []string, data []byte) {
	c.t.Helper()
	conn := c.memberConn(i)
	children, err := syncedChildren(conn, dir)
	if err != nil {
		c.t.Fatalf("member %d: %v", i+1, err)
	}
	if !slices.Equal(children, want) {
		c.t.Errorf("member %d: %s has %v after a sync, want %v", i+1, dir, children, want)
	}
	if got, _, err := conn.Get(dir); err != nil || !bytes.Equal(got, data) {
		c.t.Errorf("member %d: %s = %q, %v; want %q", i+1, dir, got, err, data)
	}
}
