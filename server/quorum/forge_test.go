package quorum

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/paddock/paddock/internal/faultfs"
)

// The invariant of what any peer may send (docs/security.md): whatever member an
// attacker on an unauthenticated peer port claims to be and whatever the fields of its
// messages and snapshot streams, no member panics, stops, or holds more memory than
// stated, and afterwards the real members elect a leader and commit within a bounded
// number of ticks — and again after every member restarts from its disk.
//
// The one class outside it is what no check can tell from a member's own messages on
// a link that proves nothing of the sender: a member's actions, forged well enough to
// be believed — the leader's appends, commits and snapshots, a follower's
// acknowledgements, a member's proposals of membership changes. Their effects are
// real: members commit entries the leader never sent (their committed logs disagree), a
// leader believes a follower holds entries it does not (and never sends them), the
// membership gains members that do not exist. Once a quorum is so affected no protocol
// commits again without an operator, and that is what authentication (member TLS)
// keeps out, and why a plain peer port refuses a non-loopback address unless told
// otherwise. The test checks that such an effect, and only such an effect, is what a
// round it cannot recover from left (outside), and counts those rounds.

var (
	forgeSeeds = flag.Int("forge.seeds", 2000, "rounds of TestSimForgedMessages (make fuzz runs FORGE_SEEDS)")
	forgeFrom  = flag.Int("forge.from", 0, "the first round's seed: a failure's cluster is replayed from the seed of its first round (a multiple of 40)")
)

const (
	// forgeRecover bounds the ticks the members may take to elect and commit after a
	// round of forged messages: a few election timeouts (raft draws each from
	// [simElection, 2·simElection), and split votes may repeat).
	forgeRecover = 12 * simElection
	// forgeSnapLimit bounds a received snapshot in these tests; forged streams run to
	// eight times it.
	forgeSnapLimit = 1 << 20
	// forgeHeapBound is the heap the test may hold at any sample (race detector
	// included): what forged snapshots stream is never held whole.
	forgeHeapBound = 256 << 20
	// perCluster rounds run on one cluster; it restarts every member every
	// restartEvery rounds.
	perCluster   = 40
	restartEvery = 8
)

// forgeStats counts what the rounds did.
type forgeStats struct {
	rounds, messages, injected, diverged, restarts int
	byType                                         map[raftpb.MessageType]int
	maxHeap                                        uint64
}

// TestSimForgedMessages: seeded rounds of 1 to 20 forged messages of every Raft type,
// with boundary and random terms, indexes, commits, log terms, entries and snapshot
// streams, each round followed by the members electing and committing within
// forgeRecover ticks.
func TestSimForgedMessages(t *testing.T) {
	st := &forgeStats{byType: map[raftpb.MessageType]int{}}
	for seed := *forgeFrom; seed < *forgeFrom+*forgeSeeds; {
		c := newSim(t, 3, 0, func(c *cluster) {
			// In memory: the rounds measure what forged messages do, not the disk.
			c.snapEvery, c.keep, c.maxSnapshot, c.fs = 16, 4, forgeSnapLimit, faultfs.New(uint64(seed))
		})
		c.simLeader(simPatience)
		first := seed
		for k := 0; k < perCluster && seed < *forgeFrom+*forgeSeeds; k++ {
			diverged := forgeRound(t, c, first, uint64(seed), st)
			seed++
			if diverged {
				break // its members cannot agree again: a fresh cluster
			}
			if k%restartEvery == restartEvery-1 {
				for _, id := range c.running() {
					c.stop(id)
				}
				for id := range c.members {
					c.start(id, nil)
				}
				st.restarts++
				if err := c.recover(fmt.Sprintf("restart-%d", seed)); err != nil {
					if why := c.outside(); why != "" {
						st.diverged++
						t.Logf("after seed %d, restarted: forged member actions were believed: %s (%v)", seed-1, why, err)
						break
					}
					t.Fatalf("after seed %d, every member restarted: %v", seed-1, err)
				}
			}
		}
		for _, id := range c.running() {
			c.stop(id)
		}
	}
	if st.maxHeap > forgeHeapBound {
		t.Errorf("the heap reached %d MiB, over the %d MiB bound", st.maxHeap>>20, forgeHeapBound>>20)
	}
	if st.diverged*10 > st.rounds {
		t.Errorf("%d of %d rounds made a quorum commit what no leader sent: the generator mostly tests the one class outside the invariant", st.diverged, st.rounds)
	}
	t.Logf("%d rounds, %d messages (%d taken by the network), %d restarts of the ensemble, %d rounds left the effects of forged member actions that no member can undo; peak heap %d MiB; by type %v",
		st.rounds, st.messages, st.injected, st.restarts, st.diverged, st.maxHeap>>20, st.byType)
}

// forgeRound sends one seed's forged messages and checks that the members recover. It
// reports whether they diverged (and so cannot).
func forgeRound(t *testing.T, c *cluster, first int, seed uint64, st *forgeStats) (diverged bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x31))
	st.rounds++
	if rng.IntN(2) == 0 { // logs with content, and snapshots now and then
		lead := c.simLeader(forgeRecover)
		for i := range 1 + rng.IntN(6) {
			c.simPropose(lead, fmt.Sprintf("s%d-%d", seed, i), forgeRecover)
		}
	}
	ids := c.running()
	var sent []string
	for range 1 + rng.IntN(20) {
		to := ids[rng.IntN(len(ids))]
		from := to%3 + 1 + uint64(rng.IntN(2)) // a peer of to: anything else is refused at the hello
		if from > 3 {
			from = 1
		}
		if from == to {
			from = from%3 + 1
		}
		m, records := forge(rng, c, from, to)
		sent = append(sent, fmt.Sprintf("%d→%d %s term=%d logterm=%d index=%d commit=%d ents=%d ctx=%d snap=%v",
			from, to, m.GetType(), m.GetTerm(), m.GetLogTerm(), m.GetIndex(), m.GetCommit(), len(m.GetEntries()),
			len(m.GetContext()), m.GetSnapshot().GetMetadata()))
		st.messages++
		st.byType[m.GetType()]++
		if c.net.Inject(from, to, m, records) {
			st.injected++
		}
		if rng.IntN(4) == 0 {
			c.tick(1)
		}
	}
	c.settle()
	sampleHeap(st)
	if err := c.recover(fmt.Sprintf("after-%d", seed)); err != nil {
		if why := c.outside(); why != "" {
			st.diverged++
			t.Logf("seed %d: forged member actions were believed: %s (%v)", seed, why, err)
			return true
		}
		t.Fatalf("seed %d (replay: -forge.from=%d -forge.seeds=%d): the members did not recover: %v\nsent:\n  %s\nnow: %s\n%s",
			seed, first, int(seed)-first+1, err, strings.Join(sent, "\n  "), c.activity(), c.progress())
	}
	return false
}

func sampleHeap(st *forgeStats) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.maxHeap = max(st.maxHeap, ms.HeapInuse)
}

// recover ticks until the running members agree on a leader that commits a proposal,
// which every member whose log agrees with the leader's then applies, within
// forgeRecover ticks for each step.
func (c *cluster) recover(data string) error {
	var lead uint64
	if err := c.tickUntil(forgeRecover, func() (err error) {
		lead, err = c.agreedLeader(c.running())
		return err
	}); err != nil {
		return fmt.Errorf("no leader: %w", err)
	}
	idx, err := c.tryPropose(lead, data, forgeRecover)
	if err != nil {
		return err
	}
	return c.tickUntil(forgeRecover, func() error {
		for _, id := range c.running() {
			if got := c.members[id].node.Status().Applied; got < idx {
				return fmt.Errorf("member %d applied %d, the proposal is at %d", id, got, idx)
			}
		}
		return nil
	})
}

// progress describes each member's log and, on a leader, what it believes of the others'.
func (c *cluster) progress() string {
	var b strings.Builder
	for _, id := range c.running() {
		n := c.members[id].node
		var rs raft.Status
		n.query(func(rn *raft.RawNode) { rs = rn.Status() })
		fmt.Fprintf(&b, "member %d: last %d, commit %d, term %d, lead %d, counters %+v", id, n.lastIndex.Load(),
			rs.Commit, rs.Term, rs.Lead, n.Counters())
		for pid, pr := range rs.Progress {
			fmt.Fprintf(&b, "\n    progress of %d: %s", pid, &pr)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// tickUntil ticks until cond holds, at most maxTicks rounds.
func (c *cluster) tickUntil(maxTicks int, cond func() error) error {
	c.settle()
	for i := 0; ; i++ {
		err := cond()
		if err == nil || i == maxTicks {
			return err
		}
		c.tick(1)
	}
}

// outside says what forged member actions left that no member can undo, "" if none:
// a member committed an index no other member's log reaches, two members committed
// different entries (terms) at one index (seen in their logs, or as appends a member
// dropped for conflicting with its committed entries), a leader believes a member holds
// entries past the end of its log, or the membership is not voters 1, 2 and 3.
func (c *cluster) outside() string {
	type view struct {
		id            uint64
		first, commit uint64
		last          uint64
		st            Storage
	}
	var vs []view
	for _, id := range c.running() {
		n := c.members[id].node
		first, _ := n.storage.FirstIndex()
		last, _ := n.storage.LastIndex()
		vs = append(vs, view{id, first, n.Status().Commit, last, n.storage})
	}
	var out []string
	for i, a := range vs {
		beyond := true
		for j, b := range vs {
			if i == j {
				continue
			}
			if a.commit <= b.last {
				beyond = false
			}
			// From each log's snapshot index, whose term the storage still holds.
			for idx := max(a.first, b.first, 2) - 1; idx <= min(a.commit, b.commit, b.last); idx++ {
				ta, errA := a.st.Term(idx)
				tb, errB := b.st.Term(idx)
				if errA == nil && errB == nil && ta != tb {
					out = append(out, fmt.Sprintf("members %d and %d committed terms %d and %d at index %d", a.id, b.id, ta, tb, idx))
					break
				}
			}
		}
		if beyond && len(vs) > 1 {
			out = append(out, fmt.Sprintf("member %d committed index %d, past every other member's log", a.id, a.commit))
		}
	}
	for _, a := range vs {
		n := c.members[a.id].node
		if k := n.Counters().CommittedConflicts; k > 0 {
			out = append(out, fmt.Sprintf("member %d was sent %d appends conflicting with entries it committed", a.id, k))
		}
		var rs raft.Status
		n.query(func(rn *raft.RawNode) { rs = rn.Status() })
		for pid, pr := range rs.Progress {
			if m := c.members[pid]; m != nil && m.node != nil && pid != a.id && pr.Match > m.node.lastIndex.Load() {
				out = append(out, fmt.Sprintf("leader %d believes member %d holds index %d, past its log's end %d",
					a.id, pid, pr.Match, m.node.lastIndex.Load()))
			}
		}
		if cs := n.conf.Load(); !slices.Equal(sortedCopy(cs.GetVoters()), []uint64{1, 2, 3}) || len(cs.GetLearners()) > 0 {
			out = append(out, fmt.Sprintf("member %d's membership is %v", a.id, cs))
		}
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), "; ")
}

func sortedCopy(ids []uint64) []uint64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// forge makes one message from member from to member to, with fields drawn from
// boundary values around to's state and at random, and, for a snapshot, the stream of
// its records.
func forge(rng *rand.Rand, c *cluster, from, to uint64) (*raftpb.Message, ReadFunc) {
	n := c.members[to].node
	st := n.Status()
	last := n.lastIndex.Load()
	types := []raftpb.MessageType{raftpb.MsgApp, raftpb.MsgHeartbeat, raftpb.MsgSnap, raftpb.MsgVote,
		raftpb.MsgPreVote, raftpb.MsgAppResp, raftpb.MsgVoteResp, raftpb.MsgPreVoteResp, raftpb.MsgHeartbeatResp,
		raftpb.MsgProp, raftpb.MsgReadIndex, raftpb.MsgReadIndexResp}
	var typ raftpb.MessageType
	if rng.IntN(8) == 0 { // any type at all, local ones and unknown numbers included
		typ = raftpb.MessageType(rng.IntN(26))
	} else {
		typ = types[rng.IntN(len(types))]
	}
	claimed := from
	if rng.IntN(10) == 0 {
		claimed = pickOf[uint64](rng, 0, 1, 2, 3, 4, to, math.MaxUint64)
	}
	addressed := to
	if rng.IntN(10) == 0 {
		addressed = pickOf[uint64](rng, 0, 1, 2, 3, 99)
	}
	term := forgeTerm(rng, st.Term)
	m := &raftpb.Message{Type: typ.Enum(), From: new(claimed), To: new(addressed), Term: new(term),
		LogTerm: new(forgeLogTerm(rng, term, st.Term)), Index: new(forgeIndex(rng, last, st.Commit)),
		Commit: new(forgeIndex(rng, last, st.Commit)), Reject: new(rng.IntN(5) == 0)}
	if rng.IntN(6) == 0 {
		m.RejectHint = new(forgeIndex(rng, last, st.Commit))
	}
	if rng.IntN(8) == 0 {
		m.Context = randBytes(rng, 64)
	}
	if typ == raftpb.MsgApp || typ == raftpb.MsgProp || typ == raftpb.MsgReadIndex || typ == raftpb.MsgReadIndexResp || rng.IntN(10) == 0 {
		m.Entries = forgeEntries(rng, m, from)
	}
	if typ == raftpb.MsgProp || typ == raftpb.MsgReadIndex {
		if rng.IntN(4) != 0 {
			m.Term, m.LogTerm = new(uint64(0)), new(uint64(0)) // as raft sends them
		}
	}
	if typ != raftpb.MsgSnap {
		return m, nil
	}
	md := &raftpb.SnapshotMetadata{Index: new(forgeIndex(rng, last+5, st.Commit)), Term: new(forgeLogTerm(rng, term, st.Term))}
	switch rng.IntN(5) {
	case 0:
	case 1:
		md.ConfState = &raftpb.ConfState{Voters: []uint64{1, 2, 3, 4}}
	case 2:
		md.ConfState = &raftpb.ConfState{Voters: []uint64{1}, Learners: []uint64{1}}
	default:
		md.ConfState = &raftpb.ConfState{Voters: []uint64{1, 2, 3}}
	}
	m.Snapshot = &raftpb.Snapshot{Metadata: md}
	if rng.IntN(6) == 0 {
		return m, nil // a snapshot message without its stream
	}
	return m, forgeStream(rng, md)
}

// forgeStream is the record stream after a forged MsgSnap: the metadata record, then
// records of the test state machine's format, intact or not, of any length up to
// eight times the bound — generated as they are read, never held.
func forgeStream(rng *rand.Rand, md *raftpb.SnapshotMetadata) ReadFunc {
	kind := rng.IntN(7)
	seed := rng.Uint64()
	return func(fn func([]byte) error) error {
		r := rand.New(rand.NewPCG(seed, 7))
		first, _ := proto.Marshal(md)
		switch kind {
		case 0: // another snapshot's metadata
			other := proto.Clone(md).(*raftpb.SnapshotMetadata)
			other.Index = new(md.GetIndex() + 1)
			first, _ = proto.Marshal(other)
		case 1:
			first = randBytes(r, 40)
		}
		if err := fn(first); err != nil {
			return err
		}
		records := 1 + r.IntN(40)
		size := 64
		if kind == 2 { // absurd: far past the bound
			records, size = 8*forgeSnapLimit/(64<<10), 64<<10
		}
		for i := range records {
			rec := testRecord(uint64(i+1), md.GetTerm(), r.IntN(size))
			switch {
			case kind == 3 && i == records/2:
				rec = rec[:r.IntN(len(rec))] // cut short
			case kind == 4 && i == records/2:
				rec = randBytes(r, 100)
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
		if kind == 5 {
			return errors.New("forged stream: connection reset")
		}
		return nil
	}
}

// testRecord is a record of the test state machine's snapshot (snapshot_test.go).
func testRecord(index, term uint64, size int) []byte {
	b := make([]byte, 40+size)
	binary.BigEndian.PutUint64(b, index)
	binary.BigEndian.PutUint64(b[8:], term)
	binary.BigEndian.PutUint64(b[32:], uint64(size))
	return b
}

func forgeTerm(rng *rand.Rand, own uint64) uint64 {
	if rng.IntN(5) == 0 {
		return upTo(rng, own+2)
	}
	return pickOf(rng, 0, 1, own-1, own, own, own, own+1, own+2, own+MaxTermJump, own+MaxTermJump+1,
		own+TermCatchUp, own+TermCatchUp+1, own+2*TermCatchUp, 1<<31-1, 1<<31, MaxTerm-1, MaxTerm, MaxTerm+1,
		math.MaxUint64, rng.Uint64())
}

func forgeLogTerm(rng *rand.Rand, term, own uint64) uint64 {
	return pickOf(rng, 0, 1, own-1, own, term-1, term, term+1, upTo(rng, term))
}

func forgeIndex(rng *rand.Rand, last, commit uint64) uint64 {
	return pickOf(rng, 0, 1, commit-1, commit, commit+1, last-1, last, last, last+1, last+2,
		1<<40, maxIndex, maxIndex+1, math.MaxUint64, upTo(rng, last+10))
}

// forgeEntries makes 0 to 3 entries (now and then 50) that mostly follow m's index in
// terms between its log term and term, with data of every kind.
func forgeEntries(rng *rand.Rand, m *raftpb.Message, from uint64) []*raftpb.Entry {
	k := rng.IntN(4)
	if rng.IntN(20) == 0 {
		k = 50
	}
	var ents []*raftpb.Entry
	for i := range k {
		idx := m.GetIndex() + 1 + uint64(i)
		if rng.IntN(8) == 0 {
			idx = rng.Uint64()
		}
		term := pickOf(rng, m.GetLogTerm(), m.GetTerm(), m.GetTerm(), rng.Uint64())
		typ := []raftpb.EntryType{raftpb.EntryNormal, raftpb.EntryNormal, raftpb.EntryConfChange,
			raftpb.EntryConfChangeV2, raftpb.EntryType(7)}[rng.IntN(5)]
		e := &raftpb.Entry{Type: typ.Enum(), Index: new(idx), Term: new(term), Data: forgeData(rng, typ, from)}
		if m.GetType() == raftpb.MsgProp && rng.IntN(3) != 0 {
			e.Index, e.Term = nil, nil // as raft proposes
		}
		ents = append(ents, e)
	}
	return ents
}

func forgeData(rng *rand.Rand, typ raftpb.EntryType, from uint64) []byte {
	header := binary.BigEndian.AppendUint64(nil, pickOf(rng, from, from, 1, 2, 3, 0))
	header = binary.BigEndian.AppendUint64(header, rng.Uint64())
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return randBytes(rng, 64)
	}
	if typ == raftpb.EntryConfChange || typ == raftpb.EntryConfChangeV2 {
		change := raftpb.ConfChangeType(rng.IntN(5))
		cc := &raftpb.ConfChangeV2{Changes: []*raftpb.ConfChangeSingle{{Type: change.Enum(),
			NodeId: new(pickOf[uint64](rng, 1, 2, 3, 4, 0))}}, Context: append(header, randBytes(rng, 16)...)}
		if rng.IntN(4) == 0 {
			cc.Transition = raftpb.ConfChangeTransition(rng.IntN(5)).Enum()
		}
		b, _ := proto.Marshal(cc)
		return b
	}
	return append(header, randBytes(rng, 32)...)
}

// upTo draws from [0, n].
func upTo(rng *rand.Rand, n uint64) uint64 {
	if n == math.MaxUint64 {
		return rng.Uint64()
	}
	return rng.Uint64N(n + 1)
}

func pickOf[T any](rng *rand.Rand, vs ...T) T { return vs[rng.IntN(len(vs))] }

func randBytes(rng *rand.Rand, max int) []byte {
	b := make([]byte, rng.IntN(max+1))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
