package server

import (
	"context"
	"fmt"
	"time"

	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// maxBatch caps the txns made durable by one fsync (ZooKeeper's maxBatchSize).
const maxBatch = 1000

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
}

// propose queues a txn for the log. It blocks while MaxOutstanding proposals are in
// flight, which pauses the proposing connection's reads: backpressure reaches the client
// through TCP. It fails only when the server is shutting down.
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

// commitLoop is the log's single writer. It takes every proposal waiting, gives each the
// next zxid and the current time, appends them all to the write-ahead log and makes them
// durable with one fsync (group commit), then hands the batch to applyLoop. While a batch
// is being applied the next one is already being written.
func (s *Server) commitLoop() {
	defer close(s.committed)
	var enc wire.Encoder
	for {
		batch := s.nextBatch()
		if batch == nil {
			return
		}
		now := time.Now().UnixMilli()
		for _, p := range batch {
			s.lastZxid++
			p.txn.Zxid, p.txn.Time = s.lastZxid, now
			enc.Reset()
			p.txn.Encode(&enc)
			if err := s.wal.Append(p.txn.Zxid, enc.Bytes()); err != nil {
				s.fatal(fmt.Errorf("append to log: %w", err))
				return
			}
		}
		start := time.Now()
		if err := s.wal.Sync(); err != nil {
			s.fatal(fmt.Errorf("sync log: %w", err))
			return
		}
		s.admin.ObserveFsync(time.Since(start))
		select {
		case s.committed <- batch:
		case <-s.stopping:
			return
		}
	}
}

// nextBatch waits for a proposal and returns it with every other one waiting, up to
// maxBatch; nil when the server is stopping.
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

// applyLoop applies committed batches in log order. For each txn, under the tree write
// lock: apply, fire watches (queuing notifications), then queue the reply — so a watcher
// hears of a change before any reply that reveals it.
func (s *Server) applyLoop() {
	for batch := range s.committed {
		for _, p := range batch {
			s.apply(p)
		}
	}
}

func (s *Server) apply(p *proposal) {
	s.treeMu.Lock()
	defer s.treeMu.Unlock()
	res := txn.Apply(s.tree, p.txn, s.txnOpts)
	s.lastApplied.Store(p.txn.Zxid)
	if s.rep == nil {
		s.maybeSnapshotLocked() // a member's snapshots are Raft's (replica.Snapshot)
	}
	for _, ev := range res.Events {
		s.fire(ev, p.txn.Zxid)
	}
	s.afterApplyLocked(p, &res)
	s.noteQuota(p, &res)
	s.auditApplied(p, &res)
	if p.done != nil {
		p.done <- res
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
