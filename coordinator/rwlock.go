package coordinator

import "context"

// RWLock is a distributed readers-writer lock: the ZooKeeper shared-lock recipe. Readers
// queue "read-" nodes and writers "write-" nodes, ephemeral and sequential, under the
// lock's directory. A reader proceeds once no write- node precedes its own, watching
// only the last write- node before it; a writer proceeds once its node is the lowest,
// watching only the node just before it. A release therefore wakes only those it lets
// through (no herd), and requests are served in arrival order: a waiting writer holds
// back the readers that come after it, so writers are not starved.
//
// An RWLock is safe for concurrent use and is not re-entrant (a reader that asks again
// while a writer waits deadlocks with it). Holds follow Hold's rules: Lost closes on
// suspension, expiry or deletion of the node, and nothing is re-acquired after a new
// session. The directory and its parents are created when missing.
//
//	rw := coordinator.NewRWLock(s, "/locks/catalog")
//	h, err := rw.RLock(ctx) // shared with other readers
//	if err != nil {
//		return err
//	}
//	defer h.Release(context.Background())
type RWLock struct {
	s   *Session
	dir string
}

// NewRWLock returns the lock whose nodes live under dir. It does not touch the servers.
func NewRWLock(s *Session, dir string) *RWLock { return &RWLock{s: s, dir: dir} }

// RLock waits until the lock is held for reading, shared with other readers. When ctx
// ends first its node is deleted and the ctx error returned (wrapped).
func (l *RWLock) RLock(ctx context.Context) (*Hold, error) {
	c := &seqContender{s: l.s, dir: l.dir, what: "read lock", kind: seqKindRead,
		kinds: []string{seqKindRead, seqKindWrite}, blocker: blockedByWriter}
	return c.acquire(ctx, true)
}

// Lock waits until the lock is held for writing, by this caller alone. When ctx ends
// first its node is deleted and the ctx error returned (wrapped).
func (l *RWLock) Lock(ctx context.Context) (*Hold, error) {
	c := &seqContender{s: l.s, dir: l.dir, what: "write lock", kind: seqKindWrite,
		kinds: []string{seqKindRead, seqKindWrite}, blocker: blockedByPredecessor}
	return c.acquire(ctx, true)
}

// blockedByWriter: a reader waits for the last writer before it.
func blockedByWriter(line []seqEntry, me int) (seqEntry, bool) {
	for i := me - 1; i >= 0; i-- {
		if line[i].kind == seqKindWrite {
			return line[i], true
		}
	}
	return seqEntry{}, false
}
