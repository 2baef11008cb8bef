package apply

import (
	"context"
	"database/sql"
	"slices"

	"github.com/go-mysql-org/go-mysql/replication"
)

// alreadyApplied are the errors a DDL statement gives when the target already has its
// effect. They are taken as "applied" only until the first event group that changes the
// target after the checkpoint the stream started from: only such a DDL can have been
// applied before a crash without its checkpoint (see the package doc).
var alreadyApplied = map[uint16]string{
	1007: "database exists",
	1008: "database does not exist",
	1050: "table exists",
	1051: "unknown table",
	1054: "unknown column",
	1060: "duplicate column name",
	1061: "duplicate key name",
	1091: "cannot drop: column or key does not exist",
	1146: "table does not exist",
	1826: "duplicate foreign key constraint name",
}

// ddlAction is one statement to run on the target for a source DDL statement.
type ddlAction struct {
	sql      string
	ensureDB string   // a database to create first (with the source's options) if the target lacks it
	tolerate []uint16 // error numbers that mean "already so" at any time
}

// onQuery applies a query event: transaction control, DDL, or (refused) statement-based
// data changes. A statement outside a transaction is an event group of its own.
func (s *stream) onQuery(ctx context.Context, h *replication.EventHeader, e *replication.QueryEvent) error {
	st := classify(string(e.Query))
	if s.group == nil {
		s.group = &group{}
	}
	defaultDB := string(e.Schema)
	var err error
	switch st.kind {
	case stmtBegin:
		s.group.inTxn = true
		return nil
	case stmtCommit, stmtRollback: // a logged ROLLBACK keeps the non-transactional changes logged before it
		return s.endGroup(h)
	case stmtSavepoint:
		return s.savepoint(ctx, string(e.Query))
	case stmtXA:
		return permanentf(nil, "source %s: XA transaction at %s: XA transactions are not supported", s.src.addr, s.at())
	case stmtDML:
		err = s.dmlStatement(h, st, defaultDB)
	case stmtEmpty, stmtIgnored:
		s.log.Debug("statement not replicated", "what", st.what, "at", s.at())
	case stmtSkipped, stmtUnknown:
		s.skipStatement(st, defaultDB, string(e.Query))
	default:
		err = s.onDDL(ctx, st, defaultDB, string(e.Query))
	}
	if err != nil || s.group.inTxn {
		return err
	}
	ddl := s.group.ddl > 0
	if err := s.endGroup(h); err != nil {
		return err
	}
	if ddl { // the DDL committed by itself: record its position right away
		return s.flush(ctx)
	}
	return nil
}

// savepoint runs SAVEPOINT, ROLLBACK TO or RELEASE SAVEPOINT in the target transaction,
// so that a partial rollback the source logged undoes the same rows on the target.
func (s *stream) savepoint(ctx context.Context, query string) error {
	if err := s.ensureTx(ctx); err != nil {
		return err
	}
	if err := s.ins.send(ctx, s); err != nil {
		return err
	}
	if _, err := s.tx.ExecContext(ctx, query); err != nil {
		return s.tgt.err(err, "%q at source %s", query, s.at())
	}
	return nil
}

// dmlStatement refuses a statement-based data change unless it is plainly about tables
// outside the task.
func (s *stream) dmlStatement(h *replication.EventHeader, st statement, defaultDB string) error {
	inScope := len(st.tables) == 0 && (defaultDB == "" || s.scope.database(defaultDB))
	for _, t := range st.tables {
		t = t.qualify(defaultDB)
		inScope = inScope || s.scope.table(t.db, t.name)
	}
	if inScope {
		return s.statementBased(h, st.what)
	}
	s.log.Debug("statement-based change outside the task", "what", st.what, "at", s.at())
	return nil
}

// skipStatement logs a statement the engine does not replicate: at Warn (and counted)
// unless its default database is outside the task.
func (s *stream) skipStatement(st statement, defaultDB, query string) {
	if defaultDB != "" && !s.scope.database(defaultDB) {
		s.log.Debug("statement not replicated", "what", st.what, "at", s.at())
		return
	}
	if len(query) > 200 {
		query = query[:200] + "…"
	}
	s.log.Warn("statement not replicated", "what", st.what, "at", s.at(), "db", defaultDB, "query", query)
	s.progress.update(func(p *Progress) { p.Skipped++ })
}

// onDDL applies a DDL statement that concerns the task. DDL commits by itself on the
// target, so everything before its group is made durable first: the group is then the
// first after the checkpoint should the run stop before its own checkpoint is written.
func (s *stream) onDDL(ctx context.Context, st statement, defaultDB, query string) error {
	actions, err := s.planDDL(ctx, st, defaultDB, query)
	if err != nil || len(actions) == 0 {
		return err
	}
	if s.group.touched {
		return permanentf(nil, "source %s: %s at %s inside a transaction that already changed rows: not supported",
			s.src.addr, st.what, s.at())
	}
	if err := s.flush(ctx); err != nil {
		return err
	}
	if err := s.tgt.checkFence(ctx); err != nil {
		return err
	}
	for _, a := range actions {
		if err := s.execDDL(ctx, a, defaultDB); err != nil {
			return err
		}
	}
	s.tables.reset()
	s.group.touched = true
	s.group.ddl++
	s.log.Info("ddl applied", "what", st.what, "at", s.at(), "statements", len(actions))
	return nil
}

// planDDL decides what a DDL statement becomes on the target: itself, rewritten to the
// replicated tables only (DROP TABLE, RENAME TABLE, DROP DATABASE), or nothing.
func (s *stream) planDDL(ctx context.Context, st statement, defaultDB, query string) ([]ddlAction, error) {
	switch st.kind {
	case stmtTable:
		t := st.tables[0].qualify(defaultDB)
		if len(st.renames) > 0 {
			return s.planRename(t, st.renames[0][1].qualify(defaultDB), query)
		}
		if !s.scope.table(t.db, t.name) {
			return nil, nil
		}
		return []ddlAction{{sql: query, ensureDB: t.db}}, nil
	case stmtDropTable:
		var actions []ddlAction
		for _, t := range st.tables {
			if t = t.qualify(defaultDB); s.scope.table(t.db, t.name) {
				actions = append(actions, ddlAction{sql: "DROP TABLE IF EXISTS " + quoteTable(t.db, t.name)})
			}
		}
		return actions, nil
	case stmtRename:
		var actions []ddlAction
		for _, pair := range st.renames {
			from, to := pair[0].qualify(defaultDB), pair[1].qualify(defaultDB)
			a, err := s.planRename(from, to, "RENAME TABLE "+quoteTable(from.db, from.name)+" TO "+quoteTable(to.db, to.name))
			if err != nil {
				return nil, err
			}
			actions = append(actions, a...)
		}
		return actions, nil
	case stmtCreateDB:
		if !s.scope.database(st.db) {
			return nil, nil
		}
		return []ddlAction{{sql: query, tolerate: []uint16{1007}}}, nil
	case stmtAlterDB:
		db := st.db
		if db == "" {
			db = defaultDB
		}
		if !s.scope.database(db) {
			return nil, nil
		}
		return []ddlAction{{sql: query, ensureDB: db}}, nil
	case stmtDropDB:
		return s.planDropDatabase(ctx, st.db)
	}
	return nil, nil
}

// planRename applies a rename (RENAME TABLE or ALTER TABLE ... RENAME) whose source
// table is replicated; one that brings a table into the task is an error, since its rows
// were never copied.
func (s *stream) planRename(from, to tableRef, sql string) ([]ddlAction, error) {
	fromIn, toIn := s.scope.table(from.db, from.name), s.scope.table(to.db, to.name)
	switch {
	case !fromIn && toIn:
		return nil, permanentf(nil, "source %s: a rename at %s brings table %s (not replicated) into the task as %s: "+
			"its rows were never copied; re-snapshot the task", s.src.addr, s.at(), from, to)
	case !fromIn:
		return nil, nil
	}
	return []ddlAction{{sql: sql, ensureDB: to.db}}, nil
}

// planDropDatabase drops db's replicated tables on the target, and the database itself if
// the task replicates all of it.
func (s *stream) planDropDatabase(ctx context.Context, db string) ([]ddlAction, error) {
	if !s.scope.database(db) {
		return nil, nil
	}
	names, err := s.tgt.tablesIn(ctx, db)
	if err != nil {
		return nil, err
	}
	var actions []ddlAction
	for _, name := range names {
		if s.scope.table(db, name) {
			actions = append(actions, ddlAction{sql: "DROP TABLE IF EXISTS " + quoteTable(db, name)})
		}
	}
	if s.scope.wholeDatabase(db) {
		actions = append(actions, ddlAction{sql: "DROP DATABASE IF EXISTS " + quoteIdent(db)})
	}
	return actions, nil
}

// execDDL runs a on its own target connection, with the statement's default database
// (or the one it creates) as the connection's current database.
func (s *stream) execDDL(ctx context.Context, a ddlAction, defaultDB string) error {
	conn, err := s.tgt.db.Conn(ctx)
	if err != nil {
		return s.tgt.err(err, "connect")
	}
	defer conn.Close()
	if a.ensureDB != "" {
		if err := s.ensureDatabase(ctx, conn, a.ensureDB); err != nil {
			return err
		}
	}
	use := a.ensureDB
	if exists, err := s.tgt.databaseExists(ctx, conn, defaultDB); err != nil {
		return err
	} else if exists {
		use = defaultDB
	}
	if use != "" {
		if _, err := conn.ExecContext(ctx, "USE "+quoteIdent(use)); err != nil {
			return s.tgt.err(err, "USE %s", use)
		}
	}
	_, err = conn.ExecContext(ctx, a.sql)
	if err == nil {
		return nil
	}
	code := errorCode(err)
	if why, ok := alreadyApplied[code]; slices.Contains(a.tolerate, code) || (ok && s.resuming) {
		s.log.Warn("ddl already applied on the target", "at", s.at(), "error", err.Error(), "reason", why, "query", a.sql)
		return nil
	}
	return s.tgt.err(err, "DDL at source %s: %s", s.at(), shorten(a.sql))
}

// ensureDatabase creates db on the target, as the source defines it, if it is missing.
func (s *stream) ensureDatabase(ctx context.Context, conn *sql.Conn, db string) error {
	exists, err := s.tgt.databaseExists(ctx, conn, db)
	if err != nil || exists {
		return err
	}
	create := s.src.createDatabaseSQL(ctx, s.src.db, db)
	if _, err := conn.ExecContext(ctx, create); err != nil {
		return s.tgt.err(err, "create database %s", db)
	}
	return nil
}

// shorten cuts a statement for an error message.
func shorten(q string) string {
	if len(q) > 300 {
		return q[:300] + "…"
	}
	return q
}
