package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"

	"go.etcd.io/raft/v3/confchange"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"
)

// The Raft library trusts its peers: a message out of range makes it panic (a term of
// 2⁶⁴−1 overflows at the next election, a heartbeat committing past the log's end, a
// proposal without entries, a conf change that does not decode or cannot be applied)
// or corrupts its log (entries whose indexes do not follow). check is the wall in front
// of it: every message a peer sends is checked here before Raft steps it,
// and one that fails is dropped and counted. Authentication (TLS) decides who may send;
// check decides what anyone may send.

// Terms. Raft adopts any higher term a message carries, and a member's term only grows
// (it is in its hard state): a term a member can be pushed to but not elected past
// would stop the ensemble for good, whatever restarts. A fixed bound alone does not
// do — a forger sends the bound itself, as a heartbeat of term 2³¹−1 did to the bound
// before — and a bound relative to the member's own term alone does not either:
// members pushed apart by more than it stop hearing each other for good. So a member
// takes a message of a term at most MaxTermJump past its own, and past that climbs:
// once per election timeout of its own ticks it raises its own term by up to
// TermCatchUp toward the message's, as a member whose election timer fired raises it
// (safe in Raft: a term moves without a vote), and takes the message itself if the
// climb reached its term. A member left behind, by elections or by a push it did not
// get, reaches the others at TermCatchUp an election timeout; a forger moves a member's
// term by at most MaxTermJump a Raft round (messages are checked against the term of
// the last Ready) and TermCatchUp an election timeout. Reaching MaxTerm, where Raft's
// arithmetic is still far from overflowing, then takes years of flooding even with an
// election timeout of 100 ms; every term below it is electable, the zxid epochs being
// counted apart from the terms (server/replica.go). A plain peer port is for loopback or
// a network nobody else reaches (docs/security.md), where this is the last line; member
// TLS keeps forgers out.
const (
	MaxTerm     = 1 << 62
	MaxTermJump = 1 << 10
	TermCatchUp = 1 << 32
)

// maxIndex bounds every log index a message may carry: far beyond any log a member
// will write, far below where index arithmetic wraps.
const maxIndex = 1 << 62

// errDropped wraps every reason check gives; errCommittedConflict, besides, an append
// that conflicts with entries the member committed, which only a forged log can cause.
var (
	errDropped           = errors.New("quorum: peer message dropped")
	errCommittedConflict = errors.New("conflicts with a committed entry")
)

func dropped(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errDropped, fmt.Sprintf(format, args...))
}

// peerTypes are the message types a member sends another. The rest are local to a
// member (MsgHup, MsgBeat, MsgUnreachable, MsgSnapStatus, MsgCheckQuorum, the storage
// messages), or leadership transfers, which paddock never starts: a forged
// MsgTimeoutNow would make a member campaign at once, skipping its pre-vote.
var peerTypes = map[raftpb.MessageType]bool{
	raftpb.MsgProp: true, raftpb.MsgApp: true, raftpb.MsgAppResp: true,
	raftpb.MsgVote: true, raftpb.MsgVoteResp: true, raftpb.MsgPreVote: true, raftpb.MsgPreVoteResp: true,
	raftpb.MsgSnap: true, raftpb.MsgHeartbeat: true, raftpb.MsgHeartbeatResp: true,
	raftpb.MsgReadIndex: true, raftpb.MsgReadIndexResp: true,
}

// checkView is what check knows of the member: it is read from other goroutines than
// the Ready loop's, so each part is a copy or an atomic.
type checkView struct {
	self      uint64
	term      uint64                               // the member's term as of its last Ready
	catchUp   func(from, term uint64) uint64       // climbs toward term, returning the member's term after; nil: never
	lastIndex uint64                               // the member's last log index as of its last Ready
	commit    uint64                               // the member's commit index as of its last Ready
	termAt    func(index uint64) (uint64, bool)    // the term of an entry of its stable log; nil: unknown
	leader    uint64                               // the leader it follows; 0 if none
	conf      *raftpb.ConfState                    // the membership as of its applied index
	entry     func(from uint64, data []byte) error // checks a proposal's data after its header; may be nil
	confCtx   func(ctx []byte, after *raftpb.ConfState) error
	maxEntry  int // the largest entry a proposal may carry
}

// check says why m, received on the connection of member from, must be dropped, or
// nil if it may be stepped into raft.
func (v *checkView) check(from uint64, m *raftpb.Message) error {
	typ := m.GetType()
	switch {
	case !peerTypes[typ]:
		return dropped("type %s is not sent between members", typ)
	case m.GetFrom() != from:
		return dropped("%s claims to be from member %d on member %d's connection", typ, m.GetFrom(), from)
	case from == v.self || from == 0:
		return dropped("%s from member %d", typ, from) // raft answers it, and panics sending to itself
	case m.GetTo() != v.self:
		return dropped("%s is addressed to member %d", typ, m.GetTo())
	}
	beyond, err := v.checkTerms(m)
	if err != nil {
		return err
	}
	if err := v.checkContent(from, m); err != nil {
		return err
	}
	if beyond && (v.catchUp == nil || v.catchUp(from, m.GetTerm()) < m.GetTerm()) {
		// Only a message that passed every other check makes the member climb.
		return dropped("%s with term %d: more than %d past this member's term %d (it climbs %d an election timeout)",
			typ, m.GetTerm(), MaxTermJump, v.term, uint64(TermCatchUp))
	}
	return nil
}

// checkContent checks what a message carries besides its terms: indexes, entries,
// contexts, snapshots, as its type allows.
func (v *checkView) checkContent(from uint64, m *raftpb.Message) error {
	if err := checkFields(m); err != nil {
		return err
	}
	switch typ := m.GetType(); typ {
	case raftpb.MsgProp:
		return v.checkProposal(from, m.GetEntries())
	case raftpb.MsgApp:
		if err := checkAppend(m); err != nil {
			return err
		}
		return v.checkCommitted(m)
	case raftpb.MsgAppResp:
		// A leader's log does not shrink in its term: a follower of that term cannot
		// have acknowledged more than it holds. (Other terms' answers raft ignores.)
		if !m.GetReject() && m.GetTerm() == v.term && m.GetIndex() > v.lastIndex {
			return dropped("%s acknowledges index %d past the log's end %d", typ, m.GetIndex(), v.lastIndex)
		}
	case raftpb.MsgHeartbeat:
		// A leader commits on a follower only what the follower acknowledged holding.
		if m.GetCommit() > v.lastIndex {
			return dropped("%s commits index %d past the log's end %d", typ, m.GetCommit(), v.lastIndex)
		}
	case raftpb.MsgSnap:
		return v.checkSnapshot(m)
	case raftpb.MsgReadIndex, raftpb.MsgReadIndexResp:
		if len(m.GetEntries()) != 1 {
			return dropped("%s with %d entries: want 1", typ, len(m.GetEntries()))
		}
		if typ == raftpb.MsgReadIndexResp && from != v.leader {
			return dropped("%s from member %d, which this member does not follow", typ, from)
		}
	}
	return nil
}

// checkTerms checks a message's terms against the member's: raft sends proposals and
// read requests without one (term 0 is its mark of a local message), everything else
// with one, at most MaxTermJump past the member's — beyond says it is further, which the
// member takes only once its climb reaches it (catchUp, in check).
func (v *checkView) checkTerms(m *raftpb.Message) (beyond bool, err error) {
	typ, term := m.GetType(), m.GetTerm()
	switch {
	case typ == raftpb.MsgProp || typ == raftpb.MsgReadIndex:
		if term != 0 || m.GetLogTerm() != 0 {
			return false, dropped("%s with term %d", typ, term)
		}
	case term == 0 || term > MaxTerm:
		return false, dropped("%s with term %d: want 1 to %d", typ, term, uint64(MaxTerm))
	case m.GetLogTerm() > term:
		return false, dropped("%s with log term %d past its term %d", typ, m.GetLogTerm(), term)
	}
	return term > v.term+MaxTermJump, nil
}

// checkFields checks the indexes and that entries and snapshots come only with the
// messages that carry them.
func checkFields(m *raftpb.Message) error {
	typ := m.GetType()
	switch {
	case m.GetIndex() > maxIndex || m.GetCommit() > maxIndex || m.GetRejectHint() > maxIndex:
		return dropped("%s with an index out of range", typ)
	case len(m.GetEntries()) > 0 && typ != raftpb.MsgApp && typ != raftpb.MsgProp &&
		typ != raftpb.MsgReadIndex && typ != raftpb.MsgReadIndexResp:
		return dropped("%s with entries", typ)
	case m.GetSnapshot() != nil && typ != raftpb.MsgSnap:
		return dropped("%s with a snapshot", typ)
	}
	// Raft puts a context on heartbeats alone (their read-only index, 8 bytes, which
	// the leader decodes from the answer and panics on any other length), and on a
	// leadership transfer's vote, which paddock never starts (and which would make a
	// member vote inside its leader's lease).
	switch ctx := len(m.GetContext()); {
	case ctx == 0:
	case typ != raftpb.MsgHeartbeat && typ != raftpb.MsgHeartbeatResp:
		return dropped("%s with a context", typ)
	case ctx != 8:
		return dropped("%s with a context of %d bytes: want 8", typ, ctx)
	}
	return nil
}

// checkCommitted drops an append whose previous entry is one this member committed,
// in another term. No real leader sends one — its log holds every committed entry —
// so it shows a log forged before (docs/security.md, "What no check can catch"); and Raft
// answers it without waiting for a tick: the follower rejects, the leader probes back,
// the follower answers with its commit, the leader sends the same append again, without
// end, a core each. Dropped, it is sent again at the leader's next heartbeat.
func (v *checkView) checkCommitted(m *raftpb.Message) error {
	idx := m.GetIndex()
	if idx == 0 || idx > v.commit || v.termAt == nil {
		return nil
	}
	if t, ok := v.termAt(idx); ok && t != m.GetLogTerm() {
		return fmt.Errorf("%w: %w: %s after index %d of term %d: this member committed it in term %d",
			errDropped, errCommittedConflict, m.GetType(), idx, m.GetLogTerm(), t)
	}
	return nil
}

// checkAppend checks that an append's entries follow its previous index one by one,
// in the terms of a log: from its log term up to its term, never down.
func checkAppend(m *raftpb.Message) error {
	prev, term := m.GetLogTerm(), m.GetTerm()
	for i, e := range m.GetEntries() {
		switch {
		case e.GetIndex() != m.GetIndex()+1+uint64(i):
			return dropped("append after index %d holds entry %d at position %d", m.GetIndex(), e.GetIndex(), i)
		case e.GetTerm() < prev || e.GetTerm() > term:
			return dropped("append entry %d has term %d outside [%d, %d]", e.GetIndex(), e.GetTerm(), prev, term)
		case !knownEntryType(e.GetType()):
			return dropped("append entry %d has type %d", e.GetIndex(), e.GetType())
		}
		prev = e.GetTerm()
	}
	return nil
}

func knownEntryType(t raftpb.EntryType) bool {
	return t == raftpb.EntryNormal || t == raftpb.EntryConfChange || t == raftpb.EntryConfChangeV2
}

// checkProposal checks the entries a member proposes: the leader refuses here what
// would otherwise enter the log. Each is a proposal of from's own (its header names
// it), within the size bound, whose data the state machine can decode — or a
// membership change that decodes and applies to the current membership.
func (v *checkView) checkProposal(from uint64, ents []*raftpb.Entry) error {
	if len(ents) == 0 {
		return dropped("proposal without entries")
	}
	for _, e := range ents {
		if e.GetIndex() != 0 || e.GetTerm() != 0 {
			return dropped("proposal entry with index %d, term %d: the leader gives them", e.GetIndex(), e.GetTerm())
		}
		if size := len(e.GetData()); size > v.maxEntry {
			return dropped("proposal entry of %d bytes: at most %d", size, v.maxEntry)
		}
		var err error
		switch e.GetType() {
		case raftpb.EntryNormal:
			err = v.checkData(from, e.GetData())
		case raftpb.EntryConfChangeV2:
			err = v.checkConfChange(from, e.GetData())
		default: // members propose membership changes as ConfChangeV2 only
			err = fmt.Errorf("entry type %s", e.GetType())
		}
		if err != nil {
			return dropped("proposal: %v", err)
		}
	}
	return nil
}

// checkData checks a normal proposal: the header naming from, then the caller's data.
func (v *checkView) checkData(from uint64, data []byte) error {
	if err := checkHeader(from, data); err != nil {
		return err
	}
	if v.entry == nil {
		return nil
	}
	return v.entry(from, data[proposalHeader:])
}

func checkHeader(from uint64, data []byte) error {
	if len(data) < proposalHeader {
		return fmt.Errorf("%d bytes: shorter than the proposal header", len(data))
	}
	if id := binary.BigEndian.Uint64(data); id != from {
		return fmt.Errorf("header names member %d, sent by member %d", id, from)
	}
	return nil
}

// checkConfChange checks a proposed membership change: it decodes, its context holds
// from's proposal header, it applies to the current membership, and the caller accepts
// its context for the membership it makes.
func (v *checkView) checkConfChange(from uint64, data []byte) error {
	cc := new(raftpb.ConfChangeV2)
	if err := proto.Unmarshal(data, cc); err != nil {
		return fmt.Errorf("membership change: %w", err)
	}
	if err := checkHeader(from, cc.GetContext()); err != nil {
		return fmt.Errorf("membership change context: %w", err)
	}
	after, err := applyToConf(v.conf, cc)
	if err != nil {
		return err
	}
	if v.confCtx != nil {
		return v.confCtx(cc.GetContext()[proposalHeader:], after)
	}
	return nil
}

// applyToConf returns the membership cs becomes with cc, or why cc cannot apply to it:
// raft panics on a change it cannot apply, so none may reach it.
func applyToConf(cs *raftpb.ConfState, cc *raftpb.ConfChangeV2) (*raftpb.ConfState, error) {
	switch cc.GetTransition() {
	case raftpb.ConfChangeTransitionAuto, raftpb.ConfChangeTransitionJointImplicit,
		raftpb.ConfChangeTransitionJointExplicit:
	default:
		return nil, fmt.Errorf("membership change with transition %d", cc.GetTransition())
	}
	for _, c := range cc.GetChanges() {
		if _, ok := raftpb.ConfChangeType_name[int32(c.GetType())]; !ok {
			return nil, fmt.Errorf("membership change of type %d", c.GetType())
		}
	}
	tr, err := trackerOf(cs)
	if err != nil {
		return nil, err
	}
	ch := confchange.Changer{Tracker: tr, LastIndex: 1}
	var cfg tracker.Config
	var prs tracker.ProgressMap
	switch autoLeave, joint := cc.EnterJoint(); {
	case cc.LeaveJoint():
		cfg, prs, err = ch.LeaveJoint()
	case joint:
		cfg, prs, err = ch.EnterJoint(autoLeave, cc.GetChanges()...)
	default:
		cfg, prs, err = ch.Simple(cc.GetChanges()...)
	}
	if err != nil {
		return nil, fmt.Errorf("membership change %s: %w", describeChanges(cc), err)
	}
	tr.Config, tr.Progress = cfg, prs
	return tr.ConfState(), nil
}

// trackerOf returns a progress tracker holding membership cs.
func trackerOf(cs *raftpb.ConfState) (tracker.ProgressTracker, error) {
	if cs == nil {
		cs = &raftpb.ConfState{} // no members (confchange.Restore reads its fields directly)
	}
	tr := tracker.MakeProgressTracker(1, 0)
	cfg, prs, err := confchange.Restore(confchange.Changer{Tracker: tr, LastIndex: 1}, cs)
	if err != nil {
		return tr, fmt.Errorf("membership %v: %w", cs, err)
	}
	tr.Config, tr.Progress = cfg, prs
	return tr, nil
}

func describeChanges(cc *raftpb.ConfChangeV2) string {
	var s []byte
	for i, c := range cc.GetChanges() {
		if i > 0 {
			s = append(s, ' ')
		}
		s = fmt.Appendf(s, "%s(%d)", c.GetType(), c.GetNodeId())
	}
	return "[" + string(s) + "]"
}

// checkSnapshot checks a snapshot a leader sends: from the leader this member follows,
// in its term, an index and term in range, a membership that can be restored. Its data is checked as
// Storage.Receive keeps it, once these checks passed.
func (v *checkView) checkSnapshot(m *raftpb.Message) error {
	s := m.GetSnapshot()
	md := s.GetMetadata()
	switch {
	case m.GetTerm() != v.term || m.GetFrom() != v.leader:
		// Only the leader a member follows sends it a snapshot, in their term: it sent
		// appends first, which taught the member both. Anyone else's is dropped before
		// its records are read (a lost real one is sent again at the next rejection).
		return dropped("snapshot from member %d in term %d: this member follows member %d in term %d",
			m.GetFrom(), m.GetTerm(), v.leader, v.term)
	case s == nil || md == nil:
		return dropped("snapshot message without a snapshot")
	case md.GetIndex() == 0 || md.GetIndex() > maxIndex:
		return dropped("snapshot at index %d", md.GetIndex())
	case md.GetTerm() == 0 || md.GetTerm() > m.GetTerm():
		return dropped("snapshot of term %d sent in term %d", md.GetTerm(), m.GetTerm())
	}
	// Raft restores the membership and panics unless it gets back what it was given:
	// no duplicates, no member in two roles.
	tr, err := trackerOf(md.GetConfState())
	if err == nil && md.GetConfState() != nil {
		err = md.GetConfState().Equivalent(tr.ConfState())
	}
	if err != nil {
		return dropped("snapshot: %v", err)
	}
	return nil // the data is checked as it is kept (Storage.Receive)
}
