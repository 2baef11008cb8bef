package apply

import (
	"context"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// handle applies one binlog event. The event-type switch is the whole grammar of the
// stream, hence its length.
func (s *stream) handle(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	s.evPos = h.LogPos
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		s.onRotate(h, e)
	case *replication.MariadbGTIDEvent:
		return s.beginGroup(h, e.GTID.String(), !e.IsStandalone())
	case *replication.GTIDEvent:
		return s.onMySQLGTID(h, e)
	case *replication.GtidTaggedLogEvent:
		return s.onMySQLGTID(h, &e.GTIDEvent)
	case *replication.QueryEvent:
		return s.onQuery(ctx, h, e)
	case *replication.RowsEvent:
		return s.onRows(ctx, h, e)
	case *replication.XIDEvent:
		if s.group == nil {
			return permanentf(nil, "source %s: a commit at %s:%d outside any transaction", s.src.addr, s.file, h.LogPos)
		}
		return s.endGroup(h)
	case *replication.MariadbAnnotateRowsEvent:
		if s.group != nil {
			s.group.annotate = string(e.Query)
		}
	case *replication.RowsQueryEvent:
		if s.group != nil {
			s.group.annotate = string(e.Query)
		}
	case *replication.TransactionPayloadEvent:
		return s.onPayload(ctx, h, e)
	case *replication.HeartbeatEvent:
		return s.idle(ctx, true)
	case *replication.ExecuteLoadQueryEvent, *replication.BeginLoadQueryEvent:
		return s.statementBased(h, "LOAD DATA")
	case *replication.GenericEvent:
		return s.onGeneric(h)
	}
	return nil // format descriptions, table maps, GTID lists, checkpoints, ...
}

// onRotate follows the source to its next binlog file. A real rotation sits between
// groups and moves the position to the new file; the artificial one that opens a dump
// only names the file being read.
func (s *stream) onRotate(h *replication.EventHeader, e *replication.RotateEvent) {
	s.file = string(e.NextLogName)
	if h.Timestamp == 0 || h.Flags&replication.LOG_EVENT_ARTIFICIAL_F != 0 || s.group != nil {
		return
	}
	s.pos.File, s.pos.Pos = s.file, uint32(e.Position)
}

// onMySQLGTID begins a MySQL group; anonymous GTIDs (gtid_mode OFF) carry no GTID.
func (s *stream) onMySQLGTID(h *replication.EventHeader, e *replication.GTIDEvent) error {
	gtid := ""
	if h.EventType != replication.ANONYMOUS_GTID_EVENT && s.gset != nil {
		next, err := e.GTIDNext()
		if err != nil {
			return permanentf(err, "source %s: unreadable GTID at %s:%d", s.src.addr, s.file, h.LogPos)
		}
		gtid = next.String()
	}
	return s.beginGroup(h, gtid, false) // MySQL opens transactions with a BEGIN query
}

// beginGroup opens an event group.
func (s *stream) beginGroup(h *replication.EventHeader, gtid string, inTxn bool) error {
	if s.group != nil {
		return permanentf(nil, "source %s: a transaction starts at %s:%d before the previous one ended",
			s.src.addr, s.file, h.LogPos)
	}
	s.group = &group{gtid: gtid, inTxn: inTxn}
	return nil
}

// endGroup closes the open group at the event h, whose end is the new position.
func (s *stream) endGroup(h *replication.EventHeader) error {
	g := s.group
	s.group = nil
	if g.touched {
		s.resuming = false
	}
	if h.LogPos == 0 {
		return permanentf(nil, "source %s: the binlog gives no end position for the transaction ending in %s "+
			"(gtid %s): positions cannot be recorded", s.src.addr, s.file, g.gtid)
	}
	if g.gtid != "" && s.gset != nil {
		if err := s.gset.Update(g.gtid); err != nil {
			return permanentf(err, "source %s: cannot add GTID %s", s.src.addr, g.gtid)
		}
	}
	s.pos = Position{File: s.file, Pos: h.LogPos, Time: time.Unix(int64(h.Timestamp), 0).UTC()}
	if s.gset != nil {
		s.pos.GTID = s.gset.String()
	}
	if g.touched {
		s.pending.groups++
		s.pending.rows += g.rows
		s.pending.ddl += g.ddl
	}
	return nil
}

// onPayload applies the events of a compressed MySQL transaction; those inside carry no
// end position of their own, so they take the payload's.
func (s *stream) onPayload(ctx context.Context, h *replication.EventHeader, e *replication.TransactionPayloadEvent) error {
	for _, inner := range e.Events {
		if inner.Header.LogPos == 0 {
			hh := *inner.Header
			hh.LogPos = h.LogPos
			inner.Header = &hh
		}
		if err := s.handle(ctx, inner); err != nil {
			return err
		}
	}
	return nil
}

// onGeneric fails on the events that make replication unsafe to continue.
func (s *stream) onGeneric(h *replication.EventHeader) error {
	switch h.EventType {
	case replication.INCIDENT_EVENT:
		return permanentf(nil, "source %s logged an incident at %s:%d: changes may be missing from its binlog; "+
			"re-snapshot the task", s.src.addr, s.file, h.LogPos)
	case replication.XA_PREPARE_LOG_EVENT:
		return permanentf(nil, "source %s: XA transaction at %s:%d: XA transactions are not supported",
			s.src.addr, s.file, h.LogPos)
	case replication.MARIADB_START_ENCRYPTION_EVENT:
		return permanentf(nil, "source %s: binlog %s is encrypted: encrypted binlogs are not supported", s.src.addr, s.file)
	}
	return nil
}

// statementBased fails on a statement-based data change in a scope the task covers.
func (s *stream) statementBased(h *replication.EventHeader, what string) error {
	return permanentf(nil, "source %s logged %s as a statement at %s:%d (a session with binlog_format "+
		"STATEMENT or MIXED): ROW is required; the change cannot be applied", s.src.addr, what, s.file, h.LogPos)
}
