package quorum

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/server/store"
)

const testTick = 10 * time.Millisecond // election timeout: 10 ticks = 100ms

// testSegmentSize is the members' WAL segment size: small, so that logs rotate and
// compaction can remove segments.
const testSegmentSize = 4096

// record is one entry as a member's state machine saw it.
type record struct {
	index, term uint64
	from, seq   uint64
	data        string
}

// member is one ensemble member and its state machine, which outlives restarts.
type member struct {
	id   uint64
	dir  string
	node *Node

	mu       sync.Mutex
	records  []record
	restores int           // Restore calls
	changes  []string      // contexts of the conf changes applied
	notes    []string      // "from: data" of the notes received
	join     bool          // start as a joining member
	gate     chan struct{} // if set, a snapshot's records wait for it to close
}

func (m *member) confChanged(c *ConfEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.changes = append(m.changes, string(c.Context))
}

func (m *member) noted(from uint64, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notes = append(m.notes, fmt.Sprintf("%d: %s", from, data))
	return nil
}

func (m *member) apply(t *testing.T) ApplyFunc {
	return func(e *Entry) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if n := len(m.records); n > 0 && m.records[n-1].index >= e.Index {
			t.Errorf("member %d: apply %d after %d", m.id, e.Index, m.records[n-1].index)
		}
		m.records = append(m.records, record{e.Index, e.Term, e.From, e.Seq, string(e.Data)})
	}
}

func (m *member) snapshot() []record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.records)
}

func (m *member) lastApplied() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.records) == 0 {
		return 0
	}
	return m.records[len(m.records)-1].index
}

type cluster struct {
	t                *testing.T
	voters, learners map[uint64]string
	members          map[uint64]*member
	// snapEvery and keep, when snapEvery > 0, give members a Snapshotter (their
	// state machine) with SnapshotEntries snapEvery and KeepEntries keep.
	snapEvery, keep uint64
	// maxSnapshot, if set, bounds the snapshots members receive (MaxSnapshotBytes).
	maxSnapshot int64
	// tickEvery, if set, replaces testTick.
	tickEvery time.Duration
	// tls, if set, gives each member its TLS settings; timeouts its peer timeouts.
	tls      map[uint64]*TLS
	timeouts *peerTimeouts
	// net, if set, carries the members' messages instead of TCP, and ticks makes
	// each member tick only when the test ticks it (sim_test.go).
	net   *Inmem
	ticks map[uint64]chan struct{}
	fs    store.FS      // the members' file system; nil: the operating system's
	gate  chan struct{} // given to every member (see member.gate)
}

// newCluster starts voters 1..nv and learners nv+1..nv+nl on 127.0.0.1, each with a
// log directory.
func newCluster(t *testing.T, nv, nl int) *cluster {
	t.Helper()
	return newSnapshotCluster(t, nv, nl, 0, 0)
}

// newSnapshotCluster is newCluster with members that snapshot every snapEvery
// applied entries and keep keep entries in memory (see cluster).
func newSnapshotCluster(t *testing.T, nv, nl int, snapEvery, keep uint64) *cluster {
	t.Helper()
	return newClusterWith(t, nv, nl, func(c *cluster) { c.snapEvery, c.keep = snapEvery, keep })
}

// newClusterWith is newCluster with setup called on the cluster before any member starts.
func newClusterWith(t *testing.T, nv, nl int, setup func(*cluster)) *cluster {
	t.Helper()
	c := &cluster{t: t, voters: map[uint64]string{}, learners: map[uint64]string{}, members: map[uint64]*member{}}
	setup(c)
	lns := map[uint64]net.Listener{}
	for i := 1; i <= nv+nl; i++ {
		id := uint64(i)
		addr := fmt.Sprintf("inmem-%d", id)
		if c.net == nil {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			lns[id], addr = ln, ln.Addr().String()
		}
		if i <= nv {
			c.voters[id] = addr
		} else {
			c.learners[id] = addr
		}
		c.members[id] = &member{id: id, dir: t.TempDir(), gate: c.gate}
	}
	for id := range c.members {
		c.start(id, lns[id])
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			if m.node != nil {
				m.node.Close()
			}
		}
	})
	return c
}

// start starts member id on its directory; ln nil means listen on its address.
// The state machine keeps its records, so it passes its applied index on.
func (c *cluster) start(id uint64, ln net.Listener) {
	c.t.Helper()
	m := c.members[id]
	cfg := DefaultConfig()
	cfg.ID, cfg.Voters, cfg.Learners, cfg.Dir, cfg.Listener = id, c.voters, c.learners, m.dir, ln
	cfg.Tick, cfg.SegmentSize = testTick, testSegmentSize
	if c.tickEvery > 0 {
		cfg.Tick = c.tickEvery
	}
	cfg.Applied = m.lastApplied()
	cfg.Join, cfg.OnConfChange, cfg.OnNote = m.join, m.confChanged, m.noted
	cfg.TLS, cfg.timeouts, cfg.FS = c.tls[id], c.timeouts, c.fs
	if c.net != nil {
		cfg.Network = c.net
		if c.ticks[id] == nil {
			c.ticks[id] = make(chan struct{})
		}
		cfg.Ticks = c.ticks[id]
	}
	if c.snapEvery > 0 {
		cfg.Snapshotter, cfg.SnapshotEntries, cfg.KeepEntries = m, c.snapEvery, c.keep
	}
	if c.maxSnapshot > 0 {
		cfg.MaxSnapshotBytes = c.maxSnapshot
	}
	n, err := New(cfg, m.apply(c.t), testLogger())
	if err != nil {
		c.t.Fatal(err)
	}
	m.node = n
}

func (c *cluster) stop(id uint64) {
	c.t.Helper()
	if err := c.members[id].node.Close(); err != nil {
		c.t.Fatal(err)
	}
	c.members[id].node = nil
}

// leader waits until the running members agree on one running leader.
func (c *cluster) leader(timeout time.Duration) uint64 {
	c.t.Helper()
	var lead uint64
	eventually(c.t, timeout, func() error {
		lead = 0
		for id, m := range c.members {
			if m.node == nil {
				continue
			}
			st := m.node.Status()
			if st.Leader == 0 || (lead != 0 && st.Leader != lead) {
				return fmt.Errorf("member %d sees leader %d", id, st.Leader)
			}
			lead = st.Leader
		}
		if c.members[lead].node == nil || c.members[lead].node.Status().Role != RoleLeader {
			return fmt.Errorf("leader %d is not running or not leading", lead)
		}
		return nil
	})
	return lead
}

// converged waits until every running member applied the same records, at least
// want of them, and returns them.
func (c *cluster) converged(want int) []record {
	c.t.Helper()
	var ref []record
	eventually(c.t, 10*time.Second, func() (err error) {
		ref, err = c.applied(c.running(), want)
		return err
	})
	return ref
}

// applied returns what members applied if each applied at least want records and all
// the same ones, else an error saying who differs.
func (c *cluster) applied(members []uint64, want int) ([]record, error) {
	var ref []record
	for _, id := range members {
		got := c.members[id].snapshot()
		if len(got) < want {
			return nil, fmt.Errorf("member %d applied %d records, want %d", id, len(got), want)
		}
		if ref == nil {
			ref = got
		} else if !slices.Equal(got, ref) {
			return nil, fmt.Errorf("member %d applied %v, another %v", id, got, ref)
		}
	}
	return ref, nil
}

func (c *cluster) propose(id uint64, data string) uint64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var idx uint64
	// A proposal made during an election may be dropped: retry as a client would.
	eventually(c.t, 5*time.Second, func() error {
		var err error
		idx, err = c.members[id].node.Propose(ctx, []byte(data))
		return err
	})
	return idx
}

func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", timeout, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProposalsAppliedInOrderEverywhere(t *testing.T) {
	c := newCluster(t, 3, 0)
	start := time.Now()
	lead := c.leader(5 * time.Second)
	t.Logf("leader %d elected in %v", lead, time.Since(start))

	const per = 20
	var wg sync.WaitGroup
	indexes := make(map[string]uint64)
	var mu sync.Mutex
	for id := range c.members {
		wg.Go(func() {
			for i := range per {
				data := fmt.Sprintf("m%d-%d", id, i)
				idx := c.propose(id, data)
				// Propose returns only after the proposer applied the entry.
				if got := c.members[id].lastApplied(); got < idx {
					t.Errorf("member %d: Propose returned index %d, applied only %d", id, idx, got)
				}
				mu.Lock()
				indexes[data] = idx
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	recs := c.converged(3 * per)
	if len(recs) != 3*per {
		t.Fatalf("applied %d records, want %d", len(recs), 3*per)
	}
	for _, r := range recs {
		if indexes[r.data] != r.index {
			t.Errorf("%s applied at %d, Propose said %d", r.data, r.index, indexes[r.data])
		}
	}
	st := c.members[lead].node.Status()
	if st.Role != RoleLeader || st.ID != lead || st.Term < 2 || st.Commit < recs[len(recs)-1].index {
		t.Errorf("leader status = %+v", st)
	}
}

func TestLeaderFailoverAndRestart(t *testing.T) {
	c := newCluster(t, 3, 0)
	old := c.leader(5 * time.Second)
	for i := range 10 {
		c.propose(uint64(i%3)+1, fmt.Sprintf("before-%d", i))
	}
	c.converged(10)
	oldTerm := c.members[old].node.Status().Term

	c.stop(old)
	start := time.Now()
	lead := c.leader(5 * time.Second)
	elapsed := time.Since(start)
	t.Logf("new leader %d after %v (election timeout %v)", lead, elapsed, 10*testTick)
	if lead == old {
		t.Fatalf("stopped member %d still leader", old)
	}
	if term := c.members[lead].node.Status().Term; term <= oldTerm {
		t.Errorf("new term %d, old %d", term, oldTerm)
	}
	var running []uint64
	for id, m := range c.members {
		if m.node != nil {
			running = append(running, id)
		}
	}
	for i := range 10 {
		c.propose(running[i%len(running)], fmt.Sprintf("after-%d", i))
	}
	c.converged(20)

	c.start(old, nil)
	recs := c.converged(20)
	var before, after int
	for _, r := range recs {
		if len(r.data) > 6 && r.data[:6] == "before" {
			before++
		} else {
			after++
		}
	}
	if before != 10 || after != 10 {
		t.Errorf("after restart: %d before, %d after records, want 10 and 10: %v", before, after, recs)
	}
	// The restarted member takes part again: its proposal commits everywhere.
	c.propose(old, "from-restarted")
	c.converged(21)
}

func TestReadIndexOnFollower(t *testing.T) {
	c := newCluster(t, 3, 0)
	lead := c.leader(5 * time.Second)
	follower := lead%3 + 1
	for i := range 20 {
		c.propose(lead, fmt.Sprintf("w%d", i))
	}
	leaderCommit := c.members[lead].node.Status().Commit
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	idx, err := c.members[follower].node.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read index %d on follower in %v", idx, time.Since(start))
	if idx < leaderCommit {
		t.Errorf("read index %d below the leader's commit %d", idx, leaderCommit)
	}
	if st := c.members[follower].node.Status(); st.Applied < idx {
		t.Errorf("ReadIndex returned %d before applying it (applied %d)", idx, st.Applied)
	}
	// The last proposal is in the follower's state machine: the read sees it.
	recs := c.members[follower].snapshot()
	if len(recs) != 20 || recs[19].data != "w19" {
		t.Errorf("follower state machine after ReadIndex: %v", recs)
	}
}

func TestClosedNode(t *testing.T) {
	c := newCluster(t, 1, 0)
	c.leader(5 * time.Second)
	n := c.members[1].node
	c.propose(1, "x")
	must(t, n.Close())
	must(t, n.Close()) // idempotent
	if _, err := n.Propose(context.Background(), []byte("y")); err == nil {
		t.Errorf("Propose after Close: %v", err)
	}
	c.members[1].node = nil
}

// testLogger logs to stderr when QUORUM_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("QUORUM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// TestDeadLeaderHastensElection: when the leader's process is gone, its peer port
// refuses connections; the followers see it and advance their election clocks (once
// in that term), rather than wait out a whole election timeout of silence.
func TestDeadLeaderHastensElection(t *testing.T) {
	// Ticks long enough that the refusal is seen before silence alone would start an
	// election (1 to 2 s).
	c := newClusterWith(t, 3, 0, func(c *cluster) { c.tickEvery = 100 * time.Millisecond })
	old := c.leader(10 * time.Second)
	term := c.members[old].node.Status().Term
	c.stop(old)
	next := c.leader(10 * time.Second)
	if next == old {
		t.Fatalf("member %d still leads", old)
	}
	hastened := 0
	for id, m := range c.members {
		if m.node != nil && m.node.hastened.Load() == term {
			hastened++
			t.Logf("member %d hastened its election in term %d", id, term)
		}
	}
	if hastened == 0 {
		t.Fatalf("no follower hastened its election in term %d after the leader's port closed", term)
	}
}

// TestTicksUnderLoad: a leader whose Ready loop never runs dry — proposals from many
// goroutines give it a Ready after every round — still ticks: cut off from the others,
// it steps down (CheckQuorum) within a few election timeouts. The members tick on a
// clock of their own here (a goroutine each), as they would on their ticker.
func TestTicksUnderLoad(t *testing.T) {
	c := newClusterWith(t, 3, 0, func(c *cluster) { c.net, c.ticks = NewInmem(), map[uint64]chan struct{}{} })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for _, ch := range c.ticks {
		wg.Go(func() {
			for {
				select {
				case ch <- struct{}{}:
				case <-stop:
					return
				}
				time.Sleep(testTick)
			}
		})
	}
	lead := c.leader(5 * time.Second)
	n := c.members[lead].node
	for range 64 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				n.Submit(context.Background(), n.NextSeq(), []byte("load"))
			}
		})
	}
	time.Sleep(20 * testTick)
	for id := range c.members {
		if id != lead {
			c.net.Disconnect(lead, id)
		}
	}
	cut := time.Now()
	bound := 40 * 10 * testTick // forty election timeouts
	for n.Status().Role == RoleLeader {
		if time.Since(cut) > bound {
			t.Fatalf("member %d, cut off under load, still leads after %v", lead, bound)
		}
		time.Sleep(testTick)
	}
	t.Logf("stepped down %v after it was cut off (election timeout %v)", time.Since(cut).Round(time.Millisecond), 10*testTick)
}
