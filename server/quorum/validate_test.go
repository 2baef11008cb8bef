package quorum

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// testView is member 1 of voters 1, 2, 3 at term 5 with a log ending at index 100,
// following member 2; proposals' data must start with "ok".
func testView() *checkView {
	return &checkView{
		self: 1, term: 5, lastIndex: 100, leader: 2,
		conf: &raftpb.ConfState{Voters: []uint64{1, 2, 3}},
		entry: func(_ uint64, data []byte) error {
			if !strings.HasPrefix(string(data), "ok") {
				return errors.New("bad data")
			}
			return nil
		},
		maxEntry: 1 << 10,
	}
}

func proposal(from uint64, data string) []byte {
	b := binary.BigEndian.AppendUint64(nil, from)
	b = binary.BigEndian.AppendUint64(b, 7)
	return append(b, data...)
}

func confChange(t *testing.T, from uint64, cc *raftpb.ConfChangeV2) []byte {
	t.Helper()
	cc.Context = proposal(from, "ctx")
	b, err := proto.Marshal(cc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func msg(typ raftpb.MessageType, from, term uint64) *raftpb.Message {
	return &raftpb.Message{Type: typ.Enum(), From: new(from), To: new(uint64(1)), Term: new(term)}
}

func typedEntry(typ raftpb.EntryType, index, term uint64, data []byte) *raftpb.Entry {
	return &raftpb.Entry{Type: typ.Enum(), Index: new(index), Term: new(term), Data: data}
}

func TestCheckDropsWhatRaftCannotTake(t *testing.T) {
	single := func(c *raftpb.ConfChangeSingle) *raftpb.ConfChangeV2 {
		return &raftpb.ConfChangeV2{Changes: []*raftpb.ConfChangeSingle{c}}
	}
	change := func(typ raftpb.ConfChangeType, id uint64) *raftpb.ConfChangeSingle {
		return &raftpb.ConfChangeSingle{Type: typ.Enum(), NodeId: new(id)}
	}
	tests := []struct {
		name string
		m    func() *raftpb.Message
		from uint64
		ok   bool
	}{
		{"heartbeat", func() *raftpb.Message {
			m := msg(raftpb.MsgHeartbeat, 2, 5)
			m.Commit = new(uint64(90))
			return m
		}, 2, true},
		{"term 2^64-1 (overflows at the next election)", func() *raftpb.Message {
			return msg(raftpb.MsgHeartbeat, 2, math.MaxUint64)
		}, 2, false},
		{"term 2^31-1 (issue 31: the old bound, which stopped the ensemble for good)", func() *raftpb.Message {
			return msg(raftpb.MsgHeartbeat, 2, 1<<31-1)
		}, 2, false},
		{"a term more than MaxTermJump past the member's", func() *raftpb.Message {
			return msg(raftpb.MsgVote, 2, 5+MaxTermJump+1)
		}, 2, false},
		{"the largest term past the member's", func() *raftpb.Message { return msg(raftpb.MsgPreVote, 2, 5+MaxTermJump) }, 2, true},
		{"term 0 on a message that needs one", func() *raftpb.Message { return msg(raftpb.MsgApp, 2, 0) }, 2, false},
		{"a sender other than the connection's member", func() *raftpb.Message {
			return msg(raftpb.MsgHeartbeat, 3, 5)
		}, 2, false},
		{"addressed to another member", func() *raftpb.Message {
			m := msg(raftpb.MsgHeartbeat, 2, 5)
			m.To = new(uint64(3))
			return m
		}, 2, false},
		{"a local message type", func() *raftpb.Message { return msg(raftpb.MsgHup, 2, 5) }, 2, false},
		{"a forged leadership transfer", func() *raftpb.Message { return msg(raftpb.MsgTimeoutNow, 2, 5) }, 2, false},
		{"heartbeat committing past the log's end", func() *raftpb.Message {
			m := msg(raftpb.MsgHeartbeat, 2, 5)
			m.Commit = new(uint64(101))
			return m
		}, 2, false},
		{"ack past the leader's log in its term", func() *raftpb.Message {
			m := msg(raftpb.MsgAppResp, 3, 5)
			m.Index = new(uint64(1000))
			return m
		}, 3, false},
		{"ack of a later term (raft steps down on it)", func() *raftpb.Message {
			m := msg(raftpb.MsgAppResp, 3, 6)
			m.Index = new(uint64(1000))
			return m
		}, 3, true},
		{"log term past the term", func() *raftpb.Message {
			m := msg(raftpb.MsgVote, 2, 5)
			m.LogTerm = new(uint64(6))
			return m
		}, 2, false},
		{"append", func() *raftpb.Message {
			m := msg(raftpb.MsgApp, 2, 5)
			m.Index, m.LogTerm = new(uint64(10)), new(uint64(4))
			m.Entries = []*raftpb.Entry{typedEntry(raftpb.EntryNormal, 11, 4, nil), typedEntry(raftpb.EntryNormal, 12, 5, []byte("x"))}
			return m
		}, 2, true},
		{"append with a gap", func() *raftpb.Message {
			m := msg(raftpb.MsgApp, 2, 5)
			m.Index, m.LogTerm = new(uint64(10)), new(uint64(4))
			m.Entries = []*raftpb.Entry{typedEntry(raftpb.EntryNormal, 11, 4, nil), typedEntry(raftpb.EntryNormal, 13, 5, nil)}
			return m
		}, 2, false},
		{"append with terms going down", func() *raftpb.Message {
			m := msg(raftpb.MsgApp, 2, 5)
			m.Index, m.LogTerm = new(uint64(10)), new(uint64(4))
			m.Entries = []*raftpb.Entry{typedEntry(raftpb.EntryNormal, 11, 5, nil), typedEntry(raftpb.EntryNormal, 12, 4, nil)}
			return m
		}, 2, false},
		{"append of an unknown entry type", func() *raftpb.Message {
			m := msg(raftpb.MsgApp, 2, 5)
			m.Index, m.LogTerm = new(uint64(10)), new(uint64(4))
			m.Entries = []*raftpb.Entry{typedEntry(raftpb.EntryType(9), 11, 5, nil)}
			return m
		}, 2, false},
		{"entries on a vote", func() *raftpb.Message {
			m := msg(raftpb.MsgVote, 2, 5)
			m.Entries = []*raftpb.Entry{typedEntry(raftpb.EntryNormal, 11, 5, nil)}
			return m
		}, 2, false},
		{"proposal", func() *raftpb.Message {
			m := msg(raftpb.MsgProp, 3, 0)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryNormal.Enum(), Data: proposal(3, "ok txns")}}
			return m
		}, 3, true},
		{"proposal without entries (raft panics)", func() *raftpb.Message { return msg(raftpb.MsgProp, 3, 0) }, 3, false},
		{"proposal with a term", func() *raftpb.Message {
			m := msg(raftpb.MsgProp, 3, 5)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryNormal.Enum(), Data: proposal(3, "ok")}}
			return m
		}, 3, false},
		{"proposal the state machine cannot decode", func() *raftpb.Message {
			m := msg(raftpb.MsgProp, 3, 0)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryNormal.Enum(), Data: proposal(3, "garbage")}}
			return m
		}, 3, false},
		{"proposal shorter than its header", func() *raftpb.Message {
			m := msg(raftpb.MsgProp, 3, 0)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryNormal.Enum(), Data: []byte("ok")}}
			return m
		}, 3, false},
		{"proposal in another member's name", func() *raftpb.Message {
			m := msg(raftpb.MsgProp, 3, 0)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryNormal.Enum(), Data: proposal(2, "ok")}}
			return m
		}, 3, false},
		{"proposal over the size bound", func() *raftpb.Message {
			m := msg(raftpb.MsgProp, 3, 0)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryNormal.Enum(), Data: proposal(3, "ok"+strings.Repeat("x", 2000))}}
			return m
		}, 3, false},
		{"membership change", func() *raftpb.Message {
			m := msg(raftpb.MsgProp, 3, 0)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryConfChangeV2.Enum(),
				Data: confChange(t, 3, single(change(raftpb.ConfChangeAddLearnerNode, 4)))}}
			return m
		}, 3, true},
		{"membership change removing every voter (raft panics at apply)", func() *raftpb.Message {
			m := msg(raftpb.MsgProp, 3, 0)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryConfChangeV2.Enum(), Data: confChange(t, 3, &raftpb.ConfChangeV2{
				Changes: []*raftpb.ConfChangeSingle{change(raftpb.ConfChangeRemoveNode, 1),
					change(raftpb.ConfChangeRemoveNode, 2), change(raftpb.ConfChangeRemoveNode, 3)}})}}
			return m
		}, 3, false},
		{"membership change with an unknown transition (raft panics)", func() *raftpb.Message {
			cc := single(change(raftpb.ConfChangeAddNode, 4))
			cc.Transition = raftpb.ConfChangeTransition(7).Enum()
			m := msg(raftpb.MsgProp, 3, 0)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryConfChangeV2.Enum(), Data: confChange(t, 3, cc)}}
			return m
		}, 3, false},
		{"membership change that does not decode (raft panics)", func() *raftpb.Message {
			m := msg(raftpb.MsgProp, 3, 0)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryConfChangeV2.Enum(), Data: []byte{0xff, 0xff, 0xff}}}
			return m
		}, 3, false},
		{"a version 1 membership change", func() *raftpb.Message {
			m := msg(raftpb.MsgProp, 3, 0)
			m.Entries = []*raftpb.Entry{{Type: raftpb.EntryConfChange.Enum()}}
			return m
		}, 3, false},
		{"read index without its context entry (raft panics)", func() *raftpb.Message {
			return msg(raftpb.MsgReadIndex, 3, 0)
		}, 3, false},
		{"read index answer from a member that does not lead", func() *raftpb.Message {
			m := msg(raftpb.MsgReadIndexResp, 3, 5)
			m.Entries = []*raftpb.Entry{{Data: []byte("12345678")}}
			return m
		}, 3, false},
		{"snapshot", func() *raftpb.Message {
			m := msg(raftpb.MsgSnap, 2, 5)
			m.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(200)), Term: new(uint64(5)),
				ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}
			return m
		}, 2, true},
		{"snapshot from a member that does not lead (issue 31)", func() *raftpb.Message {
			m := msg(raftpb.MsgSnap, 3, 5)
			m.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(200)), Term: new(uint64(5)),
				ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}
			return m
		}, 3, false},
		{"snapshot from the leader in a later term than the member's", func() *raftpb.Message {
			m := msg(raftpb.MsgSnap, 2, 6)
			m.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(200)), Term: new(uint64(5)),
				ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}
			return m
		}, 2, false},
		{"snapshot without a membership", func() *raftpb.Message {
			m := msg(raftpb.MsgSnap, 2, 5)
			m.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(200)), Term: new(uint64(5))}}
			return m
		}, 2, true}, // raft ignores a snapshot whose membership lacks this member
		{"snapshot with an impossible membership (raft panics)", func() *raftpb.Message {
			m := msg(raftpb.MsgSnap, 2, 5)
			m.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(200)), Term: new(uint64(5)),
				ConfState: &raftpb.ConfState{Voters: []uint64{1}, Learners: []uint64{1}}}}
			return m
		}, 2, false},
		{"snapshot of a later term than its message", func() *raftpb.Message {
			m := msg(raftpb.MsgSnap, 2, 5)
			m.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(200)), Term: new(uint64(6)),
				ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}
			return m
		}, 2, false},
		{"snapshot message without a snapshot", func() *raftpb.Message { return msg(raftpb.MsgSnap, 2, 5) }, 2, false},
		{"heartbeat answer with a context of 6 bytes (issue 31: the leader panics)", func() *raftpb.Message {
			m := msg(raftpb.MsgHeartbeatResp, 2, 5)
			m.Context = []byte("abcdef")
			return m
		}, 2, false},
		{"heartbeat answer with its read-only index", func() *raftpb.Message {
			m := msg(raftpb.MsgHeartbeatResp, 2, 5)
			m.Context = []byte("12345678")
			return m
		}, 2, true},
		{"vote of a leadership transfer (votes inside the lease)", func() *raftpb.Message {
			m := msg(raftpb.MsgVote, 2, 6)
			m.Context = []byte("CampaignTransfer")
			return m
		}, 2, false},
		{"index out of range", func() *raftpb.Message {
			m := msg(raftpb.MsgVote, 2, 5)
			m.Index = new(uint64(math.MaxUint64))
			return m
		}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := testView().check(tt.from, tt.m())
			if (err == nil) != tt.ok {
				t.Fatalf("check = %v, want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, errDropped) {
				t.Errorf("error %v does not wrap errDropped", err)
			}
		})
	}
}

func TestApplyToConf(t *testing.T) {
	cs := &raftpb.ConfState{Voters: []uint64{1, 2, 3}}
	after, err := applyToConf(cs, &raftpb.ConfChangeV2{Changes: []*raftpb.ConfChangeSingle{
		{Type: raftpb.ConfChangeAddLearnerNode.Enum(), NodeId: new(uint64(4))}}})
	if err != nil || len(after.GetLearners()) != 1 || after.GetLearners()[0] != 4 {
		t.Fatalf("add learner 4: %v, %v", after, err)
	}
	if _, err := applyToConf(nil, &raftpb.ConfChangeV2{Changes: []*raftpb.ConfChangeSingle{
		{Type: raftpb.ConfChangeAddNode.Enum(), NodeId: new(uint64(1))}}}); err != nil {
		t.Errorf("add a voter to no membership: %v", err)
	}
	if _, err := applyToConf(cs, &raftpb.ConfChangeV2{}); err == nil {
		t.Errorf("leaving a joint state that is not joint: no error")
	}
	if _, err := applyToConf(cs, &raftpb.ConfChangeV2{Changes: []*raftpb.ConfChangeSingle{
		{Type: raftpb.ConfChangeType(9).Enum(), NodeId: new(uint64(4))}}}); err == nil {
		t.Errorf("a change of unknown type: no error")
	}
}

// TestCheckTermCatchUp: past MaxTermJump a message is taken only when the member's
// climb reaches its term (once an election timeout, by at most TermCatchUp).
func TestCheckTermCatchUp(t *testing.T) {
	climbs := 0
	v := testView()
	v.catchUp = func(from, term uint64) uint64 {
		if climbs++; climbs > 2 {
			return v.term // the allowance is spent
		}
		return min(term, v.term+TermCatchUp)
	}
	tests := []struct {
		term uint64
		ok   bool
	}{
		{5 + MaxTermJump, true},      // within the jump bound: no climb
		{5 + TermCatchUp + 1, false}, // the climb stops short of it
		{5 + TermCatchUp, true},      // the climb reaches it
		{5 + MaxTermJump + 1, false}, // no climb left
		{MaxTerm + 1, false},
	}
	for _, tt := range tests {
		err := v.check(2, msg(raftpb.MsgHeartbeat, 2, tt.term))
		if (err == nil) != tt.ok {
			t.Errorf("term %d: check = %v, want ok %v", tt.term, err, tt.ok)
		}
	}
	if climbs != 3 {
		t.Errorf("%d climbs asked, want 3", climbs)
	}
	// A message that fails any other check never makes the member climb.
	bad := msg(raftpb.MsgHeartbeat, 2, 5+TermCatchUp)
	bad.Commit = new(uint64(1000)) // past the log's end
	if err := v.check(2, bad); err == nil || climbs != 3 {
		t.Errorf("a heartbeat committing past the log, far ahead: %v after %d climbs asked, want dropped before climbing", err, climbs)
	}
}

// TestClampCommit: within a batch, an append that cuts the log's tail lowers what a
// heartbeat after it may commit (Raft panics past the log's end).
func TestClampCommit(t *testing.T) {
	low := uint64(100) // the log's end as of the last Ready
	app := msg(raftpb.MsgApp, 2, 5)
	app.Index = new(uint64(90))
	app.Entries = []*raftpb.Entry{typedEntry(raftpb.EntryNormal, 91, 5, nil)}
	if low = clampCommit(app, low); low != 91 {
		t.Fatalf("after an append ending at 91: low %d", low)
	}
	hb := msg(raftpb.MsgHeartbeat, 2, 5)
	hb.Commit = new(uint64(100))
	if low = clampCommit(hb, low); hb.GetCommit() != 91 || low != 91 {
		t.Fatalf("heartbeat commit %d, low %d: want 91, 91", hb.GetCommit(), low)
	}
	hb.Commit = new(uint64(50))
	if clampCommit(hb, low); hb.GetCommit() != 50 {
		t.Fatalf("a heartbeat within the log was changed to commit %d", hb.GetCommit())
	}
}

// TestCheckCommitted: an append whose previous entry is one the member committed in
// another term is dropped (a real leader's log holds every committed entry; Raft would
// answer it in a loop without ticks); one that agrees, or past the commit index, passes.
func TestCheckCommitted(t *testing.T) {
	v := testView()
	v.commit = 90
	v.termAt = func(i uint64) (uint64, bool) { return 4, i <= 100 }
	app := func(index, logTerm uint64) *raftpb.Message {
		m := msg(raftpb.MsgApp, 2, 5)
		m.Index, m.LogTerm = new(index), new(logTerm)
		return m
	}
	for _, tt := range []struct {
		index, logTerm uint64
		ok             bool
	}{
		{90, 4, true},  // the committed entry as the member holds it
		{90, 3, false}, // the committed entry in another term
		{89, 5, false},
		{91, 3, true}, // past the commit: Raft decides
		{0, 0, true},
	} {
		if err := v.check(2, app(tt.index, tt.logTerm)); (err == nil) != tt.ok {
			t.Errorf("append after %d of term %d: %v, want ok %v", tt.index, tt.logTerm, err, tt.ok)
		}
	}
}
