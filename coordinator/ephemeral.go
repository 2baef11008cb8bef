package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/backoff"
)

// Ephemeral is an ephemeral node the Session keeps in place: created at once, re-created
// under each new session after an expiry, and re-created if someone deletes it while the
// session lives (Curator's PersistentNode, ephemeral mode). Registrations such as
// /workers/<id> are kept this way.
type Ephemeral struct {
	s    *Session
	path string

	mu   sync.Mutex
	data []byte // what the node is (re)created with

	ctx    context.Context // the keeper's; cancelled by Remove
	cancel context.CancelFunc
	done   chan struct{} // closed when keep returns
	retry  backoff.Retry // the keeper's failures in a row (keep's goroutine only)
}

// ErrNodeTaken says an ephemeral node to be kept exists and belongs to another session.
var ErrNodeTaken = errors.New("coordinator: node exists and belongs to another session")

// KeepEphemeral creates the ephemeral node path with data and keeps it in place until
// Remove or Close. If the node exists and belongs to this session it is adopted (its
// data set); if it belongs to another session, KeepEphemeral fails with ErrNodeTaken.
// The parent must exist.
func (s *Session) KeepEphemeral(ctx context.Context, path string, data []byte) (*Ephemeral, error) {
	if s.State() == StateClosed {
		return nil, ErrClosed
	}
	e := &Ephemeral{s: s, path: path, data: data, done: make(chan struct{})}
	if err := e.ensure(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.state == StateClosed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if _, dup := s.ephemerals[path]; dup {
		s.mu.Unlock()
		return nil, fmt.Errorf("coordinator: keep %s: already kept by this session", path)
	}
	s.ephemerals[path] = e
	s.mu.Unlock()
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go e.keep()
	return e, nil
}

// Path returns the node's path.
func (e *Ephemeral) Path() string { return e.path }

// Set changes the node's data, now and for every re-creation.
func (e *Ephemeral) Set(ctx context.Context, data []byte) error {
	e.mu.Lock()
	e.data = data
	e.mu.Unlock()
	_, err := e.s.conn.Set(e.path, data, -1)
	if err != nil {
		return fmt.Errorf("coordinator: set %s: %w", e.path, err)
	}
	return nil
}

// Remove stops keeping the node and deletes it if this session owns it.
func (e *Ephemeral) Remove(ctx context.Context) error {
	e.s.mu.Lock()
	if e.s.ephemerals[e.path] == e {
		delete(e.s.ephemerals, e.path)
	}
	e.s.mu.Unlock()
	e.cancel()
	<-e.done
	_, stat, err := e.s.conn.Exists(e.path)
	switch {
	case errors.Is(err, zk.ErrClosing):
		return nil // the session is closed: the node went with it
	case err != nil:
		return fmt.Errorf("coordinator: remove %s: %w", e.path, err)
	case stat == nil || stat.EphemeralOwner != e.s.conn.SessionID():
		return nil
	}
	if err := e.s.conn.Delete(e.path, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("coordinator: remove %s: %w", e.path, err)
	}
	return nil
}

// ensure creates the node, or adopts it if this session already owns it.
func (e *Ephemeral) ensure(ctx context.Context) error {
	for {
		e.mu.Lock()
		data := e.data
		e.mu.Unlock()
		_, err := e.s.conn.Create(e.path, data, zk.FlagEphemeral, e.s.ACLFor(e.path))
		if err == nil {
			return nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("coordinator: create %s: %w", e.path, err)
		}
		_, stat, err := e.s.conn.Exists(e.path)
		if err != nil {
			return fmt.Errorf("coordinator: create %s: %w", e.path, err)
		}
		if stat == nil {
			continue // deleted in between: create again
		}
		if stat.EphemeralOwner != e.s.conn.SessionID() {
			return fmt.Errorf("%w: %s (owner 0x%x)", ErrNodeTaken, e.path, stat.EphemeralOwner)
		}
		if _, err := e.s.conn.Set(e.path, data, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("coordinator: create %s: %w", e.path, err)
		}
		return nil
	}
}

// keep watches the node and puts it back whenever it is missing while the session is
// connected: after an expiry, or a delete by someone else. It ends on Remove or when
// the Session closes.
func (e *Ephemeral) keep() {
	defer close(e.done)
	for e.ctx.Err() == nil {
		exists, stat, watch, err := e.s.conn.ExistsW(e.path)
		switch {
		case err != nil:
			if err = e.s.WaitToRetry(e.ctx, err); err != nil && !e.troubled("cannot watch kept ephemeral node", err) {
				return
			}
			continue
		case !exists:
			err := e.ensure(e.ctx)
			switch {
			case err == nil:
				e.retry.Reset()
				e.s.logger.Info("re-created kept ephemeral node", "path", e.path)
			case IsConnLoss(err):
				// the next ExistsW waits for the connection
			case !e.troubled("cannot re-create kept ephemeral node", err):
				return
			}
			continue
		case stat.EphemeralOwner != e.s.conn.SessionID():
			// Another session has it (ours expired and someone took the path): wait for it
			// to go, and take it back then.
			e.s.logger.Warn("kept ephemeral node held by another session", "path", e.path,
				"owner", hexID(stat.EphemeralOwner))
		}
		select {
		case <-e.ctx.Done():
		case <-e.s.Closed():
			return
		case <-watch:
		}
	}
}

// troubled logs err and pauses, by the backoff of the keeper's failures in a row, before
// the keeper tries again; false if the keeper must stop instead (Remove, or the Session
// closed).
func (e *Ephemeral) troubled(msg string, err error) bool {
	if e.ctx.Err() != nil || errors.Is(err, ErrClosed) {
		return false
	}
	wait := e.retry.Fail()
	e.s.logger.Warn(msg, "path", e.path, "err", err, "retry_in", wait.Round(time.Millisecond))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.ctx.Done():
	case <-e.s.Closed():
	}
	return false
}
