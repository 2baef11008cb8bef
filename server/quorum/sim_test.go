package quorum

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Scripted tests: members on an Inmem network that tick only when the test ticks
// them. Elections, heartbeats and timeouts happen after a number of ticks, never after
// a while; a negative check ("makes no progress") holds after a number of ticks, each
// round of which let every message it caused be handled first (settle).

// simElection is the members' election timeout in ticks (DefaultConfig's); raft
// draws each member's timeout from [simElection, 2·simElection).
const simElection = 10

// simPatience bounds the ticks a positive wait may take: it returns as soon as its
// condition holds, and several split votes in a row (all members tick together) may
// come first.
const simPatience = 10 * simElection

// newSim starts voters 1..nv and learners after them on an Inmem network, each ticking
// only when the test ticks it; setup, if not nil, sees the cluster first.
func newSim(t *testing.T, nv, nl int, setup func(*cluster)) *cluster {
	t.Helper()
	return newClusterWith(t, nv, nl, func(c *cluster) {
		c.net, c.ticks = NewInmem(), map[uint64]chan struct{}{}
		if setup != nil {
			setup(c)
		}
	})
}

// running returns the ids of the running members, ascending.
func (c *cluster) running() []uint64 {
	var ids []uint64
	for id, m := range c.members {
		if m.node != nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// tick ticks every running member once, rounds times, letting each round's
// messages settle before the next.
func (c *cluster) tick(rounds int) {
	c.t.Helper()
	for range rounds {
		for _, id := range c.running() {
			select {
			case c.ticks[id] <- struct{}{}:
			case <-c.members[id].node.Done():
				c.t.Fatalf("member %d stopped: %v", id, c.members[id].node.Err())
			}
		}
		c.settle()
	}
}

// settle waits until nothing moves: no message in flight on the network, no member
// with work waiting or a Ready in hand, and the same counts of messages and Readies on
// consecutive looks.
func (c *cluster) settle() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last []uint64
	for stable := 0; stable < 3; {
		if err := c.net.WaitIdle(ctx); err != nil {
			c.t.Fatalf("the network did not go idle: %v", err)
		}
		now, busy := c.moves()
		if ctx.Err() != nil {
			c.t.Fatalf("the members did not settle: %s", c.activity())
		}
		if !busy && slices.Equal(now, last) {
			stable++
		} else {
			stable, last = 0, now
		}
		runtime.Gosched()
	}
}

// moves counts what moved so far — the network's messages, each member's Readies
// handled — and says whether a member has work waiting.
func (c *cluster) moves() (counts []uint64, busy bool) {
	st := c.net.Stats()
	counts = append(counts, st.Sent, st.Delivered, st.Dropped)
	for _, id := range c.running() {
		n := c.members[id].node
		counts = append(counts, id, n.handled.Load())
		busy = busy || n.pending.Load() > 0
	}
	return counts, busy
}

// activity describes what moved so far: the network's counts and each member's Raft
// state and Readies.
func (c *cluster) activity() string {
	var b strings.Builder
	fmt.Fprint(&b, c.net.Stats())
	for _, id := range c.running() {
		n := c.members[id].node
		fmt.Fprintf(&b, " %d:%+v/%d", id, n.Status(), n.handled.Load())
		if n.pending.Load() > 0 {
			b.WriteString(" busy")
		}
	}
	return b.String()
}

// stepUntil ticks until cond holds, at most maxTicks rounds, and returns the rounds
// it took.
func (c *cluster) stepUntil(maxTicks int, cond func() error) int {
	c.t.Helper()
	c.settle()
	for i := 0; ; i++ {
		err := cond()
		if err == nil {
			return i
		}
		if i == maxTicks {
			c.t.Fatalf("not within %d ticks: %v", maxTicks, err)
		}
		c.tick(1)
	}
}

// simLeader ticks until the running members agree on a running leader.
func (c *cluster) simLeader(maxTicks int) uint64 {
	c.t.Helper()
	var lead uint64
	c.stepUntil(maxTicks, func() error {
		var err error
		lead, err = c.agreedLeader(c.running())
		return err
	})
	return lead
}

// agreedLeader returns the leader members agree on, if it is one of them and leads.
func (c *cluster) agreedLeader(members []uint64) (uint64, error) {
	var lead uint64
	for _, id := range members {
		st := c.members[id].node.Status()
		if st.Leader == 0 || (lead != 0 && st.Leader != lead) {
			return 0, fmt.Errorf("member %d sees leader %d", id, st.Leader)
		}
		lead = st.Leader
	}
	if !slices.Contains(members, lead) || c.members[lead].node.Status().Role != RoleLeader {
		return 0, fmt.Errorf("leader %d is not among %v or not leading", lead, members)
	}
	return lead, nil
}

// simPropose proposes data on member id, ticking while it waits, at most maxTicks
// rounds, and returns the entry's index; it fails the test if the entry is not applied
// on id by then (tryPropose).
func (c *cluster) simPropose(id uint64, data string, maxTicks int) uint64 {
	c.t.Helper()
	idx, err := c.tryPropose(id, data, maxTicks)
	if err != nil {
		c.t.Fatalf("member %d: %v", id, err)
	}
	return idx
}

// tryPropose proposes data on member id, ticking while it waits, at most maxTicks
// rounds. It hands the proposal over on this goroutine, as Propose does on its caller's,
// so that the cluster cannot look settled while the proposal is on its way to Raft (a
// goroutine calling Propose may not have run yet when the members settle), and then
// waits for its apply as Propose would.
func (c *cluster) tryPropose(id uint64, data string, maxTicks int) (uint64, error) {
	n := c.members[id].node
	seq := n.seq.Add(1)
	applied := make(chan uint64, 1)
	if err := n.register(n.waiters, seq, applied); err != nil {
		return 0, fmt.Errorf("propose %q: %w", data, err)
	}
	defer n.unregister(n.waiters, seq)
	if err := n.propose(context.Background(), seq, []byte(data)); err != nil {
		return 0, fmt.Errorf("propose %q: %w", data, err)
	}
	for i := 0; ; i++ {
		c.settle()
		select {
		case idx := <-applied:
			if idx == 0 {
				return 0, fmt.Errorf("propose %q: refused", data)
			}
			return idx, nil
		default:
		}
		if i == maxTicks {
			return 0, fmt.Errorf("%q not applied within %d ticks", data, maxTicks)
		}
		c.tick(1)
	}
}

// simConverged ticks until the given members (all running ones if none) applied
// the same records, at least want, and returns them.
func (c *cluster) simConverged(want, maxTicks int, members ...uint64) []record {
	c.t.Helper()
	if len(members) == 0 {
		members = c.running()
	}
	var ref []record
	c.stepUntil(maxTicks, func() (err error) {
		ref, err = c.applied(members, want)
		return err
	})
	return ref
}

func hasRecord(recs []record, data string) bool {
	return slices.ContainsFunc(recs, func(r record) bool { return r.data == data })
}

// TestSimElection: nobody campaigns before its election timeout; then one leader is
// elected, in the next term, within two timeouts.
func TestSimElection(t *testing.T) {
	c := newSim(t, 3, 0, nil)
	c.tick(simElection - 1)
	for _, id := range c.running() {
		if st := c.members[id].node.Status(); st.Leader != 0 || st.Term != 1 {
			t.Fatalf("member %d after %d ticks, less than an election timeout: %+v", id, simElection-1, st)
		}
	}
	ticks := c.stepUntil(simElection+2, func() error {
		_, err := c.agreedLeader(c.running())
		return err
	})
	lead, _ := c.agreedLeader(c.running())
	t.Logf("member %d elected after %d ticks", lead, simElection-1+ticks)
	leaders := 0
	for _, id := range c.running() {
		st := c.members[id].node.Status()
		if st.Term < 2 || st.Leader != lead {
			t.Errorf("member %d: %+v", id, st)
		}
		leaders += b2i(st.Role == RoleLeader)
	}
	if leaders != 1 {
		t.Errorf("%d members lead", leaders)
	}
	// A leader that hears from its followers keeps leading: heartbeats every tick.
	term := c.members[lead].node.Status().Term
	c.tick(5 * simElection)
	if st := c.members[lead].node.Status(); st.Role != RoleLeader || st.Term != term {
		t.Errorf("leader after %d quiet ticks: %+v, was leading in term %d", 5*simElection, st, term)
	}
}

// TestSimProposalDroppedWithoutLeader: before any member knows a leader a proposal
// fails at once, on every member.
func TestSimProposalDroppedWithoutLeader(t *testing.T) {
	c := newSim(t, 3, 0, nil)
	for _, id := range c.running() {
		_, err := c.members[id].node.Propose(context.Background(), []byte("too early"))
		if !errors.Is(err, raft.ErrProposalDropped) {
			t.Errorf("member %d: propose without a leader: %v, want ErrProposalDropped", id, err)
		}
	}
	c.simLeader(simPatience)
	c.simPropose(2, "in time", simElection)
	recs := c.simConverged(1, simElection)
	if hasRecord(recs, "too early") {
		t.Errorf("a dropped proposal was applied: %v", recs)
	}
}

// TestSimLeaderLossAndReelection: the followers of a stopped leader elect another
// within their election timeouts, in a later term; the old leader restarts as a
// follower and catches up.
func TestSimLeaderLossAndReelection(t *testing.T) {
	c := newSim(t, 3, 0, nil)
	old := c.simLeader(simPatience)
	for i := range 5 {
		c.simPropose(uint64(i%3)+1, fmt.Sprint("before-", i), simElection)
	}
	c.simConverged(5, simElection)
	oldTerm := c.members[old].node.Status().Term
	c.stop(old)
	ticks := c.stepUntil(simPatience, func() error {
		_, err := c.agreedLeader(c.running())
		return err
	})
	lead, _ := c.agreedLeader(c.running())
	t.Logf("member %d elected %d ticks after leader %d stopped", lead, ticks, old)
	if ticks < simElection {
		t.Errorf("new leader after %d ticks, before the followers' election timeout %d", ticks, simElection)
	}
	if term := c.members[lead].node.Status().Term; term <= oldTerm {
		t.Errorf("new leader's term %d, old %d", term, oldTerm)
	}
	for i := range 5 {
		c.simPropose(c.running()[i%2], fmt.Sprint("after-", i), simElection)
	}
	c.start(old, nil)
	recs := c.simConverged(10, simPatience)
	if len(recs) != 10 {
		t.Errorf("records after the restart: %v", recs)
	}
	if st := c.members[old].node.Status(); st.Role != RoleFollower || st.Leader != lead {
		t.Errorf("restarted old leader: %+v, want a follower of %d", st, lead)
	}
	c.simPropose(old, "from-restarted", simElection)
	c.simConverged(11, simElection)
}

// TestSimPartitionedLeader: a leader cut off with a minority steps down within an
// election timeout and its side commits nothing, whatever it is asked; the majority
// elects a leader and goes on; once healed, the minority's uncommitted entry is gone
// and every member holds the majority's log.
func TestSimPartitionedLeader(t *testing.T) {
	c := newSim(t, 5, 0, nil)
	old := c.simLeader(simPatience)
	c.simPropose(old, "before", simElection)
	c.simConverged(1, simElection)
	minority := []uint64{old, old%5 + 1}
	var majority []uint64
	for _, id := range c.running() {
		if !slices.Contains(minority, id) {
			majority = append(majority, id)
		}
	}
	c.net.Partition(minority, majority)
	commit := c.members[old].node.Status().Commit
	// The old leader still takes a proposal: it cannot commit.
	n := c.members[old].node
	if err := n.Submit(context.Background(), n.NextSeq(), []byte("minority")); err != nil {
		t.Fatal(err)
	}
	ticks := c.stepUntil(2*simElection, func() error {
		if st := n.Status(); st.Role == RoleLeader {
			return fmt.Errorf("cut-off leader %d still leads: %+v", old, st)
		}
		return nil
	})
	t.Logf("cut-off leader stepped down after %d ticks", ticks)
	var lead uint64
	c.stepUntil(simPatience, func() error {
		var err error
		lead, err = c.agreedLeader(majority)
		return err
	})
	c.simPropose(lead, "majority", simElection)
	c.tick(3 * simElection) // the negative check: the minority had every chance
	for _, id := range minority {
		st := c.members[id].node.Status()
		if st.Commit > commit || st.Role == RoleLeader || st.Leader != 0 {
			t.Errorf("member %d on the minority's side after %d ticks: %+v (commit was %d)", id, 3*simElection, st, commit)
		}
		if recs := c.members[id].snapshot(); hasRecord(recs, "minority") || hasRecord(recs, "majority") {
			t.Errorf("member %d on the minority's side applied %v", id, recs)
		}
		if _, err := c.members[id].node.Propose(context.Background(), []byte("no leader")); !errors.Is(err, raft.ErrProposalDropped) {
			t.Errorf("member %d without a leader: propose: %v, want ErrProposalDropped", id, err)
		}
	}
	c.net.Heal()
	recs := c.simConverged(2, simPatience)
	if hasRecord(recs, "minority") || !hasRecord(recs, "majority") {
		t.Errorf("after healing: %v, want the majority's entry and not the minority's", recs)
	}
	if l, err := c.agreedLeader(c.running()); err != nil || l != lead {
		t.Errorf("after healing: leader %d, %v; want %d still (pre-vote keeps the minority from disrupting it)", l, err, lead)
	}
}

// TestSimLearnerDoesNotVote: a learner replicates but does not vote: with two of
// three voters stopped, the survivor and the learner commit nothing and elect nobody.
func TestSimLearnerDoesNotVote(t *testing.T) {
	c := newSim(t, 3, 1, nil)
	const learner = 4
	lead := c.simLeader(simPatience)
	if lead == learner {
		t.Fatal("learner leads")
	}
	c.simPropose(learner, "from-learner", simElection) // forwarded to the leader
	c.simPropose(lead, "from-leader", simElection)
	c.simConverged(2, simElection)
	if st := c.members[learner].node.Status(); st.Role != RoleLearner || st.Leader != lead {
		t.Errorf("learner status = %+v", st)
	}
	var survivor uint64
	for id := uint64(1); id <= 3; id++ {
		if survivor == 0 && id != lead {
			survivor = id
			continue
		}
		c.stop(id)
	}
	commit := c.members[survivor].node.Status().Commit
	// The learner still forwards to the leader it knew (learners never campaign, so
	// never forget it): its proposal waits, and fails when given up on.
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() {
		_, err := c.members[learner].node.Propose(ctx, []byte("no-quorum"))
		res <- err
	}()
	c.tick(5 * simElection)
	cancel()
	if err := <-res; err == nil {
		t.Errorf("learner: a proposal committed without a quorum")
	}
	if _, err := c.members[survivor].node.Propose(context.Background(), []byte("no-quorum")); !errors.Is(err, raft.ErrProposalDropped) {
		t.Errorf("voter %d without a leader: propose: %v, want ErrProposalDropped", survivor, err)
	}
	for _, id := range []uint64{survivor, learner} {
		st := c.members[id].node.Status()
		if st.Commit > commit || st.Role == RoleLeader || (id == survivor && st.Leader != 0) {
			t.Errorf("member %d without quorum after %d ticks: %+v (commit was %d)", id, 5*simElection, st, commit)
		}
		if hasRecord(c.members[id].snapshot(), "no-quorum") {
			t.Errorf("member %d applied a proposal without quorum", id)
		}
	}
}

// TestSimLaggingFollowerCaughtUpBySnapshot: a follower cut off while the leader
// compacts past it gets the snapshot once reconnected.
func TestSimLaggingFollowerCaughtUpBySnapshot(t *testing.T) {
	c := newSim(t, 3, 0, func(c *cluster) { c.snapEvery, c.keep = 20, 5 })
	lead := c.simLeader(simPatience)
	for i := range 5 {
		c.simPropose(lead, fmt.Sprint("early-", i), simElection)
	}
	c.simConverged(5, simElection)
	lagging := lead%3 + 1
	for _, id := range c.running() {
		c.net.Disconnect(lagging, id)
	}
	lagged := c.members[lagging].lastApplied()
	for i := range 60 {
		c.simPropose(lead, fmt.Sprint("late-", i), simElection)
	}
	first, err := c.members[lead].node.storage.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if first <= lagged+1 {
		t.Fatalf("leader's log starts at %d: not compacted past the lagging member's %d", first, lagged)
	}
	if got := c.members[lagging].lastApplied(); got != lagged {
		t.Fatalf("cut-off member applied up to %d, was %d", got, lagged)
	}
	for _, id := range c.running() {
		c.net.Connect(lagging, id)
	}
	c.simConverged(65, simPatience)
	if c.members[lagging].restoreCount() == 0 {
		t.Fatal("lagging member caught up without a snapshot")
	}
	if l, err := c.agreedLeader(c.running()); err != nil || l != lead {
		t.Errorf("leader %d, %v; want %d: the cut-off member disrupted it", l, err, lead)
	}
	c.simPropose(lagging, "from-lagged", simElection)
	c.simConverged(66, simElection)
}

// TestSimHeldFollowerCatchesUp: a follower whose leader's messages are held misses
// what commits meanwhile without disrupting the leader, and gets it on release.
func TestSimHeldFollowerCatchesUp(t *testing.T) {
	c := newSim(t, 3, 0, nil)
	lead := c.simLeader(simPatience)
	slow := lead%3 + 1
	c.net.Hold(lead, slow)
	c.simPropose(lead, "held", simElection)
	term := c.members[lead].node.Status().Term
	c.tick(3 * simElection)
	if hasRecord(c.members[slow].snapshot(), "held") {
		t.Fatal("a member whose messages are held applied the entry")
	}
	if st := c.members[lead].node.Status(); st.Role != RoleLeader || st.Term != term {
		t.Fatalf("leader after holding a follower's messages: %+v, was leading in term %d", st, term)
	}
	c.net.Release(lead, slow)
	recs := c.simConverged(1, 2*simElection)
	if !hasRecord(recs, "held") {
		t.Errorf("after release: %v", recs)
	}
}

// TestSimLossyNetwork: with a fifth of all messages lost and the rest delayed,
// proposals still commit everywhere, Raft sending again on heartbeats.
func TestSimLossyNetwork(t *testing.T) {
	c := newSim(t, 3, 0, nil)
	c.net.DropRate(0.2, 19)
	c.net.Delay(time.Millisecond)
	lead := c.simLeader(10 * simElection)
	for i := range 10 {
		c.simPropose(lead, fmt.Sprint("lossy-", i), 10*simElection)
	}
	c.simConverged(10, 10*simElection)
	if st := c.net.Stats(); st.Dropped == 0 || st.Delivered == 0 {
		t.Errorf("network stats %+v: want some dropped and some delivered", st)
	}
}

// TestSimMembership: a joining member takes no part until added; added, it catches
// up and proposes; a removed member gets nothing more and disrupts nobody.
func TestSimMembership(t *testing.T) {
	c := newSim(t, 3, 0, nil)
	lead := c.simLeader(simPatience)
	for i := range 3 {
		c.simPropose(lead, fmt.Sprint("before-", i), simElection)
	}
	c.voters[4] = "inmem-4"
	c.members[4] = &member{id: 4, dir: t.TempDir(), join: true}
	c.start(4, nil)
	c.tick(3 * simElection)
	if st := c.members[4].node.Status(); st.Leader != 0 || st.Applied != 0 {
		t.Fatalf("a joining member before it is added: %+v", st)
	}
	change := func(typ raftpb.ConfChangeType, id uint64, note string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.members[lead].node.ProposeConfChange(ctx,
			[]*raftpb.ConfChangeSingle{{Type: typ.Enum(), NodeId: new(id)}}, []byte(note)); err != nil {
			t.Fatalf("%s: %v", note, err)
		}
		for _, id := range c.running() {
			c.members[id].node.SetPeers(c.others(id))
		}
	}
	change(raftpb.ConfChangeAddNode, 4, "add 4")
	c.stepUntil(simElection, func() error { // the leader's next heartbeat
		if st := c.members[4].node.Status(); st.Leader != lead {
			return fmt.Errorf("added member: %+v, want leader %d", st, lead)
		}
		return nil
	})
	c.simPropose(4, "from-4", simElection)
	recs := c.simConverged(4, simPatience)
	if !hasRecord(recs, "from-4") {
		t.Errorf("records after the join: %v", recs)
	}
	c.stepUntil(simElection, func() error {
		if st := c.members[lead].node.Status(); st.Followers != 3 || st.SyncedFollowers != 3 {
			return fmt.Errorf("leader status after the join: %+v, want 3 of 3 followers synced", st)
		}
		return nil
	})

	removed := lead%3 + 1
	delete(c.voters, removed)
	change(raftpb.ConfChangeRemoveNode, removed, fmt.Sprint("remove ", removed))
	stay := slices.DeleteFunc(c.running(), func(id uint64) bool { return id == removed })
	had := len(c.members[removed].snapshot())
	c.simPropose(lead, "after-remove", simElection)
	c.tick(3 * simElection)
	if got := c.members[removed].snapshot(); len(got) != had {
		t.Errorf("removed member applied %v after its removal", got[had:])
	}
	if l, err := c.agreedLeader(stay); err != nil || l != lead {
		t.Errorf("after the removal: leader %d, %v; want %d", l, err, lead)
	}
	if st := c.members[lead].node.Status(); st.Followers != 2 {
		t.Errorf("leader counts %d followers after the removal, want 2", st.Followers)
	}
	c.simConverged(5, simElection, stay...)
}

// TestSimNotes: notes reach their member, and are lost on a cut link, to a member
// that is not a peer, and when dropped.
func TestSimNotes(t *testing.T) {
	c := newSim(t, 3, 0, nil)
	notes := func(id uint64) []string {
		m := c.members[id]
		m.mu.Lock()
		defer m.mu.Unlock()
		return slices.Clone(m.notes)
	}
	c.members[1].node.SendNote(2, []byte("hello"))
	c.members[3].node.SendNote(2, []byte("hi"))
	c.settle()
	if got := notes(2); !slices.Contains(got, "1: hello") || !slices.Contains(got, "3: hi") {
		t.Fatalf("member 2 got notes %q", got)
	}
	c.net.Disconnect(1, 2)
	c.members[1].node.SendNote(2, []byte("cut"))
	c.net.Drop(func(from, to uint64, m *raftpb.Message) bool { return m == nil && from == 3 })
	c.members[3].node.SendNote(2, []byte("dropped"))
	c.members[2].node.SetPeers(map[uint64]string{1: c.voters[1]}) // 3 is no peer of 2 any more
	c.net.Drop(nil)
	c.members[3].node.SendNote(2, []byte("not a peer"))
	c.settle()
	if got := notes(2); len(got) != 2 {
		t.Errorf("member 2 got notes %q, want only the first two", got)
	}
	c.net.Heal()
	c.members[2].node.SetPeers(c.others(2))
	c.members[1].node.SendNote(2, []byte("healed"))
	c.settle()
	if got := notes(2); !slices.Contains(got, "1: healed") {
		t.Errorf("member 2 got notes %q after healing", got)
	}
}

// TestSimChecksInFrontOfRaft: what arrives over the Inmem network passes the same
// checks as over TCP: a member's link speaking for another member, or sending a type
// members never send, is dropped and counted, and changes nothing.
func TestSimChecksInFrontOfRaft(t *testing.T) {
	c := newSim(t, 3, 0, nil)
	lead := c.simLeader(simPatience)
	from := lead%3 + 1
	other := from%3 + 1
	if other == lead {
		other = other%3 + 1
	}
	st := c.members[lead].node.Status()
	before := c.members[lead].node.Counters().MessagesDropped
	c.members[from].node.transport.Send([]*raftpb.Message{
		{Type: raftpb.MsgHeartbeatResp.Enum(), From: new(other), To: new(lead), Term: new(st.Term)},
		{Type: raftpb.MsgTimeoutNow.Enum(), From: new(from), To: new(lead), Term: new(st.Term)},
		{Type: raftpb.MsgVote.Enum(), From: new(from), To: new(lead), Term: new(uint64(MaxTerm) + 1)},
	})
	c.settle()
	if got := c.members[lead].node.Counters().MessagesDropped - before; got != 3 {
		t.Errorf("%d forged messages dropped, want 3", got)
	}
	c.tick(simElection)
	if now := c.members[lead].node.Status(); now.Role != RoleLeader || now.Term != st.Term {
		t.Errorf("leader after forged messages: %+v, was leading in term %d", now, st.Term)
	}
}

// TestSimReadIndex: a follower's ReadIndex returns at least the leader's commit,
// applied; a leader cut off from its followers answers none, however many ticks pass.
func TestSimReadIndex(t *testing.T) {
	c := newSim(t, 3, 0, nil)
	lead := c.simLeader(simPatience)
	for i := range 3 {
		c.simPropose(lead, fmt.Sprint("w", i), simElection)
	}
	follower := lead%3 + 1
	commit := c.members[lead].node.Status().Commit
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	idx, err := c.members[follower].node.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.members[follower].node.Status(); idx < commit || st.Applied < idx {
		t.Errorf("follower's read index %d, applied %d; leader's commit %d", idx, st.Applied, commit)
	}

	var others []uint64
	for _, id := range c.running() {
		if id != lead {
			others = append(others, id)
		}
	}
	c.net.Partition([]uint64{lead}, others)
	rctx, rcancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() {
		_, err := c.members[lead].node.ReadIndex(rctx)
		res <- err
	}()
	c.tick(3 * simElection)
	select {
	case err := <-res:
		t.Errorf("a leader cut off from its followers answered ReadIndex: %v", err)
	default:
	}
	rcancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Errorf("ReadIndex given up on: %v, want context.Canceled", err)
	}
}
