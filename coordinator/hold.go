package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Hold is something held — leadership or a lock — backed by one ephemeral node that
// this Session owns. A Hold is safe for concurrent use.
//
// Lost is closed as soon as the hold may no longer be held: the Session goes
// StateSuspended or StateLost (Curator's default policy: suspended counts as lost,
// because the session may expire while the client cannot hear about it), the Session
// closes, the node is deleted or changes owner, or the hold is released. The watch on
// the node is armed before the hold is handed out. A lost hold
// is never given back: after a new session nothing is re-acquired, the holder decides
// whether to campaign or acquire again. Work done under a hold should stop when Lost
// closes:
//
//	h, err := lock.Acquire(ctx)
//	if err != nil {
//		return err
//	}
//	defer h.Release(context.Background())
//	workCtx, cancel := context.WithCancel(ctx)
//	defer cancel()
//	go func() {
//		select {
//		case <-h.Lost():
//			cancel()
//		case <-workCtx.Done():
//		}
//	}()
//	return doExclusiveWork(workCtx)
type Hold struct {
	s     *Session
	path  string
	owner int64 // the session that created (or adopted) the node

	lost     chan struct{} // closed by markLost: the hold may be lost
	lostOnce sync.Once
	stop     chan struct{} // closed by Release: the monitor must end
	done     chan struct{} // closed when monitor returns

	releaseOnce sync.Once
	releaseErr  error
}

// newHold returns the hold of the node at path, created by session owner, and starts
// watching over it.
func newHold(s *Session, path string, owner int64) *Hold {
	h := &Hold{
		s:     s,
		path:  path,
		owner: owner,
		lost:  make(chan struct{}),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	// Subscribe before arming the watch, so that no state change in between is missed;
	// arm it before returning, so that the hold is watched over once it is handed out.
	events, cancel := s.Subscribe()
	armed := make(chan existsAnswer, 1)
	armed <- existsNow(s.conn, path)
	go h.monitor(events, cancel, armed)
	return h
}

// Path returns the path of the node behind the hold.
func (h *Hold) Path() string { return h.path }

// Session returns the id of the session that owns the node: while the hold lasts, the
// node's ephemeral owner, and the Session's current session.
func (h *Hold) Session() int64 { return h.owner }

// Lost is closed when the hold may be lost (see Hold).
func (h *Hold) Lost() <-chan struct{} { return h.lost }

// Release gives the hold up: Lost closes and the node is deleted, if this session
// still owns it (checked against the node's owner and version, so a node someone
// else has since created at the same path is left alone). Release is idempotent:
// later calls return what the first returned. Releasing a lost hold returns nil.
// When the node cannot be deleted now because the connection is down, it is deleted
// in the background once the Session reconnects, unless its session has expired by
// then and the node went with it: either way it does not outlive the release, and
// Release returns nil. If ctx has already ended, the delete is left to the background
// in the same way and the ctx error returned (nil for a lost hold).
func (h *Hold) Release(ctx context.Context) error {
	h.releaseOnce.Do(func() { h.releaseErr = h.release(ctx) })
	return h.releaseErr
}

func (h *Hold) release(ctx context.Context) error {
	wasLost := false
	select {
	case <-h.lost:
		wasLost = true
	default:
	}
	close(h.stop)
	<-h.done
	if err := ctx.Err(); err != nil {
		deleteInBackground(h.s, h.path, h.deleteNode)
		if wasLost {
			return nil
		}
		return fmt.Errorf("coordinator: release %s: %w", h.path, err)
	}
	err := h.deleteNode()
	switch {
	case err == nil, errors.Is(err, zk.ErrClosing):
		return nil
	case IsConnLoss(err):
		deleteInBackground(h.s, h.path, h.deleteNode)
		return nil
	case wasLost:
		h.s.logger.Warn("cannot delete node of lost hold", "path", h.path, "err", err)
		return nil
	}
	return fmt.Errorf("coordinator: release %s: %w", h.path, err)
}

// deleteNode deletes the node if the hold's session owns it.
func (h *Hold) deleteNode() error { return deleteOwned(h.s.conn, h.path, h.owner) }

// markLost closes Lost once, saying why.
func (h *Hold) markLost(reason string) {
	h.lostOnce.Do(func() {
		close(h.lost)
		if reason != "released" {
			h.s.logger.Warn("hold lost", "path", h.path, "session_id", hexID(h.owner), "reason", reason)
		}
	})
}

// monitor closes Lost when the Session leaves StateConnected or the node goes. It
// keeps an exists watch on the node, re-armed after a data change.
func (h *Hold) monitor(events <-chan Event, cancel func(), armed <-chan existsAnswer) {
	defer close(h.done)
	defer cancel()
	reason := "released"
	defer func() { h.markLost(reason) }()
	select {
	case ev, ok := <-events: // the state as of the subscription
		if !ok || ev.State != StateConnected || ev.SessionID != h.owner {
			switch {
			case !ok:
				reason = "session closed"
			case ev.State == StateConnected:
				reason = "session changed to " + hexID(ev.SessionID)
			default:
				reason = "session " + ev.State.String()
			}
			return
		}
	case <-h.stop:
		return
	}
	for {
		if armed == nil {
			armed = armExistsWatch(h.s.conn, h.path)
		}
		var watch <-chan zk.Event
		for watch == nil {
			select {
			case <-h.stop:
				return
			case ev, ok := <-events:
				reason = sessionReason(ev, ok)
				return
			case r := <-armed:
				switch {
				case errors.Is(r.err, zk.ErrClosing):
					reason = "session closed"
					return
				case r.err != nil:
					reason = "cannot watch node: " + r.err.Error()
					return
				case !r.exists:
					reason = "node deleted"
					return
				case r.stat.EphemeralOwner != h.owner:
					reason = "node owned by session " + hexID(r.stat.EphemeralOwner)
					return
				}
				watch, armed = r.watch, nil
			}
		}
		select {
		case <-h.stop:
			return
		case ev, ok := <-events:
			reason = sessionReason(ev, ok)
			return
		case zev := <-watch:
			if zev.Type != zk.EventNodeDataChanged {
				reason = "node event " + zev.Type.String()
				if zev.Type == zk.EventNodeDeleted {
					reason = "node deleted"
				}
				return
			}
		}
	}
}

// sessionReason says why a state change after the first one ends a hold: any change
// from StateConnected means the hold may be lost.
func sessionReason(ev Event, ok bool) string {
	if !ok {
		return "session closed"
	}
	return "session " + ev.State.String()
}

// existsAnswer is the answer to an ExistsW.
type existsAnswer struct {
	exists bool
	stat   *zk.Stat
	watch  <-chan zk.Event
	err    error
}

// armExistsWatch runs ExistsW on path in its own goroutine, so that its caller can
// keep listening to the Session while the request waits on a broken connection. The
// goroutine ends when the request is answered or failed, which the client bounds.
func armExistsWatch(conn *zk.Conn, path string) <-chan existsAnswer {
	out := make(chan existsAnswer, 1)
	go func() { out <- existsNow(conn, path) }()
	return out
}

// existsNow runs ExistsW on path and returns the answer.
func existsNow(conn *zk.Conn, path string) existsAnswer {
	ok, stat, w, err := conn.ExistsW(path)
	return existsAnswer{ok, stat, w, err}
}

// deleteOwned deletes the node at path if session owner owns it, checking the version
// it read so that only that node goes.
func deleteOwned(conn *zk.Conn, path string, owner int64) error {
	for {
		ok, stat, err := conn.Exists(path)
		if err != nil {
			return err
		}
		if !ok || stat.EphemeralOwner != owner {
			return nil
		}
		err = conn.Delete(path, stat.Version)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrBadVersion):
			continue // its data changed in between: look again
		}
		return err
	}
}

// deleteInBackground calls del, which deletes the node at path, each time the Session
// is connected until it succeeds or fails for good; it gives up when the Session
// closes, which takes the node along. It is how a node whose delete failed on a
// broken connection is not left to block others while the session lives on (Curator's
// guaranteed delete).
func deleteInBackground(s *Session, path string, del func() error) {
	events, cancel := s.Subscribe()
	go func() {
		defer cancel()
		for ev := range events {
			switch ev.State {
			case StateClosed:
				return
			case StateConnected:
				err := del()
				if err == nil || errors.Is(err, zk.ErrClosing) {
					return
				}
				if !IsConnLoss(err) {
					s.logger.Warn("cannot delete node", "path", path, "err", err)
					return
				}
			}
		}
	}()
}
