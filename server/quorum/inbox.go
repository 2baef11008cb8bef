package quorum

import (
	"context"
	"sync"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// The Ready loop drives Raft itself (a raft.RawNode, not raft.Node and its goroutine).
// Everything other goroutines want of Raft reaches the loop through the member's
// mailbox, one queue in arrival order: the peers' messages, the append and apply loops'
// responses, proposals, ReadIndex requests, status queries, membership changes. The
// loop takes all that is waiting at once, steps it, and then asks Raft for one Ready:
// a burst of messages costs one Ready, not one each, and no message crosses two
// goroutines (connection → Raft's goroutine → Ready loop) on its way in.
//
// The peers' messages are bounded (maxInbox): a connection whose message finds the
// mailbox full waits, which holds back the peer through TCP. What the member's own loops
// put there is not: they must never wait for the Ready loop while it could be waiting
// for them.

// maxInbox bounds the peers' messages waiting in the mailbox.
const maxInbox = 4096

// inboxItem is a message to step, or a call to run on the Ready loop.
type inboxItem struct {
	m     *raftpb.Message
	call  func(rn *raft.RawNode)
	query bool // call only reads: not counted in pending and handled
}

type mailbox struct {
	mu    sync.Mutex
	items []inboxItem
	peers int           // peers' messages among items
	wake  chan struct{} // capacity 1: something arrived
	space chan struct{} // capacity 1: the loop took the items
}

func newMailbox() mailbox {
	return mailbox{wake: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// put queues it; a peer's message waits while maxInbox of them are queued, until
// done closes. It reports whether it queued it.
func (b *mailbox) put(it inboxItem, peer bool, done <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if !peer || b.peers < maxInbox {
			b.items = append(b.items, it)
			if peer {
				b.peers++
			}
			b.mu.Unlock()
			signal(b.wake)
			return true
		}
		b.mu.Unlock()
		select {
		case <-b.space:
		case <-done:
			return false
		}
	}
}

// take returns everything queued, in order, and makes room.
func (b *mailbox) take(buf []inboxItem) []inboxItem {
	b.mu.Lock()
	items := b.items
	b.items, b.peers = buf[:0], 0
	b.mu.Unlock()
	signal(b.space)
	return items
}

// enqueue queues a message for Raft: a peer's (bounded) or one of the member's own
// loops'. It reports false once the member stops.
func (n *Node) enqueue(m *raftpb.Message, peer bool) bool {
	n.pending.Add(1)
	if n.in.put(inboxItem{m: m}, peer, n.stop) {
		return true
	}
	n.pending.Add(-1)
	return false
}

// do runs fn on the Ready loop, without waiting for it.
func (n *Node) do(fn func(rn *raft.RawNode)) {
	n.pending.Add(1)
	if !n.in.put(inboxItem{call: fn}, false, n.stop) {
		n.pending.Add(-1)
	}
}

// call runs fn on the Ready loop and waits for it; false if the member stopped, or ctx
// ended, first (fn may still run). Never from the Ready loop itself.
func (n *Node) call(ctx context.Context, fn func(rn *raft.RawNode)) bool {
	return n.callAs(ctx, fn, true)
}

// query is call for fn that only reads Raft's state (Status): it is not counted as
// work, so that tests waiting for the members to settle can watch them.
func (n *Node) query(fn func(rn *raft.RawNode)) bool {
	return n.callAs(context.Background(), fn, false)
}

func (n *Node) callAs(ctx context.Context, fn func(rn *raft.RawNode), work bool) bool {
	done := make(chan struct{})
	it := inboxItem{call: func(rn *raft.RawNode) {
		fn(rn)
		close(done)
	}, query: !work}
	if work {
		n.pending.Add(1)
	}
	if !n.in.put(it, false, n.stop) {
		if work {
			n.pending.Add(-1)
		}
		return false
	}
	select {
	case <-done:
		return true
	case <-n.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// queue is an unbounded FIFO handed from one goroutine to another: the Ready loop's
// work for the append and apply loops. Raft bounds what is in flight (the
// uncommitted log on a leader, the inflight appends to a follower, the committed
// entries applying), so the queue need not, and the Ready loop never waits on a loop
// that may be waiting on it (the apply loop's membership changes call the Ready loop).
type queue[T any] struct {
	mu    sync.Mutex
	items []T
	ready chan struct{} // capacity 1: items were added
}

func newQueue[T any]() *queue[T] { return &queue[T]{ready: make(chan struct{}, 1)} }

func (q *queue[T]) push(it T) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	signal(q.ready)
}

// pop returns the oldest item, if any.
func (q *queue[T]) pop() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var zero T
	if len(q.items) == 0 {
		return zero, false
	}
	it := q.items[0]
	q.items[0] = zero
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil // let the backing array go
	}
	return it, true
}

// wait returns the oldest item, waiting for one until stop or failed closes.
func (q *queue[T]) wait(stop, failed <-chan struct{}) (T, bool) {
	for {
		if it, ok := q.pop(); ok {
			return it, true
		}
		select {
		case <-q.ready:
		case <-stop:
			var zero T
			return zero, false
		case <-failed:
			var zero T
			return zero, false
		}
	}
}
