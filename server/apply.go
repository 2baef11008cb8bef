package server

import (
	"context"
	"time"

	"github.com/paddock/paddock/server/admin"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// maxBatch caps the txns made durable by one fsync (ZooKeeper's maxBatchSize).
const maxBatch = 1000

// What both modes share: a proposal's way into the log (propose, nextBatch) and the
// apply of a committed txn to the tree, the watches, the sessions and the client.

// proposal is a txn on its way through the log to the tree.
type proposal struct {
	txn  *txn.Txn
	conn *conn    // the client to answer; nil for server-internal txns
	req  *request // the request being answered; nil for server-internal txns
	// done, if set, receives the result once applied (the handshake waits for its
	// createSession this way). Buffered: the applier never blocks on it.
	done chan txn.Result
	// remote marks a txn another member proposed (an ensemble's, or one replayed from
	// the log): its quota notes and audit lines are the proposer's to write.
	remote bool
	// proposed is when the txn was handed to the log (for the write stage metrics).
	proposed time.Time
}

// proposing notes that batch is being handed to the log now: the queue stage of each
// client write ends here, and its commit stage begins.
func (s *Server) proposing(batch []*proposal) {
	now := time.Now()
	for _, p := range batch {
		p.proposed = now
		if p.req != nil {
			s.admin.ObserveStage(admin.StageQueue, now.Sub(p.req.start))
		}
	}
}

// propose queues a txn for the log, whose loop takes it with the others waiting
// (nextBatch). It blocks while MaxOutstanding proposals are in flight, which pauses the
// proposing connection's reads: backpressure reaches the client through TCP. It fails
// only when the server is shutting down.
func (s *Server) propose(ctx context.Context, p *proposal) error {
	select {
	case s.proposals <- p:
		return nil
	case <-s.stopping:
		return errShuttingDown
	case <-ctx.Done():
		return ctx.Err()
	}
}

// nextBatch waits for a proposal and returns it with every other one waiting, up to
// maxBatch; nil when the server is stopping. The log's loop calls it (solo.commitLoop,
// replica.proposeLoop).
func (s *Server) nextBatch() []*proposal {
	var batch []*proposal
	select {
	case p := <-s.proposals:
		batch = append(batch, p)
	case <-s.stopping:
		return nil
	}
	for len(batch) < maxBatch {
		select {
		case p := <-s.proposals:
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// apply applies one committed txn, on the log's applying goroutine (solo.applyLoop, or
// a member's Raft apply loop), in log order, the txn's zxid set. Under the tree write
// lock: apply, fire watches (queuing notifications), then queue the reply — so a
// watcher hears of a change before any reply that reveals it.
func (s *Server) apply(p *proposal) {
	s.treeMu.Lock()
	defer s.treeMu.Unlock()
	res := txn.Apply(s.tree, p.txn, s.txnOpts)
	s.lastApplied.Store(p.txn.Zxid)
	for _, ev := range res.Events {
		s.fire(ev, p.txn.Zxid)
	}
	s.afterApplyLocked(p, &res)
	s.noteQuota(p, &res)
	s.auditApplied(p, &res)
	if p.done != nil {
		p.done <- res
	}
	if p.req != nil && !p.proposed.IsZero() {
		s.admin.ObserveStage(admin.StageCommit, time.Since(p.proposed))
	}
	if p.conn != nil && p.req != nil {
		p.conn.completeWrite(p, &res)
	}
}

// fire notifies every watcher of ev that may read the changed node.
func (s *Server) fire(ev txn.Event, zxid int64) {
	s.watches.Trigger(ev.Type, ev.Path, func(c *conn) {
		if c.canRead(ev.ACL) {
			c.notify(ev.Type, ev.Path, s.notificationZxid(zxid))
		}
	})
}

// notificationZxid is the zxid a notification carries. ZooKeeper 3.8 sends -1; 3.9 sends
// the zxid of the txn that fired it (ZOOKEEPER-4655). We match 3.8, our reference.
func (s *Server) notificationZxid(int64) int64 { return -1 }

// afterApplyLocked updates the server's own tables for session txns.
func (s *Server) afterApplyLocked(p *proposal, res *txn.Result) {
	switch p.txn.Op {
	case wire.OpCreateSession:
		cs := p.txn.Req.(*txn.CreateSession)
		s.sessions.Add(p.txn.Session, time.Duration(cs.Timeout)*time.Millisecond, time.Now())
	case wire.OpCloseSession:
		s.sessions.Remove(p.txn.Session)
		s.mu.Lock()
		c := s.sessionConns[p.txn.Session]
		delete(s.sessionConns, p.txn.Session)
		s.mu.Unlock()
		if c != nil && c != p.conn {
			c.closeAfterFlush() // expired: ZooKeeper drops the connection without a word
		}
	}
}
