package apply

import (
	"context"
	"database/sql"
	"strings"
	"time"
)

// Snapshot batching: rows per INSERT statement, bytes per INSERT statement (well under the
// default max_allowed_packet of 16 MiB), and rows per target transaction.
const (
	snapshotStmtRows  = 1000
	snapshotStmtBytes = 1 << 20
	snapshotTxRows    = 20000
)

// snapshot copies the included tables' rows as of one consistent moment of the source
// and writes the checkpoint at the binlog position of that moment. Until that last
// write the task has no checkpoint, so a snapshot cut short is started over, emptying
// the included target tables first.
func (r *runner) snapshot(ctx context.Context) (Position, error) {
	start := time.Now()
	r.progress.update(func(p *Progress) { p.Snapshotting = true })
	defer r.progress.update(func(p *Progress) { p.Snapshotting = false })
	conn, err := r.src.db.Conn(ctx)
	if err != nil {
		return Position{}, sideErr("source", r.src.addr, err)
	}
	defer func() {
		conn.ExecContext(context.Background(), "ROLLBACK") // end the read view before the pool reuses conn
		conn.Close()
	}()
	pos, err := r.src.snapshotStart(ctx, conn)
	if err != nil {
		return Position{}, err
	}
	tables, err := r.snapshotTables(ctx, conn)
	if err != nil {
		return Position{}, err
	}
	r.log.Info("snapshot started", "position", pos.String(), "tables", len(tables))
	var rows int64
	for _, t := range tables {
		n, err := r.copyTable(ctx, conn, t)
		if err != nil {
			return Position{}, err
		}
		rows += n
	}
	if err := r.tgt.commitPosition(ctx, pos); err != nil {
		return Position{}, err
	}
	r.log.Info("snapshot done", "position", pos.String(), "tables", len(tables), "rows", rows,
		"duration", time.Since(start).Round(time.Millisecond))
	r.committed(pos, batchStats{})
	return pos, nil
}

// snapshotTables lists the source's base tables in scope, creates those the target lacks
// (and their databases) from SHOW CREATE TABLE, and empties them all on the target.
func (r *runner) snapshotTables(ctx context.Context, conn *sql.Conn) ([]tableRef, error) {
	rows, err := conn.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "+
		"WHERE TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_SCHEMA, TABLE_NAME")
	if err != nil {
		return nil, r.src.err(err, "snapshot: list tables")
	}
	var tables []tableRef
	for rows.Next() {
		var t tableRef
		if err := rows.Scan(&t.db, &t.name); err != nil {
			rows.Close()
			return nil, r.src.err(err, "snapshot: list tables")
		}
		if r.scope.table(t.db, t.name) {
			tables = append(tables, t)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, r.src.err(err, "snapshot: list tables")
	}
	kept := tables[:0]
	for _, t := range tables {
		ok, err := r.prepareTargetTable(ctx, conn, t)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, t)
		}
	}
	return kept, nil
}

// prepareTargetTable creates t on the target if missing, else empties it (in a fenced
// transaction, so a deposed run cannot wipe the new owner's copy). It returns false for
// a table dropped since it was listed: the DROP follows the snapshot's position in the
// binlog, so the stream removes the table anyway.
func (r *runner) prepareTargetTable(ctx context.Context, conn *sql.Conn, t tableRef) (bool, error) {
	var name, create string
	err := conn.QueryRowContext(ctx, "SHOW CREATE TABLE "+quoteTable(t.db, t.name)).Scan(&name, &create)
	if errorCode(err) == 1146 {
		r.log.Debug("snapshot: table dropped meanwhile", "table", t.String())
		return false, nil
	}
	if err != nil {
		return false, r.src.err(err, "snapshot: SHOW CREATE TABLE %s", t)
	}
	exists, err := r.tgt.tableExists(ctx, t)
	if err != nil {
		return false, err
	}
	if exists {
		return true, r.tgt.inTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "DELETE FROM "+quoteTable(t.db, t.name))
			return err
		}, "snapshot: empty %s", t)
	}
	createDB := r.src.createDatabaseSQL(ctx, conn, t.db)
	if err := r.tgt.checkFence(ctx); err != nil {
		return false, err
	}
	return true, r.tgt.execIn(ctx, t.db, createDB, create)
}

// copyTable copies t's rows in batched INSERTs, committing every snapshotTxRows rows.
func (r *runner) copyTable(ctx context.Context, conn *sql.Conn, t tableRef) (int64, error) {
	cols, err := r.writableColumns(ctx, conn, t)
	if err != nil {
		return 0, err
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = quoteIdent(c)
	}
	rows, err := conn.QueryContext(ctx, "SELECT "+strings.Join(names, ", ")+" FROM "+quoteTable(t.db, t.name))
	if err != nil {
		return 0, r.src.err(err, "snapshot: read %s", t)
	}
	defer rows.Close()
	binary, err := binaryColumns(rows)
	if err != nil {
		return 0, r.src.err(err, "snapshot: read %s", t)
	}
	c := &tableCopy{r: r, t: t, insert: "INSERT INTO " + quoteTable(t.db, t.name) + " (" + strings.Join(names, ", ") + ") VALUES "}
	defer c.rollback()
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return c.total, r.src.err(err, "snapshot: read %s", t)
		}
		if err := c.add(ctx, rowValues(raw, binary)); err != nil {
			return c.total, err
		}
	}
	if err := rows.Err(); err != nil {
		return c.total, r.src.err(err, "snapshot: read %s", t)
	}
	return c.total, c.commit(ctx)
}

// writableColumns lists t's non-generated columns on the source, in order.
func (r *runner) writableColumns(ctx context.Context, conn *sql.Conn, t tableRef) ([]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT COLUMN_NAME, EXTRA FROM information_schema.COLUMNS "+
		"WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", t.db, t.name)
	if err != nil {
		return nil, r.src.err(err, "snapshot: read the columns of %s", t)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var name, extra string
		if err := rows.Scan(&name, &extra); err != nil {
			return nil, r.src.err(err, "snapshot: read the columns of %s", t)
		}
		if !newColumn(name, "", "", "", extra).generated {
			cols = append(cols, name)
		}
	}
	return cols, rows.Err()
}

// binaryColumns reports which result columns hold raw bytes; the others are text in the
// connection's utf8mb4 and are sent back as such.
func binaryColumns(rows *sql.Rows) ([]bool, error) {
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	binary := make([]bool, len(types))
	for i, ct := range types {
		binary[i] = isBinaryType(strings.ToLower(ct.DatabaseTypeName()))
	}
	return binary, nil
}

// rowValues copies a scanned row into parameter values: NULL, bytes or a string.
func rowValues(raw []sql.RawBytes, binary []bool) []any {
	vals := make([]any, len(raw))
	for i, b := range raw {
		switch {
		case b == nil:
			vals[i] = nil
		case binary[i]:
			vals[i] = []byte(string(b))
		default:
			vals[i] = string(b)
		}
	}
	return vals
}

// tableCopy batches the snapshot rows of one table into target transactions.
type tableCopy struct {
	r      *runner
	t      tableRef
	insert string // INSERT INTO ... VALUES
	tx     *sql.Tx
	rows   [][]any // rows waiting for the next INSERT
	bytes  int     // their approximate size
	inTx   int     // rows inserted in tx
	total  int64
}

// add queues a row, sending an INSERT when the statement is full.
func (c *tableCopy) add(ctx context.Context, row []any) error {
	c.rows = append(c.rows, row)
	for _, v := range row {
		switch x := v.(type) {
		case string:
			c.bytes += len(x) + 4
		case []byte:
			c.bytes += 2*len(x) + 10
		default:
			c.bytes += 5
		}
	}
	if len(c.rows) < snapshotStmtRows && c.bytes < snapshotStmtBytes {
		return nil
	}
	if err := c.flush(ctx); err != nil {
		return err
	}
	if c.inTx >= snapshotTxRows {
		return c.commit(ctx)
	}
	return nil
}

// flush sends the queued rows as one INSERT in the open (or a new) fenced transaction.
func (c *tableCopy) flush(ctx context.Context) error {
	if len(c.rows) == 0 {
		return nil
	}
	if c.tx == nil {
		tx, err := c.r.tgt.begin(ctx)
		if err != nil {
			return err
		}
		c.tx = tx
	}
	var b strings.Builder
	b.WriteString(c.insert)
	args := make([]any, 0, len(c.rows)*len(c.rows[0]))
	for i, row := range c.rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + strings.TrimSuffix(strings.Repeat("?, ", len(row)), ", ") + ")")
		args = append(args, row...)
	}
	if _, err := c.tx.ExecContext(ctx, b.String(), args...); err != nil {
		return c.r.tgt.err(err, "snapshot: insert into %s", c.t)
	}
	c.inTx += len(c.rows)
	c.total += int64(len(c.rows))
	n := int64(len(c.rows))
	c.r.progress.update(func(p *Progress) { p.SnapshotRows += n })
	c.rows, c.bytes = c.rows[:0], 0
	return nil
}

// commit sends what is queued and commits the transaction.
func (c *tableCopy) commit(ctx context.Context) error {
	if err := c.flush(ctx); err != nil {
		return err
	}
	if c.tx == nil {
		return nil
	}
	err := c.tx.Commit()
	c.tx, c.inTx = nil, 0
	if err != nil {
		return c.r.tgt.err(err, "snapshot: commit rows of %s", c.t)
	}
	return nil
}

func (c *tableCopy) rollback() {
	if c.tx != nil {
		c.tx.Rollback()
	}
}
