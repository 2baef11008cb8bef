package quorum

import (
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// A member runs Raft with asynchronous storage writes (raft.Config.AsyncStorageWrites):
// the Ready loop never waits for the disk or for the state machine. It sends the
// messages to peers at once and hands the rest to two goroutines, each taking its work
// in order:
//
//   - the append loop (appendLoop) keeps log entries, hard states and received
//     snapshots: it takes every MsgStorageAppend waiting, writes them to the log with
//     one fdatasync, and only then delivers their responses (the acknowledgements to
//     the leader, votes, and Raft's own notice that the entries are durable). It also
//     records the snapshots the snapshot writer finishes (Storage.Checkpoint), as the
//     log's only writer.
//   - the apply loop (applyLoop) applies committed entries (MsgStorageApply) to the
//     state machine and answers their proposers, restores received snapshots when the
//     append loop has kept them, and starts snapshots (maybeSnapshot).
//
// So a follower acknowledges entries while it applies earlier ones, a leader applies
// committed entries while its next write is on its way to disk, and a write that
// arrives during an fdatasync is in the next one, with everything else that arrived
// meanwhile (group commit across Readies). Raft still applies an entry only once this
// member's own log holds it durably.

// maxAppendBatch bounds the MsgStorageAppends one fdatasync covers: the Ready loop is
// not held up behind a write, so under load many queue up between two syncs.
const maxAppendBatch = 256

// applyJob is one piece of the apply loop's work: committed entries to apply (a
// MsgStorageApply), or a snapshot to restore, whose result goes to done.
type applyJob struct {
	m       *raftpb.Message
	queued  time.Time // when the Ready loop handed m over
	restore *raftpb.SnapshotMetadata
	done    chan error
}

// route hands the local messages of a Ready to the two loops and returns the rest,
// for the peers.
func (n *Node) route(msgs []*raftpb.Message) (peers []*raftpb.Message) {
	peers = msgs[:0:0]
	for _, m := range msgs {
		switch m.GetTo() {
		case raft.LocalAppendThread:
			hand(n, n.appendq, m)
		case raft.LocalApplyThread:
			hand(n, n.applyq, applyJob{m: m, queued: time.Now()})
		default:
			peers = append(peers, m)
		}
	}
	return peers
}

// hand queues work for one of the loops, counting it as pending until the loop is
// done with it. It never waits (queue).
func hand[T any](n *Node, q *queue[T], job T) {
	n.pending.Add(1)
	q.push(job)
}

// finished counts n pieces of handed work as done.
func (n *Node) finished(k int) {
	n.pending.Add(-int64(k))
	n.handled.Add(uint64(k))
}

// fail stops the member for err: its loops end, and Done is closed.
func (n *Node) fail(err error) {
	n.failOnce.Do(func() {
		n.logger.Error("raft member stopped", "err", err)
		n.mu.Lock()
		n.err = err
		n.mu.Unlock()
		close(n.failed)
	})
}

// appendLoop is the log's writer (see the top of this file).
func (n *Node) appendLoop() {
	defer n.loops.Done()
	var next *raftpb.Message // taken from the queue, for the next batch
	for {
		batch := make([]*raftpb.Message, 0, 8)
		if next != nil {
			batch, next = append(batch, next), nil
		} else if m, ok := n.appendq.pop(); ok {
			batch = append(batch, m)
		} else {
			select {
			case <-n.appendq.ready:
				continue
			case w := <-n.snapDone:
				if err := n.snapshotWritten(w); err != nil {
					n.fail(err)
					return
				}
				continue
			case <-n.stop:
				return
			case <-n.failed:
				return
			}
		}
		// A received snapshot is kept alone: its state machine is restored before
		// anything after it is written.
	drain:
		for len(batch) < maxAppendBatch && !hasSnapshot(batch[0]) {
			m, ok := n.appendq.pop()
			switch {
			case !ok:
				break drain
			case hasSnapshot(m):
				next = m
				break drain
			}
			batch = append(batch, m)
		}
		if err := n.persist(batch); err != nil {
			n.fail(err)
			return
		}
		n.finished(len(batch))
	}
}

func hasSnapshot(m *raftpb.Message) bool {
	return m.GetSnapshot() != nil && !raft.IsEmptySnap(m.GetSnapshot())
}

// persist writes the MsgStorageAppends of batch to the log, with one fdatasync when any
// of them needs one, then delivers their responses in order. A batch with a snapshot
// holds only it: the snapshot is kept, then restored by the apply loop.
//
// An fdatasync is needed for entries, a snapshot, or a new term or vote — what
// raft.MustSync asks of a Ready. A hard state that only moves the commit index needs
// none: the commit index is recovered from the leader. Its responses still wait for
// this write, and the acknowledgements among them, of entries earlier messages
// carried, are true already: every message with entries was synced before its own
// responses went out, and the loop takes messages in order. Under load, most writes
// are commit indexes: syncing them took as many fdatasyncs again as the entries did.
func (n *Node) persist(batch []*raftpb.Message) error {
	var hs *raftpb.HardState
	var ents []*raftpb.Entry
	var snap *raftpb.Snapshot
	sync := false
	for _, m := range batch {
		if m.Term != nil { // a hard state: Term, Vote and Commit are set together
			h := &raftpb.HardState{Term: new(m.GetTerm()), Vote: new(m.GetVote()), Commit: new(m.GetCommit())}
			sync = sync || h.GetTerm() != n.savedHS.GetTerm() || h.GetVote() != n.savedHS.GetVote()
			hs = h
		}
		if hasSnapshot(m) {
			snap = m.GetSnapshot()
		}
		ents = mergeEntries(ents, m.GetEntries())
		sync = sync || len(m.GetEntries()) > 0 || snap != nil
	}
	start := time.Now()
	if err := n.storage.Save(hs, ents, snap, sync); err != nil {
		return err
	}
	if sync && n.cfg.OnStage != nil {
		n.cfg.OnStage(StageAppend, time.Since(start), len(ents))
	}
	if hs != nil {
		n.savedHS = hs
	}
	if snap != nil {
		if err := n.restoreOnApplyLoop(snap.GetMetadata()); err != nil {
			return err
		}
	}
	var peers []*raftpb.Message
	for _, m := range batch {
		for _, r := range m.GetResponses() {
			if r.GetTo() == n.id {
				if err := n.stepLocal(r); err != nil {
					return nil // stopping
				}
			} else {
				peers = append(peers, r)
			}
		}
	}
	n.transport.Send(peers)
	return nil
}

// mergeEntries appends the entries of a later MsgStorageAppend to those of earlier ones
// of the same batch: a later entry at an index already held replaces it and every entry
// after it (a new leader's conflicting tail), as the log itself would. It never writes
// into Raft's slices.
func mergeEntries(acc, more []*raftpb.Entry) []*raftpb.Entry {
	if len(more) == 0 {
		return acc
	}
	if len(acc) == 0 {
		return more
	}
	first := acc[0].GetIndex()
	from := more[0].GetIndex()
	switch {
	case from <= first:
		return more
	case from > acc[len(acc)-1].GetIndex()+1:
		// A gap cannot happen (Raft appends in order); keep both and let the log refuse it.
		return append(acc[:len(acc):len(acc)], more...)
	}
	return append(acc[:from-first:from-first], more...)
}

// stepLocal hands Raft a response of the member's own storage; ErrClosed once the
// member stops.
func (n *Node) stepLocal(m *raftpb.Message) error {
	if !n.enqueue(m, false) {
		return ErrClosed
	}
	return nil
}

// restoreOnApplyLoop has the apply loop restore the snapshot md, once it has applied
// everything queued before it, and waits for it.
func (n *Node) restoreOnApplyLoop(md *raftpb.SnapshotMetadata) error {
	done := make(chan error, 1)
	hand(n, n.applyq, applyJob{restore: md, done: done})
	select {
	case err := <-done:
		return err
	case <-n.stop:
		return nil
	case <-n.failed:
		return nil
	}
}

// applyLoop applies what Raft committed (see the top of this file).
func (n *Node) applyLoop() {
	defer n.loops.Done()
	for {
		j, ok := n.applyq.wait(n.stop, n.failed)
		if !ok {
			return
		}
		err := n.runApply(j)
		n.finished(1)
		if err != nil {
			n.fail(err)
			return
		}
	}
}

// runApply does one job of the apply loop.
func (n *Node) runApply(j applyJob) error {
	if j.restore != nil {
		err := n.restore(j.restore)
		j.done <- err
		return err
	}
	if err := n.applyCommitted(j.m.GetEntries()); err != nil {
		return err
	}
	if n.cfg.OnStage != nil && len(j.m.GetEntries()) > 0 {
		n.cfg.OnStage(StageApply, time.Since(j.queued), len(j.m.GetEntries()))
	}
	for _, r := range j.m.GetResponses() {
		if err := n.stepLocal(r); err != nil {
			return nil // stopping
		}
	}
	if err := n.maybeSnapshot(); err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	return nil
}

// maxApplying bounds the bytes of committed entries handed to the apply loop and not yet
// applied (raft.Config.MaxCommittedSizePerReady). Raft hands out no more until the apply
// loop reports some applied; at its default, MaxSizePerMsg (1 MiB), a member applying
// large entries (multis of hundreds of creates) waited for each batch's report before
// Raft handed it the next.
const maxApplying = 16 << 20
