package coordinator

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Barrier is a single barrier (the ZooKeeper recipe; Curator's DistributedBarrier):
// while its node exists, Wait blocks; removing the node lets every waiter through. Any
// Session may Set, Remove or Wait, and a Barrier is safe for concurrent use.
//
// The node is persistent: it outlives the Session that set it. Wait rides out
// disconnections and session expiry (StateSuspended, StateLost): it keeps its watch,
// or re-arms it once the Session is connected again, and returns only when it has seen
// the node absent, when ctx ends, or when the Session closes.
//
//	b := coordinator.NewBarrier(s, "/jobs/nightly/hold")
//	if err := b.Set(ctx); err != nil { // the coordinator, before the workers start
//		return err
//	}
//	// ... each worker:
//	if err := b.Wait(ctx); err != nil {
//		return err
//	}
//	// ... and the coordinator lets them all go:
//	err := b.Remove(ctx)
type Barrier struct {
	s    *Session
	path string
}

// NewBarrier returns the barrier whose node is at path. Nothing is created until Set.
func NewBarrier(s *Session, path string) *Barrier { return &Barrier{s: s, path: path} }

// Path returns the path of the barrier's node.
func (b *Barrier) Path() string { return b.path }

// Set raises the barrier: it creates the node, and its missing parents, as persistent
// nodes. A barrier already set stays set.
func (b *Barrier) Set(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("coordinator: set barrier %s: %w", b.path, err)
		}
		_, err := b.s.conn.Create(b.path, nil, 0, b.s.ACLFor(b.path))
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return nil
		case errors.Is(err, zk.ErrNoNode):
			err = b.s.MakeDirs(ctx, path.Dir(b.path))
			if err == nil {
				continue
			}
		}
		if err := b.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("coordinator: set barrier %s: %w", b.path, err)
		}
	}
}

// Remove lowers the barrier: it deletes the node, if it is there, which releases every
// waiter.
func (b *Barrier) Remove(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("coordinator: remove barrier %s: %w", b.path, err)
		}
		err := b.s.conn.Delete(b.path, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err := b.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("coordinator: remove barrier %s: %w", b.path, err)
		}
	}
}

// Wait blocks until the barrier's node does not exist: at once if it is not set. It
// returns ctx's error when ctx ends first and ErrClosed when the Session closes.
func (b *Barrier) Wait(ctx context.Context) error {
	if err := waitGone(ctx, b.s, b.path); err != nil {
		return fmt.Errorf("coordinator: wait on barrier %s: %w", b.path, err)
	}
	return nil
}

// DoubleBarrier lets a group of processes start and finish a computation together
// (the ZooKeeper recipe; Curator's DistributedDoubleBarrier). Each participant has its
// own DoubleBarrier, with its own name, on the same dir and threshold: Enter returns
// once threshold participants have entered, Leave once every participant has left. A
// DoubleBarrier is one participant: use it from one goroutine at a time.
//
// Layout under dir: one ephemeral node per participant, named by the participant, and
// dir/ready, a persistent node created by whoever sees threshold participants inside.
// The threshold is a threshold, not a limit: a participant entering while dir/ready
// exists passes at once and joins that round.
//
// Leave follows the recipe: the lowest participant (by name) waits for the highest to
// go, again and again, until it is alone; every other one deletes its node and waits
// for the lowest's to go. The last one out (the lowest) deletes dir/ready together with
// its own node, in one multi, so no one can return from Leave and Enter again while the
// old ready node still stands: the barrier is reusable for the next round as soon as a
// participant returns from Leave. A ready node left over with no participant (every
// participant died inside the barrier) is removed by the next Enter.
//
// Participant nodes are ephemeral, so a participant whose session expires has left,
// as far as the others can tell. Enter rides out disconnection and expiry (the node is
// created again under the new session); Leave returns at once if the participant's
// node is already gone, as Curator does, since it can no longer tell who is left.
// Enter that fails (ctx ended) deletes the participant's node, so it is not counted.
//
//	b := coordinator.NewDoubleBarrier(s, "/jobs/reindex/barrier", workerID, 3)
//	if err := b.Enter(ctx); err != nil { // returns when 3 workers are in
//		return err
//	}
//	work()
//	if err := b.Leave(ctx); err != nil { // returns when all of them are done
//		return err
//	}
type DoubleBarrier struct {
	s         *Session
	dir       string
	name      string
	node      string // dir/name: this participant's ephemeral node
	ready     string // dir/ready
	threshold int
	err       error // what is wrong with the arguments, returned by Enter and Leave
}

// doubleBarrierReady names the node that says "threshold reached".
const doubleBarrierReady = "ready"

// NewDoubleBarrier returns participant name of the double barrier in dir that opens
// when threshold participants have entered. threshold must be at least 1, and name a
// valid node name other than "ready"; otherwise Enter and Leave return an error that
// says what is wrong.
func NewDoubleBarrier(s *Session, dir, name string, threshold int) *DoubleBarrier {
	d := &DoubleBarrier{
		s:         s,
		dir:       dir,
		name:      name,
		node:      path.Join(dir, name),
		ready:     path.Join(dir, doubleBarrierReady),
		threshold: threshold,
	}
	var errs []error
	if threshold < 1 {
		errs = append(errs, fmt.Errorf("threshold %d: must be at least 1", threshold))
	}
	if name == doubleBarrierReady {
		errs = append(errs, fmt.Errorf("participant name %q is reserved", name))
	} else if err := checkNodeName(name); err != nil {
		errs = append(errs, fmt.Errorf("participant name: %w", err))
	}
	if !strings.HasPrefix(dir, "/") || len(dir) > 1 && strings.HasSuffix(dir, "/") {
		errs = append(errs, fmt.Errorf("dir %q: want an absolute path such as /barriers/b1", dir))
	}
	if len(errs) > 0 {
		d.err = fmt.Errorf("coordinator: double barrier %s: %w", dir, errors.Join(errs...))
	}
	return d
}

// Node returns the path of this participant's node.
func (d *DoubleBarrier) Node() string { return d.node }

// Enter joins the barrier and blocks until threshold participants have entered. When
// ctx ends or the Session closes first, it removes the participant's node and returns
// the reason.
func (d *DoubleBarrier) Enter(ctx context.Context) error {
	if d.err != nil {
		return d.err
	}
	for {
		if err := ctx.Err(); err != nil {
			return d.abandon(err)
		}
		open, watch, err := d.tryEnter(ctx)
		switch {
		case err != nil:
			if err := d.s.WaitToRetry(ctx, err); err != nil {
				return d.abandon(err)
			}
			continue
		case open:
			return nil
		}
		select {
		case ev := <-watch:
			if ev.Type == zk.EventNotWatching { // the session expired: our node went with it
				if err := d.s.WaitToRetry(ctx, ev.Err); err != nil {
					return d.abandon(err)
				}
			}
		case <-ctx.Done():
			return d.abandon(ctx.Err())
		case <-d.s.Closed():
			return d.abandon(ErrClosed)
		}
	}
}

// tryEnter is one pass of the recipe's enter: watch dir/ready, make sure our node is
// there, count the participants, and open the barrier if there are enough. open says
// the barrier is open; if not, watch fires when dir/ready changes. The watch is set
// before counting, so a ready node created after the count is not missed.
func (d *DoubleBarrier) tryEnter(ctx context.Context) (open bool, watch <-chan zk.Event, err error) {
	ready, stat, watch, err := d.s.conn.ExistsW(d.ready)
	if err != nil {
		return false, nil, fmt.Errorf("watch %s: %w", d.ready, err)
	}
	if err := d.createNode(ctx); err != nil {
		return false, nil, err
	}
	members, err := d.members()
	if err != nil {
		return false, nil, err
	}
	if !slices.Contains(members, d.name) {
		// Created, yet not listed: most likely the session expired in between.
		return false, nil, fmt.Errorf("%s vanished after its creation: %w", d.node, zk.ErrSessionExpired)
	}
	switch {
	case ready && len(members) == 1:
		// A ready node with no one but us inside: left over from a round whose
		// participants all died (the last one out deletes it with its own node). Remove
		// it; its deletion fires the watch and we look again.
		d.s.logger.Warn("removing stale double barrier ready node", "path", d.ready)
		err := d.s.conn.Delete(d.ready, stat.Version)
		if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
			return false, nil, fmt.Errorf("delete stale %s: %w", d.ready, err)
		}
		return false, watch, nil
	case ready:
		return true, nil, nil
	case len(members) >= d.threshold:
		_, err := d.s.conn.Create(d.ready, nil, 0, d.s.ACLFor(d.ready))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return false, nil, fmt.Errorf("create %s: %w", d.ready, err)
		}
		return true, nil, nil
	}
	return false, watch, nil
}

// createNode creates this participant's ephemeral node, and dir if need be. A node
// already there is fine if this session owns it (a create whose answer was lost).
func (d *DoubleBarrier) createNode(ctx context.Context) error {
	for {
		_, err := d.s.conn.Create(d.node, nil, zk.FlagEphemeral, d.s.ACLFor(d.node))
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := d.s.MakeDirs(ctx, d.dir); err != nil {
				return err
			}
			continue
		case !errors.Is(err, zk.ErrNodeExists):
			return fmt.Errorf("create %s: %w", d.node, err)
		}
		ok, stat, err := d.s.conn.Exists(d.node)
		switch {
		case err != nil:
			return fmt.Errorf("create %s: %w", d.node, err)
		case !ok:
			continue // gone in between: create it again
		case stat.EphemeralOwner != d.s.conn.SessionID():
			return fmt.Errorf("create %s: participant name %q is taken by session %s",
				d.node, d.name, hexID(stat.EphemeralOwner))
		}
		return nil
	}
}

// members returns the participants' names, sorted.
func (d *DoubleBarrier) members() ([]string, error) {
	children, _, err := d.s.conn.Children(d.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.dir, err)
	}
	children = slices.DeleteFunc(children, func(c string) bool { return c == doubleBarrierReady })
	slices.Sort(children)
	return children, nil
}

// abandon removes this participant's node after a failed Enter, so that it is not
// counted, and returns err. If the connection is down the node is deleted once it is
// back (unless the session expires first and takes the node along).
func (d *DoubleBarrier) abandon(err error) error {
	if !errors.Is(err, ErrClosed) {
		owner := d.s.conn.SessionID()
		del := func() error { return deleteOwned(d.s.conn, d.node, owner) }
		if derr := del(); derr != nil && !errors.Is(derr, zk.ErrClosing) {
			if IsConnLoss(derr) {
				deleteInBackground(d.s, d.node, del)
			} else {
				d.s.logger.Warn("cannot delete double barrier node", "path", d.node, "err", derr)
			}
		}
	}
	return fmt.Errorf("coordinator: enter double barrier %s: %w", d.dir, err)
}

// Leave leaves the barrier and blocks until every participant has left. It returns at
// once if this participant's node is gone (never entered, or its session expired).
// After a failed Leave (ctx ended) the participant may already be out, its node
// deleted: a second Leave then returns at once, without waiting for the others.
func (d *DoubleBarrier) Leave(ctx context.Context) error {
	if d.err != nil {
		return d.err
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("coordinator: leave double barrier %s: %w", d.dir, err)
		}
		done, err := d.leaveStep(ctx)
		if err == nil && done {
			return nil
		}
		if err != nil {
			if err := d.s.WaitToRetry(ctx, err); err != nil {
				return fmt.Errorf("coordinator: leave double barrier %s: %w", d.dir, err)
			}
		}
	}
}

// leaveStep is one pass of the recipe's leave; done when this participant is out and
// everyone else is too.
func (d *DoubleBarrier) leaveStep(ctx context.Context) (done bool, err error) {
	members, err := d.members()
	if err != nil {
		return false, err
	}
	i, found := slices.BinarySearch(members, d.name)
	switch {
	case !found:
		return true, nil
	case len(members) == 1:
		return true, d.removeLast()
	case i == 0:
		// The lowest waits for the highest to go, then looks again.
		return false, waitGone(ctx, d.s, path.Join(d.dir, members[len(members)-1]))
	}
	// Any other participant deletes its node and waits for the lowest's, which goes
	// last: then everyone has left.
	lowest := path.Join(d.dir, members[0])
	for {
		err := d.s.conn.Delete(d.node, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			break
		}
		if err := d.s.WaitToRetry(ctx, fmt.Errorf("delete %s: %w", d.node, err)); err != nil {
			return false, err
		}
	}
	return true, waitGone(ctx, d.s, lowest)
}

// removeLast deletes dir/ready and this participant's node at once: the last one out
// resets the barrier for the next round.
func (d *DoubleBarrier) removeLast() error {
	res, err := d.s.conn.Multi(
		&zk.DeleteRequest{Path: d.ready, Version: -1},
		&zk.DeleteRequest{Path: d.node, Version: -1})
	switch {
	case err == nil:
		return nil
	case len(res) == 2 && errors.Is(res[1].Error, zk.ErrNoNode):
		return nil // our node is gone already
	case len(res) == 2 && errors.Is(res[0].Error, zk.ErrNoNode):
		// No ready node (removed by hand, or never created by a participant that
		// entered alone and gave up): just ours.
		err = d.s.conn.Delete(d.node, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
	}
	return fmt.Errorf("delete %s and %s: %w", d.ready, d.node, err)
}

// waitGone blocks until no node is at p, keeping an exists watch on it: re-armed after
// every event, after a failed request once the Session is connected again, and after
// an expiry (whose watches are gone) once the new session is up. It returns ctx's
// error, ErrClosed, or an error the servers gave.
func waitGone(ctx context.Context, s *Session, p string) error {
	for {
		var r existsAnswer
		select {
		case r = <-armExistsWatch(s.conn, p):
		case <-ctx.Done():
			return ctx.Err()
		case <-s.Closed():
			return ErrClosed
		}
		if r.err != nil {
			if err := s.WaitToRetry(ctx, r.err); err != nil {
				return err
			}
			continue
		}
		if !r.exists {
			return nil
		}
		select {
		case ev := <-r.watch:
			if ev.Type == zk.EventNotWatching {
				if err := s.WaitToRetry(ctx, ev.Err); err != nil {
					return err
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-s.Closed():
			return ErrClosed
		}
	}
}
