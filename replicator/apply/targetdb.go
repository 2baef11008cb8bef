package apply

import (
	"context"
	"database/sql"
)

// tableExists reports whether the target has table t.
func (t *target) tableExists(ctx context.Context, tr tableRef) (bool, error) {
	var n int
	err := t.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
		tr.db, tr.name).Scan(&n)
	if err != nil {
		return false, t.err(err, "look for table %s", tr)
	}
	return n > 0, nil
}

// databaseExists reports whether the target has database db ("" has none).
func (t *target) databaseExists(ctx context.Context, q querier, db string) (bool, error) {
	if db == "" {
		return false, nil
	}
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", db).Scan(&n)
	if err != nil {
		return false, t.err(err, "look for database %s", db)
	}
	return n > 0, nil
}

// tablesIn lists the base tables of db on the target.
func (t *target) tablesIn(ctx context.Context, db string) ([]string, error) {
	rows, err := t.db.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES "+
		"WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'", db)
	if err != nil {
		return nil, t.err(err, "list the tables of %s", db)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, t.err(err, "list the tables of %s", db)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		return nil, t.err(err, "list the tables of %s", db)
	}
	return names, nil
}

// inTx runs fn in a fenced target transaction and commits it; errors of fn are wrapped
// with the step format names.
func (t *target) inTx(ctx context.Context, fn func(*sql.Tx) error, format string, args ...any) error {
	tx, err := t.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return t.err(err, format, args...)
	}
	if err := tx.Commit(); err != nil {
		return t.err(err, format, args...)
	}
	return nil
}

// execIn runs createDB, then stmts with db as the current database, on one connection.
func (t *target) execIn(ctx context.Context, db, createDB string, stmts ...string) error {
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return t.err(err, "connect")
	}
	defer conn.Close()
	for _, q := range append([]string{createDB, "USE " + quoteIdent(db)}, stmts...) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return t.err(err, "%s", shorten(q))
		}
	}
	return nil
}
