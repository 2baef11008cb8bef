package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/quorum"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// What a member checks of what other members send it, on top of quorum's checks of
// the Raft messages themselves (server/quorum/validate.go): the leader decodes every
// batch another member proposes before it enters the log, every member checks a
// membership change's server lines against the membership Raft makes of it, and a
// snapshot a leader sends is loaded once before Raft takes it. Nothing a peer sends can
// stop a member: what does not decode never enters the log, and should something
// undecodable be committed all the same, every member applies it as an error txn.

// checkEntry is quorum's CheckEntry: a batch member from proposes must decode, as every
// member will decode it, and hold only txns a member proposes for its clients: each of
// a session (the sessionless ones — container and TTL reaping, session expiry — are
// the leader's own), a session it creates carrying its own id in the top byte, as
// every session id a member hands out does (initialSessionID).
func (r *replica) checkEntry(from uint64, data []byte) error {
	batch, err := decodeBatch(data)
	if err != nil {
		return fmt.Errorf("txn batch: %w", err)
	}
	if len(batch) == 0 {
		return errors.New("txn batch without txns")
	}
	for _, p := range batch {
		x := p.txn
		switch {
		case x.Session == 0:
			return fmt.Errorf("a %v txn of no session: only the leader proposes those", x.Op)
		case x.Op == wire.OpCreateSession && uint64(x.Session)>>56 != from:
			return fmt.Errorf("member %d creates session %s, which is not one of its ids", from, hexID(x.Session))
		case x.Op == wire.OpReconfig:
			return errors.New("a reconfig txn: membership changes are Raft's, not txns")
		case x.Op == wire.OpMulti && !normalizeMulti(wire.OpMulti, x.Req.(*wire.MultiRequest)):
			return errors.New("a multi that a client's would have been refused")
		}
	}
	return nil
}

// membershipChange is the caller's context of a reconfig's Raft membership change: the
// proposer's clock and the new ensemble's server lines.
type membershipChange struct {
	mtime   int64
	members []Member
}

// decodeMembershipChange decodes a membership change's context.
func decodeMembershipChange(ctx []byte) (membershipChange, error) {
	if len(ctx) < 8 {
		return membershipChange{}, fmt.Errorf("membership change context of %d bytes", len(ctx))
	}
	ms, err := parseServerLines(ctx[8:])
	if err != nil {
		return membershipChange{}, fmt.Errorf("membership change: %w", err)
	}
	return membershipChange{mtime: int64(binary.BigEndian.Uint64(ctx)), members: ms}, nil
}

// checkConfChange is quorum's CheckConfChange: the server lines of a membership
// change must parse and name exactly the members Raft's membership after it holds, as
// participants and observers. It runs where the change is proposed, on the leader, and
// at apply on every member (deterministically: a change it refuses there is skipped
// by all).
func (r *replica) checkConfChange(ctx []byte, after *raftpb.ConfState) error {
	mc, err := decodeMembershipChange(ctx)
	if err != nil {
		return err
	}
	if err := sameMembers(mc.members, after); err != nil {
		return fmt.Errorf("membership change: %w", err)
	}
	return nil
}

// sameMembers checks that ms, server lines sorted by id, name exactly the voters of cs
// as participants and its learners as observers.
func sameMembers(ms []Member, cs *raftpb.ConfState) error {
	var voters, learners []uint64
	for i, m := range ms {
		switch {
		case m.ID < 1 || m.ID > 254:
			return fmt.Errorf("server id %d out of [1, 254]", m.ID)
		case i > 0 && ms[i-1].ID == m.ID:
			return fmt.Errorf("server %d listed twice", m.ID)
		case m.Observer:
			learners = append(learners, uint64(m.ID))
		default:
			voters = append(voters, uint64(m.ID))
		}
	}
	wantVoters := sortedIDs(cs.GetVoters())
	wantLearners := sortedIDs(append(slices.Clone(cs.GetLearners()), cs.GetLearnersNext()...))
	if !slices.Equal(voters, wantVoters) || !slices.Equal(learners, wantLearners) {
		return fmt.Errorf("lists participants %v and observers %v; the membership is %v and %v",
			voters, learners, wantVoters, wantLearners)
	}
	return nil
}

func sortedIDs(ids []uint64) []uint64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// A snapshot another member sends is built into a tree as its records arrive
// (CheckSnapshot), proven restorable there — the records make a consistent tree with
// the nodes every member's holds, and its /zookeeper/config names the members its Raft
// membership holds — and kept for the Restore that installs it, so that it is built
// once and Restore, which may not fail, has nothing left to check. Its size is
// bounded by snapshotLimit before anything is built.

// preparedSnapshot is a tree CheckSnapshot built and proved, for the Restore of its
// index and term.
type preparedSnapshot struct {
	index, term uint64
	tree        *datatree.Tree
	members     []Member
}

// CheckSnapshot implements quorum.SnapshotChecker: the snapshot md, whose records read
// yields, must load into a tree that restoreState accepts with md's membership. The
// tree is kept for Restore.
func (r *replica) CheckSnapshot(read quorum.ReadFunc, md *raftpb.SnapshotMetadata) error {
	r.prepared.Store(nil) // one at a time: a newer snapshot replaces an unused one
	t, err := loadSnapshotRecords(read)
	if err != nil {
		return err
	}
	ms, err := restoreState(t, md.GetConfState())
	if err != nil {
		return err
	}
	r.prepared.Store(&preparedSnapshot{index: md.GetIndex(), term: md.GetTerm(), tree: t, members: ms})
	return nil
}

// restoreState checks that t can be the state of a member whose Raft membership is cs
// (nil: not known, as for a snapshot of this member's own disk) and returns the
// ensemble its /zookeeper/config names: server lines that parse, one per member,
// naming exactly cs's voters and learners.
func restoreState(t *datatree.Tree, cs *raftpb.ConfState) ([]Member, error) {
	n := t.Get(datatree.ConfigPath)
	if !n.Exists() { // the loader refuses such a tree; checked again where it matters
		return nil, fmt.Errorf("%w: no %s", datatree.ErrBadSnapshot, datatree.ConfigPath)
	}
	ms, err := parseServerLines(n.Data())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", datatree.ErrBadSnapshot, datatree.ConfigPath, err)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: %s names no server", datatree.ErrBadSnapshot, datatree.ConfigPath)
	}
	if cs == nil {
		return ms, nil
	}
	if err := sameMembers(ms, cs); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", datatree.ErrBadSnapshot, datatree.ConfigPath, err)
	}
	return ms, nil
}

// takePrepared returns the tree CheckSnapshot built for the snapshot at index in term,
// if it is the one kept, and forgets it.
func (r *replica) takePrepared(index, term uint64) *preparedSnapshot {
	p := r.prepared.Swap(nil)
	if p == nil || p.index != index || p.term != term {
		return nil
	}
	return p
}

// loadSnapshotRecords builds the tree a Raft snapshot's records hold, read as they
// stream from the snapshot file.
func loadSnapshotRecords(read quorum.ReadFunc) (*datatree.Tree, error) {
	l := datatree.NewLoader()
	if err := read(l.Add); err != nil {
		l.Abort()
		return nil, err
	}
	return l.Tree()
}

// splitLegacySnapshot splits the data of a Raft snapshot of the previous on-disk
// format — the tree's records, each behind its uvarint length, in one buffer — into
// its records, for quorum to convert the directory at start.
func splitLegacySnapshot(data []byte, fn func([]byte) error) error {
	for len(data) > 0 {
		n, k := binary.Uvarint(data)
		if k <= 0 || n > uint64(len(data)-k) {
			return errors.New("record length past its end")
		}
		if err := fn(data[k : k+int(n)]); err != nil {
			return err
		}
		data = data[k+int(n):]
	}
	return nil
}

// A note is what a member reports to the leader of its clients' sessions: the ids of
// the sessions that had traffic since its last report, 8 bytes each, big-endian.

func appendNote(dst []byte, ids map[int64]struct{}) []byte {
	for id := range ids {
		dst = binary.BigEndian.AppendUint64(dst, uint64(id))
	}
	return dst
}

// decodeNote returns the session ids of a note.
func decodeNote(data []byte) ([]int64, error) {
	if len(data)%8 != 0 {
		return nil, fmt.Errorf("note of %d bytes: not a list of session ids", len(data))
	}
	ids := make([]int64, len(data)/8)
	for i := range ids {
		ids[i] = int64(binary.BigEndian.Uint64(data[8*i:]))
	}
	return ids, nil
}

// undecodable is the txn a committed entry that cannot be decoded is applied as, on
// every member: it changes nothing but consumes a zxid, as a refused write does.
func undecodable() *proposal {
	return &proposal{txn: &txn.Txn{Op: wire.OpError, Req: &txn.ErrorTxn{Code: int32(wire.ErrMarshallingError)}}}
}
