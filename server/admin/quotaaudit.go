package admin

// QuotaAuditStats count, since start, what quotas and the audit log did on this server
// (docs/quotas.md). srst does not reset them.
type QuotaAuditStats struct {
	// QuotaRefused counts writes refused with QuotaExceeded: past a hard quota while
	// quotas are enforced. QuotaExceeded counts quota limits passed without a refusal
	// (soft ones, and hard ones while quotas are not enforced). Both count the writes
	// this server proposed, which are those of its own clients.
	QuotaRefused, QuotaExceeded int64
	// AuditEnabled is set when the audit log is on. AuditWritten counts the lines
	// written; AuditDropped the lines lost, because the queue to the disk was full or a
	// write failed.
	AuditEnabled               bool
	AuditWritten, AuditDropped int64
}

// appendQuotaAudit adds the quota and audit counters to mntr.
func appendQuotaAudit(o object, q *QuotaAuditStats) object {
	o = append(o, field{"quota_refused_count", q.QuotaRefused}, field{"quota_exceeded_count", q.QuotaExceeded})
	if q.AuditEnabled {
		o = append(o, field{"audit_lines_written", q.AuditWritten}, field{"audit_lines_dropped", q.AuditDropped})
	}
	return o
}
