package quorum

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// FuzzPeerFrames feeds a member's peer connection arbitrary bytes, as an attacker on the
// peer port (or a member gone wrong) would: frames are read as the transport reads them,
// their Raft messages checked as the Node checks them, and those that pass are stepped
// into a real Raft — a follower, or with the first byte odd a leader — whose Readies are
// persisted as the Node does. Nothing may panic: not the frame reader, not the checks,
// not Raft behind them.
func FuzzPeerFrames(f *testing.F) {
	for _, seed := range peerFrameSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		h := newFuzzRaft(t, data[0]&1 == 1)
		r := bufio.NewReader(bytes.NewReader(data[1:]))
		limits := frameLimits{raft: 1 << 20, snap: 1 << 20, note: 1 << 10}
		for range 64 {
			kind, body, err := readFrame(r, limits)
			if err != nil {
				return
			}
			switch kind {
			case frameHello:
				decodeHello(body)
			case frameRaft, frameSnap:
				m := new(raftpb.Message)
				if proto.Unmarshal(body, m) != nil {
					continue
				}
				h.step(m)
			}
		}
	})
}

// fuzzRaft is member 1 of voters 1, 2, 3 on a memory log: a snapshot at index 3, then
// entries of term 2 up to index 10.
type fuzzRaft struct {
	t  *testing.T
	ms *raft.MemoryStorage
	rn *raft.RawNode
	cs *raftpb.ConfState // the membership as of the applied index
}

func newFuzzRaft(t *testing.T, leader bool) *fuzzRaft {
	ms := raft.NewMemoryStorage()
	ms.ApplySnapshot(&raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(3)), Term: new(uint64(1)),
		ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}})
	var ents []*raftpb.Entry
	for i := uint64(4); i <= 10; i++ {
		ents = append(ents, &raftpb.Entry{Type: raftpb.EntryNormal.Enum(), Index: new(i), Term: new(uint64(2)), Data: proposal(2, "x")})
	}
	ms.Append(ents)
	ms.SetHardState(&raftpb.HardState{Term: new(uint64(2)), Commit: new(uint64(3))})
	rn, err := raft.NewRawNode(&raft.Config{ID: 1, ElectionTick: 10, HeartbeatTick: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, MaxUncommittedEntriesSize: 1 << 20,
		PreVote: true, CheckQuorum: true, StepDownOnRemoval: true, Logger: discardRaftLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	h := &fuzzRaft{t: t, ms: ms, rn: rn, cs: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}
	h.drain()
	if leader {
		rn.Campaign()
		h.drain()
		h.rawStep(&raftpb.Message{Type: raftpb.MsgPreVoteResp.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(3))})
		h.drain()
		h.rawStep(&raftpb.Message{Type: raftpb.MsgVoteResp.Enum(), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(3))})
		h.drain()
	}
	return h
}

// view is what the Node's checks would see of this Raft.
func (h *fuzzRaft) view() *checkView {
	st := h.rn.Status()
	last, _ := h.ms.LastIndex()
	return &checkView{self: 1, term: st.HardState.GetTerm(), lastIndex: last, leader: st.Lead, conf: h.cs, maxEntry: 1 << 20}
}

// step steps m, from the member it claims to be from, if the checks pass it.
func (h *fuzzRaft) step(m *raftpb.Message) {
	if h.view().check(m.GetFrom(), m) != nil {
		return
	}
	h.rawStep(m)
	h.drain()
}

func (h *fuzzRaft) rawStep(m *raftpb.Message) { h.rn.Step(m) }

// drain handles the Readies as the Node does: persist, apply conf changes, advance.
func (h *fuzzRaft) drain() {
	for h.rn.HasReady() {
		rd := h.rn.Ready()
		if !raft.IsEmptySnap(rd.Snapshot) {
			h.ms.ApplySnapshot(rd.Snapshot)
		}
		h.ms.Append(rd.Entries)
		if !raft.IsEmptyHardState(rd.HardState) {
			h.ms.SetHardState(rd.HardState)
		}
		for _, e := range rd.CommittedEntries {
			if e.GetType() != raftpb.EntryConfChangeV2 {
				continue
			}
			cc := new(raftpb.ConfChangeV2)
			if proto.Unmarshal(e.GetData(), cc) != nil {
				continue
			}
			if _, err := applyToConf(h.cs, cc); err == nil {
				h.cs = h.rn.ApplyConfChange(cc)
			}
		}
		h.rn.Advance(rd)
	}
}

type discardRaftLogger struct{}

func (discardRaftLogger) Debug(...any)              {}
func (discardRaftLogger) Debugf(string, ...any)     {}
func (discardRaftLogger) Info(...any)               {}
func (discardRaftLogger) Infof(string, ...any)      {}
func (discardRaftLogger) Warning(...any)            {}
func (discardRaftLogger) Warningf(string, ...any)   {}
func (discardRaftLogger) Error(...any)              {}
func (discardRaftLogger) Errorf(string, ...any)     {}
func (discardRaftLogger) Fatal(v ...any)            { panic(v) }
func (discardRaftLogger) Fatalf(f string, v ...any) { panic(f) }
func (discardRaftLogger) Panic(v ...any)            { panic(v) }
func (discardRaftLogger) Panicf(f string, v ...any) { panic(f) }

// peerFrameSeeds are frames members send, and the attacks issue 16 names.
func peerFrameSeeds(f *testing.F) [][]byte {
	raftFrame := func(m *raftpb.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		kind := frameRaft
		if m.GetType() == raftpb.MsgSnap {
			kind = frameSnap
		}
		return appendFrame(nil, kind, b)
	}
	heartbeat := msg(raftpb.MsgHeartbeat, 2, 3)
	heartbeat.Commit = new(uint64(10))
	overflow := msg(raftpb.MsgHeartbeat, 2, math.MaxUint64)
	app := msg(raftpb.MsgApp, 2, 3)
	app.Index, app.LogTerm, app.Commit = new(uint64(10)), new(uint64(2)), new(uint64(11))
	app.Entries = []*raftpb.Entry{typedEntry(raftpb.EntryNormal, 11, 3, proposal(2, "x"))}
	prop := msg(raftpb.MsgProp, 2, 0)
	prop.Entries = []*raftpb.Entry{{Type: raftpb.EntryNormal.Enum(), Data: proposal(2, "garbage txn")}}
	ack := msg(raftpb.MsgAppResp, 2, 3)
	ack.Index = new(uint64(11))
	vote := msg(raftpb.MsgPreVote, 2, 4)
	vote.Index, vote.LogTerm = new(uint64(10)), new(uint64(2))
	snap := msg(raftpb.MsgSnap, 2, 3)
	snap.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(20)), Term: new(uint64(3)),
		ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}
	read := msg(raftpb.MsgReadIndex, 2, 0)
	read.Entries = []*raftpb.Entry{{Data: []byte("12345678")}}
	hello := hello{from: 2, to: 1}.appendTo(nil)
	huge := binary.BigEndian.AppendUint32(nil, 64<<20)
	huge = append(huge, frameRaft)
	var seeds [][]byte
	for _, lead := range []byte{0, 1} {
		for _, frames := range [][][]byte{
			{hello, raftFrame(heartbeat), raftFrame(app)},
			{hello, raftFrame(overflow)},
			{raftFrame(prop), raftFrame(ack), raftFrame(read)},
			{raftFrame(vote), raftFrame(snap)},
			{appendFrame(nil, frameNote, []byte("12345678")), appendFrame(nil, frameKeepalive, nil)},
			{huge},
		} {
			seeds = append(seeds, append([]byte{lead}, bytes.Join(frames, nil)...))
		}
	}
	return seeds
}

// FuzzCheckedRaft builds Raft messages field by field — types, senders, terms and
// indexes around the member's own and at the extremes, entries and snapshots with
// arbitrary memberships — where FuzzPeerFrames would rarely stumble on a well-formed
// one, and steps each that the checks pass into a Raft, follower or leader. None may
// make it panic.
func FuzzCheckedRaft(f *testing.F) {
	f.Add(true, uint8(raftpb.MsgAppResp), uint8(2), uint64(3), uint64(0), uint64(11), uint64(0), false, uint64(0), uint8(0), uint64(0), uint8(0), []byte{1, 2, 3})
	f.Add(false, uint8(raftpb.MsgHeartbeat), uint8(2), uint64(3), uint64(0), uint64(0), uint64(10), false, uint64(0), uint8(0), uint64(0), uint8(0), []byte{})
	f.Add(false, uint8(raftpb.MsgApp), uint8(2), uint64(3), uint64(2), uint64(10), uint64(12), false, uint64(0), uint8(3), uint64(3), uint8(0), []byte{})
	f.Add(false, uint8(raftpb.MsgSnap), uint8(2), uint64(3), uint64(0), uint64(0), uint64(0), false, uint64(20), uint8(0), uint64(3), uint8(0), []byte{1, 2, 3, 0x81})
	f.Add(true, uint8(raftpb.MsgProp), uint8(3), uint64(0), uint64(0), uint64(0), uint64(0), false, uint64(0), uint8(1), uint64(0), uint8(2), []byte{4, 0x84})
	f.Add(true, uint8(raftpb.MsgReadIndex), uint8(3), uint64(0), uint64(0), uint64(0), uint64(0), false, uint64(0), uint8(1), uint64(0), uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, leader bool, typ, from uint8, term, logTerm, index, commit uint64, reject bool,
		hint uint64, nents uint8, entTerm uint64, entType uint8, members []byte) {
		h := newFuzzRaft(t, leader)
		m := &raftpb.Message{Type: raftpb.MessageType(typ % 24).Enum(), From: new(uint64(from % 5)), To: new(uint64(1)),
			Term: new(term), LogTerm: new(logTerm), Index: new(index), Commit: new(commit), Reject: new(reject), RejectHint: new(hint)}
		for i := range uint64(nents % 8) {
			e := &raftpb.Entry{Type: raftpb.EntryType(entType % 4).Enum(), Index: new(index + 1 + i), Term: new(entTerm)}
			switch e.GetType() {
			case raftpb.EntryNormal:
				e.Data = proposal(uint64(from%5), "x")
			case raftpb.EntryConfChangeV2:
				e.Data, _ = proto.Marshal(&raftpb.ConfChangeV2{Changes: confChanges(members), Context: proposal(uint64(from%5), "c")})
			}
			if m.GetType() == raftpb.MsgProp {
				e.Index, e.Term = nil, nil
			}
			m.Entries = append(m.Entries, e)
		}
		if m.GetType() == raftpb.MsgSnap {
			m.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: new(hint), Term: new(entTerm),
				ConfState: confState(members)}}
		}
		h.step(m)
		// A second message on the state the first left behind.
		m2 := proto.Clone(m).(*raftpb.Message)
		m2.Term = new(h.rn.Status().HardState.GetTerm())
		h.step(m2)
	})
}

// confChanges reads a membership change from bytes: each byte's low 3 bits are a
// member id, the next 2 the change's type.
func confChanges(b []byte) []*raftpb.ConfChangeSingle {
	var out []*raftpb.ConfChangeSingle
	for _, c := range b {
		out = append(out, &raftpb.ConfChangeSingle{Type: raftpb.ConfChangeType(c >> 3 & 3).Enum(), NodeId: new(uint64(c & 7))})
	}
	return out
}

// confState reads a membership from bytes: each byte's low 3 bits are a member id, the
// next 2 say voter, learner, outgoing voter or next learner.
func confState(b []byte) *raftpb.ConfState {
	cs := &raftpb.ConfState{}
	for _, c := range b {
		id := uint64(c & 7)
		switch c >> 3 & 3 {
		case 0:
			cs.Voters = append(cs.Voters, id)
		case 1:
			cs.Learners = append(cs.Learners, id)
		case 2:
			cs.VotersOutgoing = append(cs.VotersOutgoing, id)
		default:
			cs.LearnersNext = append(cs.LearnersNext, id)
		}
	}
	return cs
}
