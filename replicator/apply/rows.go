package apply

import (
	"context"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Inserts of consecutive rows of one table are sent as one statement of up to insertRows
// rows or about insertBytes bytes.
const (
	insertRows  = 1000
	insertBytes = 1 << 20
)

// onRows applies a rows event of a replicated table inside the target transaction.
func (s *stream) onRows(ctx context.Context, h *replication.EventHeader, e *replication.RowsEvent) error {
	if e.Table == nil {
		return nil
	}
	db, name := string(e.Table.Schema), string(e.Table.Table)
	if !s.scope.table(db, name) {
		return nil
	}
	if s.group == nil { // rows without a group start: keep them with what follows until the commit
		s.group = &group{inTxn: true}
	}
	t, err := s.tableFor(ctx, h, e, db, name)
	if err != nil {
		return err
	}
	if err := s.ensureTx(ctx); err != nil {
		return err
	}
	s.group.touched = true
	s.group.rows += int64(len(e.Rows))
	if e.Type() == replication.EnumRowsEventTypeUpdate {
		s.group.rows -= int64(len(e.Rows)) / 2 // before and after images
	}
	switch e.Type() {
	case replication.EnumRowsEventTypeInsert:
		return s.insertRows(ctx, t, e)
	case replication.EnumRowsEventTypeUpdate:
		return s.updateRows(ctx, h, t, e)
	case replication.EnumRowsEventTypeDelete:
		return s.deleteRows(ctx, h, t, e)
	}
	return permanentf(nil, "source %s: unknown rows event %v at %s:%d", s.src.addr, h.EventType, s.file, h.LogPos)
}

// tableFor returns the target table a rows event applies to, checking that it exists,
// has as many columns as the event, and that the event carries whole rows.
func (s *stream) tableFor(ctx context.Context, h *replication.EventHeader, e *replication.RowsEvent, db, name string) (*tableInfo, error) {
	t, err := s.tables.get(ctx, db, name)
	if err != nil {
		return nil, err
	}
	at := s.at()
	if t == nil {
		return nil, permanentf(nil, "rows for %s.%s at %s: the target has no such table (was it added to the "+
			"task's filters after the snapshot? re-snapshot the task)", db, name, at)
	}
	if len(t.cols) != int(e.ColumnCount) {
		return nil, permanentf(nil, "rows for %s.%s at %s have %d columns but the target table has %d: "+
			"the target's schema differs from the source's at this point", db, name, at, e.ColumnCount, len(t.cols))
	}
	for _, skipped := range e.SkippedColumns {
		if len(skipped) > 0 {
			return nil, permanentf(nil, "rows for %s.%s at %s lack some columns (a session with binlog_row_image "+
				"other than FULL): whole rows are required", db, name, at)
		}
	}
	return t, nil
}

// insertRows queues the event's rows for a multi-row INSERT.
func (s *stream) insertRows(ctx context.Context, t *tableInfo, e *replication.RowsEvent) error {
	for _, row := range e.Rows {
		if err := s.ins.add(ctx, s, t, t.values(row, e.Table.ColumnType)); err != nil {
			return err
		}
	}
	return nil
}

// updateRows updates each row found by its before image's key with its after image.
func (s *stream) updateRows(ctx context.Context, h *replication.EventHeader, t *tableInfo, e *replication.RowsEvent) error {
	if err := s.ins.send(ctx, s); err != nil {
		return err
	}
	for i := 0; i+1 < len(e.Rows); i += 2 {
		before := t.values(e.Rows[i], e.Table.ColumnType)
		after := t.values(e.Rows[i+1], e.Table.ColumnType)
		args := pick(pick(make([]any, 0, len(t.written)+len(t.match)), after, t.written), before, t.match)
		if err := s.execOne(ctx, h, t, "update", t.update, args, before); err != nil {
			return err
		}
	}
	return nil
}

// deleteRows deletes each row found by its key.
func (s *stream) deleteRows(ctx context.Context, h *replication.EventHeader, t *tableInfo, e *replication.RowsEvent) error {
	if err := s.ins.send(ctx, s); err != nil {
		return err
	}
	for _, row := range e.Rows {
		before := t.values(row, e.Table.ColumnType)
		if err := s.execOne(ctx, h, t, "delete", t.delete, pick(nil, before, t.match), before); err != nil {
			return err
		}
	}
	return nil
}

// execOne runs an UPDATE or DELETE that must find exactly one row: finding none means
// the target diverged from the source, which is never papered over.
func (s *stream) execOne(ctx context.Context, h *replication.EventHeader, t *tableInfo, op, query string, args, before []any) error {
	res, err := s.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return s.tgt.err(err, "%s of %s.%s (source %s:%d%s)", op, t.db, t.name, s.file, h.LogPos, s.annotation())
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return permanentf(nil, "%s of %s.%s at source %s:%d: the target has no row with %s: the target has "+
			"diverged from the source; re-snapshot the task%s", op, t.db, t.name, s.file, h.LogPos, t.describeKey(before), s.annotation())
	}
	return nil
}

// annotation returns the source's SQL of the current rows, if logged, for errors.
func (s *stream) annotation() string {
	if s.group == nil || s.group.annotate == "" {
		return ""
	}
	q := s.group.annotate
	if len(q) > 200 {
		q = q[:200] + "…"
	}
	return "; latest source statement: " + q
}

// insertBuf collects consecutive inserted rows of one table for one INSERT statement.
type insertBuf struct {
	t     *tableInfo
	rows  [][]any // converted rows, all columns
	bytes int
}

// add queues row for t, sending what is queued first if it is for another table or full.
func (b *insertBuf) add(ctx context.Context, s *stream, t *tableInfo, row []any) error {
	if b.t != t {
		if err := b.send(ctx, s); err != nil {
			return err
		}
		b.t = t
	}
	b.rows = append(b.rows, row)
	b.bytes += approxSize(row)
	if len(b.rows) >= insertRows || b.bytes >= insertBytes {
		return b.send(ctx, s)
	}
	return nil
}

// send executes the queued INSERT in the stream's transaction.
func (b *insertBuf) send(ctx context.Context, s *stream) error {
	if len(b.rows) == 0 {
		return nil
	}
	args := make([]any, 0, len(b.rows)*len(b.t.written))
	for _, row := range b.rows {
		args = pick(args, row, b.t.written)
	}
	_, err := s.tx.ExecContext(ctx, b.t.insertSQL(len(b.rows)), args...)
	t := b.t
	b.reset()
	if err != nil {
		return s.tgt.err(err, "insert into %s.%s (source %s%s)", t.db, t.name, s.at(), s.annotation())
	}
	return nil
}

func (b *insertBuf) reset() {
	b.t, b.rows, b.bytes = nil, b.rows[:0], 0
}

// approxSize estimates the bytes a row adds to a statement.
func approxSize(row []any) int {
	n := 0
	for _, v := range row {
		switch x := v.(type) {
		case string:
			n += len(x) + 4
		case []byte:
			n += 2*len(x) + 10
		default:
			n += 8
		}
	}
	return n
}
