package ensemble

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

// TestKillLeaderUnderWriteLoad kills the leader with SIGKILL while four clients, each
// with every member in its connect string, create nodes as fast as they can: another
// member must lead within failoverBound and the writes go on; the killed member,
// started again, must follow and catch up, and no acknowledged write may be missing
// from any member.
func TestKillLeaderUnderWriteLoad(t *testing.T) {
	start := time.Now()
	c := newCluster(t, 3, clusterOptions{})
	t.Logf("ensemble serving %v after the start", time.Since(start).Round(time.Millisecond))
	setup, _ := connect(t, c.addrs())
	if _, err := setup.Create("/load", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	w := startWriters(t, c.addrs(), 4, "/load")
	w.waitEach(t, 50, nil, recoverBound)

	old := c.waitLeader(recoverBound)
	c.kill(old)
	killed := time.Now()
	leader := c.waitLeader(failoverBound, c.others(old)...)
	t.Logf("leader (member %d) killed at %d writes: member %d leads %v later",
		old+1, sum(w.counts()), leader+1, time.Since(killed).Round(time.Millisecond))
	w.waitEach(t, 20, w.counts(), recoverBound)
	t.Logf("writes resumed %v after the kill; every writer had 20 more acknowledged %v after it",
		w.firstAckAfter(killed).Sub(killed).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	c.start(old)
	t.Logf("member %d restarted: follower %v later", old+1, c.waitMode(old, "follower", recoverBound).Round(time.Millisecond))
	w.waitEach(t, 20, w.counts(), recoverBound) // the restarted member catches up under load
	w.halt()
	acked := w.acked()
	t.Logf("%d writes acknowledged, %d failed with connection trouble", len(acked), w.errors())

	// Nothing acknowledged is lost, on any member, and every member holds the same.
	var first []string
	for i := range c.members {
		conn := c.memberConn(i)
		var children []string
		testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
			var err error
			if children, err = syncedChildren(conn, "/load"); err != nil {
				t.Logf("member %d: %v", i+1, err)
				return false
			}
			return i == 0 || slices.Equal(children, first)
		}, "member %d holds %d nodes under /load after a sync, member 1 %d", i+1, len(children), len(first))
		if i == 0 {
			first = children
		}
		if missing := missingFrom(children, acked, "/load/"); len(missing) > 0 {
			t.Errorf("member %d lost %d acknowledged writes, e.g. %v", i+1, len(missing), missing[:min(len(missing), 10)])
		}
	}
}

// missingFrom returns the paths of want that are not dir followed by a name in sorted.
func missingFrom(sorted, want []string, dir string) []string {
	var out []string
	for _, p := range want {
		if _, ok := slices.BinarySearch(sorted, strings.TrimPrefix(p, dir)); !ok {
			out = append(out, p)
		}
	}
	return out
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// writers are clients that create persistent sequential nodes under a parent as fast
// as the ensemble acknowledges them, each with its own session to any member, and keep
// the names of the nodes whose creation was acknowledged.
type writers struct {
	stop chan struct{} // closed by halt
	wg   sync.WaitGroup

	mu       sync.Mutex
	paths    [][]string  // guarded by mu; per writer, the acknowledged creates
	ackTimes []time.Time // guarded by mu; when each acknowledgement came, all writers
	failed   int         // guarded by mu; creates that failed with connection trouble
}

// startWriters starts n writers on connect string addrs; they stop when the test ends
// unless halt stops them first.
func startWriters(t *testing.T, addrs []string, n int, parent string) *writers {
	t.Helper()
	w := &writers{stop: make(chan struct{}), paths: make([][]string, n)}
	for i := range n {
		conn, _ := connect(t, addrs)
		w.wg.Go(func() { w.run(t, i, conn, parent) })
	}
	t.Cleanup(w.halt)
	return w
}

func (w *writers) run(t *testing.T, i int, conn *zk.Conn, parent string) {
	prefix := fmt.Sprintf("%s/w%d-", parent, i)
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		default:
		}
		path, err := conn.Create(prefix, fmt.Appendf(nil, "%d", n), zk.FlagSequence, zk.WorldACL(zk.PermAll))
		switch {
		case err == nil:
			w.mu.Lock()
			w.paths[i] = append(w.paths[i], path)
			w.ackTimes = append(w.ackTimes, time.Now())
			w.mu.Unlock()
		case retryable(err):
			w.mu.Lock()
			w.failed++
			w.mu.Unlock()
			time.Sleep(10 * time.Millisecond) // go-zk is reconnecting; don't spin
		default:
			t.Errorf("writer %d: create %s: %v", i, prefix, err)
			return
		}
	}
}

// halt stops the writers and waits until their last requests have returned.
func (w *writers) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

// counts returns how many creates each writer had acknowledged.
func (w *writers) counts() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int, len(w.paths))
	for i, p := range w.paths {
		out[i] = len(p)
	}
	return out
}

// acked returns every acknowledged path.
func (w *writers) acked() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Concat(w.paths...)
}

func (w *writers) errors() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// firstAckAfter returns when the first acknowledgement after t came, or the zero time.
func (w *writers) firstAckAfter(t time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, at := range w.ackTimes {
		if at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// waitEach waits until every writer has had more creates acknowledged than since says
// (nil: none).
func (w *writers) waitEach(t *testing.T, more int, since []int, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, 20*time.Millisecond, func() bool {
		for i, n := range w.counts() {
			if since != nil {
				n -= since[i]
			}
			if n < more {
				return false
			}
		}
		return true
	}, "writers stalled: acknowledged %v, want %d more than %v", w.counts(), more, since)
}
