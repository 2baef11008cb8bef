package server

import (
	"sync/atomic"
	"time"

	"github.com/paddock/paddock/server/admin"
	"github.com/paddock/paddock/server/txn"
)

// quotaLogInterval is the least time between two "quota exceeded" log lines: a client
// writing past a quota in a loop must not flood the log (ZooKeeper rate-limits these
// lines too, with its RateLogger).
const quotaLogInterval = time.Second

// quotaCounters count the quota limits that writes this server proposed passed, since
// start; admin shows them. The apply loop alone writes them; lastLog is its own.
type quotaCounters struct {
	refused    atomic.Int64 // writes refused with QuotaExceeded (a hard limit, enforced)
	exceeded   atomic.Int64 // limits passed without a refusal: soft ones, hard ones not enforced
	suppressed int64        // lines not logged since the last one; owned by the apply loop
	lastLog    time.Time    // owned by the apply loop
}

// noteQuota counts and logs, at most once per quotaLogInterval, the quota limits a txn
// this server proposed passed. Every member computes the same, so only the proposer
// speaks. Called by apply, under the tree lock.
func (s *Server) noteQuota(p *proposal, res *txn.Result) {
	if len(res.Quota) == 0 || p.remote {
		return
	}
	q := &s.quota
	for _, v := range res.Quota {
		if v.Hard && s.txnOpts.EnforceQuota {
			q.refused.Add(1)
		} else {
			q.exceeded.Add(1)
		}
	}
	now := time.Now()
	if now.Sub(q.lastLog) < quotaLogInterval {
		q.suppressed += int64(len(res.Quota))
		return
	}
	v := res.Quota[0]
	s.logger.Warn("quota exceeded", "quota", v.Quota, "kind", v.Kind, "value", v.Value, "limit", v.Limit,
		"hard", v.Hard, "refused", v.Hard && s.txnOpts.EnforceQuota, "session_id", hexID(p.txn.Session),
		"suppressed", q.suppressed)
	q.lastLog, q.suppressed = now, 0
}

// quotaAuditStats reads the quota and audit counters for admin.
func (s *Server) quotaAuditStats() admin.QuotaAuditStats {
	st := admin.QuotaAuditStats{QuotaRefused: s.quota.refused.Load(), QuotaExceeded: s.quota.exceeded.Load()}
	if a := s.audit; a != nil {
		st.AuditEnabled = true
		st.AuditWritten = a.written.Load()
		st.AuditDropped = a.dropped.Load() + a.failed.Load()
	}
	return st
}
