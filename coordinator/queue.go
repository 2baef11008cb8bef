package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Queue is a distributed FIFO queue (the ZooKeeper recipe; Curator's
// SimpleDistributedQueue): each item is a persistent-sequential node dir/q-NNNNNNNNNN
// holding the item's data. Put appends; Take removes the item with the lowest sequence
// number, reading its data and then deleting it with the version it read, so each item
// goes to exactly one consumer. Any number of Sessions may put and take, and a Queue
// is safe for concurrent use. Items are persistent: they outlive the Sessions that put
// them.
//
// Order: items are numbered in the order the servers create them, and a single
// consumer takes them in that order. With several consumers each item still goes to
// one of them, but the order in which they finish processing is anyone's (Curator: use
// a single consumer, e.g. a leader, for strict FIFO).
//
// Disconnection and expiry (StateSuspended, StateLost) do not lose the queue: reads
// and the children watch of a blocked Take are retried and re-armed once the Session is
// connected again. A write whose answer is lost with the connection is not retried,
// since it may have been applied: Put and Take then fail with ErrOutcomeUnknown (see
// them).
//
// Curator's caveat applies (its Tech Note 4): ZooKeeper is not a high-volume queue.
// Take lists all of dir's children, and a getChildren answer must fit the servers'
// packet limit (jute.maxbuffer, 1 MB by default): about 65,000 items with these names.
// Every item also lives in the servers' memory. Keep queues short, or use a real
// message queue.
//
//	q := coordinator.NewQueue(s, "/jobs/queue")
//	if _, err := q.Put(ctx, []byte(`{"job":"reindex"}`)); err != nil {
//		return err
//	}
//	// ... a consumer:
//	for {
//		item, err := q.Take(ctx) // blocks while the queue is empty
//		if err != nil {
//			return err
//		}
//		handle(item)
//	}
type Queue struct {
	s   *Session
	dir string
}

// queueItemPrefix starts the name of every item node; the servers append the sequence
// number.
const queueItemPrefix = "q-"

// NewQueue returns the queue whose items are the children of dir. dir and its parents
// are created by the first Put or Take that needs them.
func NewQueue(s *Session, dir string) *Queue { return &Queue{s: s, dir: dir} }

// Dir returns the path of the queue's node.
func (q *Queue) Dir() string { return q.dir }

// Put appends an item holding data and returns the path of its node. If the
// connection drops while the create is on its way, Put returns an error wrapping
// ErrOutcomeUnknown: the item may or may not have been added.
func (q *Queue) Put(ctx context.Context, data []byte) (string, error) {
	for {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("coordinator: put in queue %s: %w", q.dir, err)
		}
		p, err := q.s.conn.Create(path.Join(q.dir, queueItemPrefix), data, zk.FlagSequence, q.s.ACLFor(path.Join(q.dir, queueItemPrefix)))
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, zk.ErrNoNode):
			err = q.s.MakeDirs(ctx, q.dir)
			if err == nil {
				continue
			}
		case IsConnLoss(err) && !WriteNotSent(err):
			return "", fmt.Errorf("coordinator: put in queue %s: %w: %w", q.dir, ErrOutcomeUnknown, err)
		}
		if err := q.s.WaitToRetry(ctx, err); err != nil {
			return "", fmt.Errorf("coordinator: put in queue %s: %w", q.dir, err)
		}
	}
}

// Take removes the item at the head of the queue and returns its data, blocking while
// the queue is empty, until ctx ends or the Session closes.
//
// If the connection drops while Take's delete is on its way, Take returns the item's
// data with an error wrapping ErrOutcomeUnknown: the item is gone from the queue or
// about to be, taken by this call or, rarely, by another consumer that raced it. A
// consumer that wants each item processed at least once processes that data; one that
// wants at most once drops it.
func (q *Queue) Take(ctx context.Context) ([]byte, error) {
	for {
		data, ok, err := q.TryTake(ctx)
		if err != nil || ok {
			return data, err
		}
		// Empty: watch the children, then look again before waiting, since an item
		// may have come in between.
		items, watch, err := q.watchItems(ctx)
		if err != nil {
			return nil, err
		}
		if len(items) > 0 {
			continue
		}
		select {
		case ev := <-watch:
			if ev.Type == zk.EventNotWatching {
				if err := q.s.WaitToRetry(ctx, ev.Err); err != nil {
					return nil, fmt.Errorf("coordinator: take from queue %s: %w", q.dir, err)
				}
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("coordinator: take from queue %s: %w", q.dir, ctx.Err())
		case <-q.s.Closed():
			return nil, fmt.Errorf("coordinator: take from queue %s: %w", q.dir, ErrClosed)
		}
	}
}

// TryTake removes the item at the head of the queue and returns its data; ok is false,
// at once, if the queue is empty. Its errors are Take's.
func (q *Queue) TryTake(ctx context.Context) (data []byte, ok bool, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, false, fmt.Errorf("coordinator: take from queue %s: %w", q.dir, err)
		}
		items, err := q.items()
		if err == nil {
			data, ok, err = q.takeFirst(items)
			if err == nil {
				return data, ok, nil
			}
			if errors.Is(err, ErrOutcomeUnknown) {
				return data, ok, fmt.Errorf("coordinator: take from queue %s: %w", q.dir, err)
			}
		}
		if err := q.s.WaitToRetry(ctx, err); err != nil {
			return nil, false, fmt.Errorf("coordinator: take from queue %s: %w", q.dir, err)
		}
	}
}

// takeFirst takes the first of items (names, in queue order) that it can: an item
// deleted by another consumer in the meantime is skipped. ok is false if there was
// none left.
func (q *Queue) takeFirst(items []string) (data []byte, ok bool, err error) {
	for _, name := range items {
		p := path.Join(q.dir, name)
		for {
			data, stat, err := q.s.conn.Get(p)
			if errors.Is(err, zk.ErrNoNode) {
				break // taken by another consumer
			}
			if err != nil {
				return nil, false, fmt.Errorf("get %s: %w", p, err)
			}
			err = q.s.conn.Delete(p, stat.Version)
			switch {
			case err == nil:
				return data, true, nil
			case errors.Is(err, zk.ErrNoNode):
			case errors.Is(err, zk.ErrBadVersion):
				continue // its data changed since we read it: read it again
			case IsConnLoss(err) && !WriteNotSent(err):
				return data, true, fmt.Errorf("delete %s: %w: %w", p, ErrOutcomeUnknown, err)
			default:
				return nil, false, fmt.Errorf("delete %s: %w", p, err)
			}
			break
		}
	}
	return nil, false, nil
}

// Len returns the number of items in the queue.
func (q *Queue) Len(ctx context.Context) (int, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("coordinator: length of queue %s: %w", q.dir, err)
		}
		items, err := q.items()
		if err == nil {
			return len(items), nil
		}
		if err := q.s.WaitToRetry(ctx, err); err != nil {
			return 0, fmt.Errorf("coordinator: length of queue %s: %w", q.dir, err)
		}
	}
}

// items lists the queue's item names in queue order; none if dir does not exist.
func (q *Queue) items() ([]string, error) {
	children, _, err := q.s.conn.Children(q.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", q.dir, err)
	}
	return sortQueueItems(children), nil
}

// watchItems lists the queue's items and leaves a children watch on dir, creating dir
// if need be (a missing node cannot carry a children watch). It rides out
// disconnections.
func (q *Queue) watchItems(ctx context.Context) ([]string, <-chan zk.Event, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("coordinator: take from queue %s: %w", q.dir, err)
		}
		children, _, watch, err := q.s.conn.ChildrenW(q.dir)
		if err == nil {
			return sortQueueItems(children), watch, nil
		}
		if errors.Is(err, zk.ErrNoNode) {
			err = q.s.MakeDirs(ctx, q.dir)
			if err == nil {
				continue
			}
		}
		if err := q.s.WaitToRetry(ctx, err); err != nil {
			return nil, nil, fmt.Errorf("coordinator: take from queue %s: %w", q.dir, err)
		}
	}
}

// sortQueueItems keeps the item names among children and sorts them by sequence
// number. ZooKeeper's sequence counter is a signed 32-bit number: past 2^31 creates in
// one dir the names go negative and the order breaks, as in every ZooKeeper queue.
func sortQueueItems(children []string) []string {
	type item struct {
		name string
		seq  int64
	}
	items := make([]item, 0, len(children))
	for _, c := range children {
		if !strings.HasPrefix(c, queueItemPrefix) {
			continue
		}
		seq, err := strconv.ParseInt(c[len(queueItemPrefix):], 10, 64)
		if err != nil {
			continue // not an item of ours
		}
		items = append(items, item{c, seq})
	}
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.seq, b.seq) })
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.name
	}
	return names
}
