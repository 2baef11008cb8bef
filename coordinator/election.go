package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// ErrNoLeader says an election has no leader at the moment.
var ErrNoLeader = errors.New("coordinator: no leader")

// Election elects one leader among the participants that campaign on one path, the
// /master pattern: the leader is whoever created the ephemeral node at the path, with
// its data (such as its address) in it. Participants that lose watch the node and try
// again when it is deleted, all at once; SequentialElection queues them instead.
//
// An Election is safe for concurrent use. Leadership is a Hold: it ends, and Lost
// closes, when the Session is suspended or lost (the leader must stop acting as leader
// at once, before another can be elected), when the node is deleted, or on Release.
// After a new session nothing is re-acquired: campaign again to lead again.
//
//	e := coordinator.NewElection(s, "/master", []byte("10.0.0.7:7000"))
//	for {
//		h, err := e.Campaign(ctx)
//		if err != nil {
//			return err // ctx ended, or the Session closed
//		}
//		lead(ctx, h.Lost()) // serve until the hold may be lost
//		h.Release(context.Background())
//	}
type Election struct {
	s    *Session
	path string
	data []byte
}

// NewElection returns the election at path, where a leader's node carries data. It does
// not touch the servers.
func NewElection(s *Session, path string, data []byte) *Election {
	return &Election{s: s, path: path, data: data}
}

// Campaign blocks until this participant leads, and returns its leadership. The node's
// parents are created when missing. A node this Session already owns (left by a create
// whose reply was lost, or by another Election on the same Session) is adopted and its
// data set. Disconnections are waited out. When ctx ends first, Campaign returns the
// ctx error (wrapped) and leaves no node behind; it fails with ErrClosed once the
// Session is closed.
func (e *Election) Campaign(ctx context.Context) (*Hold, error) {
	conn := e.s.conn
	var unsure int64 // the session of a create that may have been applied unheard; 0 if none
	fail := func(err error) (*Hold, error) {
		if unsure != 0 {
			e.abandon(unsure)
		}
		return nil, fmt.Errorf("coordinator: campaign %s: %w", e.path, err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		owner := conn.SessionID()
		_, err := conn.Create(e.path, e.data, zk.FlagEphemeral, e.s.ACLFor(e.path))
		switch {
		case err == nil:
			return newHold(e.s, e.path, conn.SessionID()), nil
		case errors.Is(err, zk.ErrNoNode):
			err = e.s.MakeDirs(ctx, parentPath(e.path))
		case errors.Is(err, zk.ErrNodeExists):
			var h *Hold
			if h, err = e.adoptOrWait(ctx); h != nil {
				return h, nil
			}
		case errors.Is(err, zk.ErrConnectionClosed):
			unsure = owner
		}
		if err != nil {
			if err := e.s.WaitToRetry(ctx, err); err != nil {
				return fail(err)
			}
		}
	}
}

// adoptOrWait looks at the existing node: it returns the leadership if this Session owns
// the node, and otherwise waits until the node changes or goes, or ctx ends (nil, nil:
// try again).
func (e *Election) adoptOrWait(ctx context.Context) (*Hold, error) {
	conn := e.s.conn
	exists, stat, watch, err := conn.ExistsW(e.path)
	if err != nil || !exists {
		return nil, err
	}
	if stat.EphemeralOwner == conn.SessionID() {
		_, err := conn.Set(e.path, e.data, stat.Version)
		switch {
		case err == nil:
			e.s.logger.Info("adopted leader node", "path", e.path, "session_id", hexID(stat.EphemeralOwner))
			return newHold(e.s, e.path, stat.EphemeralOwner), nil
		case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
			return nil, nil // it changed in between: look again
		}
		return nil, err
	}
	select {
	case <-watch:
	case <-ctx.Done():
	case <-e.s.Closed():
	}
	return nil, nil
}

// abandon deletes the node if the create by session owner whose reply was lost was
// applied after all; in the background if the connection is down.
func (e *Election) abandon(owner int64) {
	del := func() error { return deleteOwned(e.s.conn, e.path, owner) }
	if err := del(); IsConnLoss(err) {
		deleteInBackground(e.s, e.path, del)
	}
}

// Leader returns the current leader's data, or ErrNoLeader if there is none.
func (e *Election) Leader(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("coordinator: leader of %s: %w", e.path, err)
	}
	data, _, err := e.s.conn.Get(e.path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, ErrNoLeader
	case err != nil:
		return nil, fmt.Errorf("coordinator: leader of %s: %w", e.path, err)
	}
	return data, nil
}

// SequentialElection elects one leader among the participants that campaign in one
// directory, in turn: each candidate creates an ephemeral-sequential "candidate-" node
// there, the lowest leads, and every other candidate watches only the node just before
// its own, so when the leader goes only its successor wakes up (no herd) and
// leadership passes in campaign order. A candidate whose reply to the create is lost
// finds its node again by the random id in its name (go-zk's and Curator's protected
// nodes). The directory and its parents are created when missing.
//
// A SequentialElection is safe for concurrent use; each Campaign is one candidate.
// Leadership is a Hold, with Election's rules: Lost closes on suspension, expiry,
// deletion of the node or Release, and nothing is re-acquired after a new session.
//
//	e := coordinator.NewSequentialElection(s, "/services/indexer/election", []byte(id))
//	h, err := e.Campaign(ctx) // waits for every earlier candidate to go
//	if err != nil {
//		return err
//	}
//	defer h.Release(context.Background())
//	lead(ctx, h.Lost())
type SequentialElection struct {
	s    *Session
	dir  string
	data []byte

	// Test hooks, set before Campaign: onWatch is called with each node a candidate
	// waits on, onList on each listing of the directory.
	onWatch func(name string)
	onList  func()
}

// NewSequentialElection returns the election whose candidates queue under dir, where a
// candidate's node carries data. It does not touch the servers.
func NewSequentialElection(s *Session, dir string, data []byte) *SequentialElection {
	return &SequentialElection{s: s, dir: dir, data: data}
}

// Campaign queues a candidate and blocks until it leads, and returns its leadership.
// When ctx ends first, the candidate's node is deleted and the ctx error returned
// (wrapped). Disconnections are waited out; after an expiry the candidate queues again
// at the end of the line. It fails with ErrClosed once the Session is closed.
func (e *SequentialElection) Campaign(ctx context.Context) (*Hold, error) {
	c := &seqContender{s: e.s, dir: e.dir, what: "election", kind: seqKindCandidate,
		kinds: []string{seqKindCandidate}, data: e.data, blocker: blockedByPredecessor,
		onWatch: e.onWatch, onList: e.onList}
	return c.acquire(ctx, true)
}

// Leader returns the data of the current leader, the lowest candidate, or ErrNoLeader
// if there is no candidate.
func (e *SequentialElection) Leader(ctx context.Context) ([]byte, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("coordinator: leader of %s: %w", e.dir, err)
		}
		children, _, err := e.s.conn.Children(e.dir)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil, ErrNoLeader
		case err != nil:
			return nil, fmt.Errorf("coordinator: leader of %s: %w", e.dir, err)
		}
		line := seqLine(children, []string{seqKindCandidate})
		if len(line) == 0 {
			return nil, ErrNoLeader
		}
		data, _, err := e.s.conn.Get(e.dir + "/" + line[0].name)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue // the leader just went: look again
		case err != nil:
			return nil, fmt.Errorf("coordinator: leader of %s: %w", e.dir, err)
		}
		return data, nil
	}
}
