package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

// TestElectionSingleLeaderAcrossExpiry: one leader at a time, including when the
// leader's session is made to expire: its Lost closes before the next participant's
// Campaign returns, and it does not lead again by itself under its new session.
func TestElectionSingleLeaderAcrossExpiry(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		cut := testutil.NewCutter()
		s1, s2 := connect(t, addr, cuttable(cut)), connect(t, addr)
		path := testRoot(t, s2) + "/services/master"
		ctx := ctxT(t)
		e1, e2 := NewElection(s1, path, []byte("one")), NewElection(s2, path, []byte("two"))
		if _, err := e1.Leader(ctx); !errors.Is(err, ErrNoLeader) {
			t.Fatalf("Leader before any campaign = %v, want ErrNoLeader", err)
		}
		h1, err := e1.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if h1.Path() != path {
			t.Errorf("hold path %s, want %s", h1.Path(), path)
		}
		electionTestLeader(t, e2, "one")

		type result struct {
			h         *Hold
			err       error
			lostFirst bool // h1 was lost when e2 won
		}
		got := make(chan result, 1)
		go func() {
			h, err := e2.Campaign(ctx)
			got <- result{h, err, lockTestClosed(h1.Lost())}
		}()
		electionTestLeader(t, e2, "one")
		select {
		case r := <-got:
			t.Fatalf("second participant won while the first led: %+v", r)
		default:
		}

		expire(t, s1, cut)
		var h2 *Hold
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatal(r.err)
			}
			if !r.lostFirst {
				t.Fatal("the new leader's Campaign returned before the old leader's Lost closed")
			}
			h2 = r.h
		case <-time.After(10 * time.Second):
			t.Fatal("no new leader after the old one's session expired")
		}
		electionTestLeader(t, e1, "two")
		if err := h1.Release(ctx); err != nil {
			t.Errorf("Release of the lost leadership = %v, want nil", err)
		}
		electionTestLeader(t, e1, "two") // the old leader's Release left the new one alone

		// The old leader's new session re-acquired nothing, and waits if it campaigns.
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if _, err := e1.Campaign(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Campaign while another leads = %v, want context.DeadlineExceeded", err)
		}
		select {
		case <-h2.Lost():
			t.Fatal("the new leader's hold was lost")
		default:
		}
		if err := h2.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := e1.Leader(ctx); !errors.Is(err, ErrNoLeader) {
			t.Fatalf("Leader after Release = %v, want ErrNoLeader", err)
		}
	})
}

// TestElectionAdopt: a leader node this session already owns is adopted, with its data
// set; one owned by another session is not.
func TestElectionAdopt(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		s1, s2 := connect(t, addr), connect(t, addr)
		path := testRoot(t, s1) + "/master"
		if _, err := s1.Conn().Create(path, []byte("stale"), zk.FlagEphemeral, s1.ACL()); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
		defer cancel()
		if _, err := NewElection(s2, path, []byte("two")).Campaign(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Campaign on another session's node = %v, want context.DeadlineExceeded", err)
		}
		e1 := NewElection(s1, path, []byte("one"))
		h, err := e1.Campaign(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		electionTestLeader(t, e1, "one")
		if err := h.Release(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := e1.Leader(ctxT(t)); !errors.Is(err, ErrNoLeader) {
			t.Fatalf("Leader after Release = %v, want ErrNoLeader", err)
		}
	})
}

// TestSequentialElectionOrder: candidates lead in campaign order; each waits on its
// predecessor's node only; when the leader goes, exactly the next one leads and the
// others do not even look; a candidate whose ctx ends leaves no node.
func TestSequentialElectionOrder(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		const n = 4
		obs := connect(t, addr)
		dir := testRoot(t, obs) + "/election"
		observer := NewSequentialElection(obs, dir, nil)
		ctx := ctxT(t)
		var mu sync.Mutex
		watched := make([][]string, n) // per candidate, the nodes it waited on
		lists := make([]int, n)        // per candidate, listings of dir
		sessions := make([]*Session, n)
		elections := make([]*SequentialElection, n)
		for i := range n {
			sessions[i] = connect(t, addr)
			e := NewSequentialElection(sessions[i], dir, fmt.Appendf(nil, "c%d", i))
			e.onWatch = func(name string) { mu.Lock(); watched[i] = append(watched[i], name); mu.Unlock() }
			e.onList = func() { mu.Lock(); lists[i]++; mu.Unlock() }
			elections[i] = e
		}
		snapshot := func() (w [][]string, l []int) {
			mu.Lock()
			defer mu.Unlock()
			for _, ws := range watched {
				w = append(w, append([]string(nil), ws...))
			}
			return w, append([]int(nil), lists...)
		}

		type result struct {
			h   *Hold
			err error
		}
		results := make([]chan result, n)
		for i := range n {
			results[i] = make(chan result, 1)
			go func() {
				h, err := elections[i].Campaign(ctx)
				results[i] <- result{h, err}
			}()
			if i == 0 { // leads at once
				r := <-results[0]
				if r.err != nil {
					t.Fatal(r.err)
				}
				results[0] <- r
				continue
			}
			testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool {
				w, _ := snapshot()
				return len(w[i]) > 0
			}, "candidate %d never waited", i)
		}

		children, _, err := obs.Conn().Children(dir)
		if err != nil {
			t.Fatal(err)
		}
		line := seqLine(children, []string{seqKindCandidate})
		if len(line) != n {
			t.Fatalf("%s holds %v, want %d candidates", dir, children, n)
		}
		w, _ := snapshot()
		for i, e := range line {
			data, _, err := obs.Conn().Get(dir + "/" + e.name)
			if err != nil || string(data) != fmt.Sprintf("c%d", i) {
				t.Fatalf("candidate node %d is %q (%v), want c%d: not in campaign order", i, data, err, i)
			}
			if i > 0 && (len(w[i]) != 1 || w[i][0] != line[i-1].name) {
				t.Fatalf("candidate %d waited on %v, want only its predecessor %s", i, w[i], line[i-1].name)
			}
		}

		// A candidate that gives up leaves nothing.
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if _, err := NewSequentialElection(sessions[1], dir, nil).Campaign(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Campaign behind others = %v, want context.DeadlineExceeded", err)
		}
		if children, _, err := obs.Conn().Children(dir); err != nil || len(children) != n {
			t.Fatalf("after a cancelled Campaign %s holds %v (%v), want the %d candidates", dir, children, err, n)
		}

		for k := range n {
			r := <-results[k]
			if r.err != nil {
				t.Fatalf("candidate %d: %v", k, r.err)
			}
			if r.h.Path() != dir+"/"+line[k].name {
				t.Fatalf("candidate %d leads with %s, want %s", k, r.h.Path(), line[k].name)
			}
			electionTestLeader(t, observer, fmt.Sprintf("c%d", k))
			for j := k + 1; j < n; j++ {
				select {
				case r := <-results[j]:
					t.Fatalf("candidate %d leads along with %d: %+v", j, k, r)
				default:
				}
			}
			_, before := snapshot()
			sessions[k].Close() // the leader goes
			select {
			case <-r.h.Lost():
			case <-time.After(5 * time.Second):
				t.Fatalf("candidate %d's Lost not closed by its Session's Close", k)
			}
			if k+1 < n {
				r := <-results[k+1]
				results[k+1] <- r
				_, after := snapshot()
				for j := k + 2; j < n; j++ {
					if after[j] != before[j] {
						t.Errorf("candidate %d listed %s again when %d went: a herd", j, dir, k)
					}
				}
			}
		}
		if _, err := observer.Leader(ctx); !errors.Is(err, ErrNoLeader) {
			t.Fatalf("Leader after every candidate went = %v, want ErrNoLeader", err)
		}
	})
}

// electionTestLeader fails t unless the leader's data, as e sees it, is want.
func electionTestLeader(t *testing.T, e interface {
	Leader(context.Context) ([]byte, error)
}, want string) {
	t.Helper()
	data, err := e.Leader(ctxT(t))
	if err != nil || string(data) != want {
		t.Fatalf("Leader = %q, %v; want %q", data, err, want)
	}
}
