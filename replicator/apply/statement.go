package apply

import (
	"strings"
)

// stmtKind is what a statement of a binlog query event is, as far as replication cares.
type stmtKind uint8

const (
	stmtUnknown   stmtKind = iota // not recognised: logged at Warn, counted as skipped
	stmtEmpty                     // nothing but comments (MariaDB's dummy events)
	stmtBegin                     // BEGIN
	stmtCommit                    // COMMIT
	stmtRollback                  // ROLLBACK (of a transaction that touched non-transactional tables)
	stmtSavepoint                 // SAVEPOINT, ROLLBACK TO, RELEASE SAVEPOINT: run inside the target transaction
	stmtXA                        // XA ...: not supported
	stmtTable                     // DDL on one table: CREATE/ALTER/TRUNCATE TABLE, CREATE/DROP INDEX
	stmtDropTable                 // DROP TABLE of one or more tables
	stmtRename                    // RENAME TABLE a TO b, ...
	stmtCreateDB                  // CREATE DATABASE
	stmtAlterDB                   // ALTER DATABASE
	stmtDropDB                    // DROP DATABASE
	stmtDML                       // statement-based INSERT/UPDATE/DELETE/REPLACE/LOAD
	stmtIgnored                   // accounts, privileges, FLUSH, ANALYZE, temporary tables: never replicated
	stmtSkipped                   // views, triggers, routines, events, sequences: not replicated, logged
)

// tableRef is a table named by a statement; db is empty when the name was unqualified.
type tableRef struct{ db, name string }

// qualify fills in the default database.
func (r tableRef) qualify(defaultDB string) tableRef {
	if r.db == "" {
		r.db = defaultDB
	}
	return r
}

func (r tableRef) String() string { return r.db + "." + r.name }

// statement is a classified query event.
type statement struct {
	kind    stmtKind
	what    string        // a short name of the statement for logs, e.g. "CREATE VIEW"
	tables  []tableRef    // stmtTable: the table (first); stmtDropTable, stmtDML: every table named
	renames [][2]tableRef // stmtRename, and stmtTable for ALTER TABLE ... RENAME TO
	db      string        // stmtCreateDB, stmtAlterDB, stmtDropDB: the database ("" = the default)
}

// classify parses just enough of a statement to know its kind and the tables or database
// it names. It never fails: what it does not recognise is stmtUnknown.
func classify(query string) statement {
	p := &stmtParser{toks: tokenize(query)}
	if len(p.toks) == 0 {
		return statement{kind: stmtEmpty}
	}
	switch first := p.word(); first {
	case "BEGIN":
		return statement{kind: stmtBegin, what: first}
	case "COMMIT":
		return statement{kind: stmtCommit, what: first}
	case "ROLLBACK":
		if p.peekWord() == "WORK" {
			p.next()
		}
		if p.peekWord() == "TO" {
			return statement{kind: stmtSavepoint, what: "ROLLBACK TO SAVEPOINT"}
		}
		return statement{kind: stmtRollback, what: first}
	case "SAVEPOINT", "RELEASE":
		return statement{kind: stmtSavepoint, what: first}
	case "XA":
		return statement{kind: stmtXA, what: "XA"}
	case "CREATE":
		return p.create()
	case "ALTER":
		return p.alter()
	case "DROP":
		return p.drop()
	case "RENAME":
		return p.rename()
	case "TRUNCATE":
		p.skipWords("TABLE")
		return p.oneTable(stmtTable, "TRUNCATE TABLE")
	case "INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD":
		return p.dml(first)
	case "GRANT", "REVOKE", "SET", "FLUSH", "ANALYZE", "OPTIMIZE", "REPAIR", "CHECK", "INSTALL",
		"UNINSTALL", "RESET", "PURGE", "CHANGE", "KILL", "SHUTDOWN", "DO", "SELECT", "LOCK", "UNLOCK":
		return statement{kind: stmtIgnored, what: first}
	}
	return statement{kind: stmtUnknown, what: p.toks[0].text}
}

// create classifies CREATE ...
func (p *stmtParser) create() statement {
	p.skipWords("OR", "REPLACE")
	temporary := p.skipWords("TEMPORARY")
	switch w := p.word(); w {
	case "TABLE":
		if temporary {
			return statement{kind: stmtIgnored, what: "CREATE TEMPORARY TABLE"}
		}
		p.skipWords("IF", "NOT", "EXISTS")
		return p.oneTable(stmtTable, "CREATE TABLE")
	case "DATABASE", "SCHEMA":
		p.skipWords("IF", "NOT", "EXISTS")
		return statement{kind: stmtCreateDB, what: "CREATE DATABASE", db: p.ident()}
	case "UNIQUE", "FULLTEXT", "SPATIAL", "INDEX":
		return p.indexOn("CREATE INDEX")
	case "USER", "ROLE", "SERVER":
		return statement{kind: stmtIgnored, what: "CREATE " + w}
	default: // VIEW, TRIGGER, PROCEDURE, FUNCTION, EVENT, SEQUENCE, DEFINER=..., ALGORITHM=...
		return statement{kind: stmtSkipped, what: "CREATE " + w}
	}
}

// alter classifies ALTER ...
func (p *stmtParser) alter() statement {
	p.skipWords("ONLINE", "OFFLINE", "IGNORE")
	switch w := p.word(); w {
	case "TABLE":
		p.skipWords("IF", "EXISTS")
		st := p.oneTable(stmtTable, "ALTER TABLE")
		if st.kind == stmtTable {
			if to, ok := p.alterRename(); ok {
				st.renames = [][2]tableRef{{st.tables[0], to}}
			}
		}
		return st
	case "DATABASE", "SCHEMA":
		db := ""
		if t := p.peek(); t.quoted || !isKeyword(t.text) {
			db = p.ident()
		}
		return statement{kind: stmtAlterDB, what: "ALTER DATABASE", db: db}
	case "USER", "SERVER", "ROLE":
		return statement{kind: stmtIgnored, what: "ALTER " + w}
	default:
		return statement{kind: stmtSkipped, what: "ALTER " + w}
	}
}

// drop classifies DROP ...
func (p *stmtParser) drop() statement {
	temporary := p.skipWords("TEMPORARY")
	switch w := p.word(); w {
	case "TABLE", "TABLES":
		if temporary {
			return statement{kind: stmtIgnored, what: "DROP TEMPORARY TABLE"}
		}
		p.skipWords("IF", "EXISTS")
		st := statement{kind: stmtDropTable, what: "DROP TABLE"}
		for {
			r, ok := p.tableName()
			if !ok {
				return statement{kind: stmtUnknown, what: "DROP TABLE"}
			}
			st.tables = append(st.tables, r)
			if !p.punct(",") {
				return st
			}
		}
	case "DATABASE", "SCHEMA":
		p.skipWords("IF", "EXISTS")
		return statement{kind: stmtDropDB, what: "DROP DATABASE", db: p.ident()}
	case "INDEX":
		return p.indexOn("DROP INDEX")
	case "USER", "ROLE", "SERVER":
		return statement{kind: stmtIgnored, what: "DROP " + w}
	default:
		return statement{kind: stmtSkipped, what: "DROP " + w}
	}
}

// rename classifies RENAME TABLE a TO b [, c TO d] (and RENAME USER).
func (p *stmtParser) rename() statement {
	switch w := p.word(); w {
	case "TABLE", "TABLES":
		st := statement{kind: stmtRename, what: "RENAME TABLE"}
		for {
			from, ok1 := p.tableName()
			p.skipWords("TO")
			to, ok2 := p.tableName()
			if !ok1 || !ok2 {
				return statement{kind: stmtUnknown, what: "RENAME TABLE"}
			}
			st.renames = append(st.renames, [2]tableRef{from, to})
			if !p.punct(",") {
				return st
			}
		}
	default:
		return statement{kind: stmtIgnored, what: "RENAME " + w}
	}
}

// indexOn parses the rest of CREATE [UNIQUE] INDEX name ON table / DROP INDEX name ON table.
func (p *stmtParser) indexOn(what string) statement {
	for !p.done() && !(p.peekWord() == "ON" && !p.peek().quoted) {
		p.next()
	}
	if !p.skipWords("ON") {
		return statement{kind: stmtUnknown, what: what}
	}
	return p.oneTable(stmtTable, what)
}

// dml classifies a statement-based data change and collects the table after INTO, FROM
// or UPDATE (best effort: joins and subqueries name more tables than it finds).
func (p *stmtParser) dml(first string) statement {
	st := statement{kind: stmtDML, what: first}
	if first == "UPDATE" {
		p.skipWords("LOW_PRIORITY", "IGNORE")
		if r, ok := p.tableName(); ok {
			st.tables = append(st.tables, r)
		}
		return st
	}
	for !p.done() {
		if w := p.peekWord(); (w == "INTO" || w == "FROM") && !p.peek().quoted {
			p.next()
			if r, ok := p.tableName(); ok {
				st.tables = append(st.tables, r)
			}
			return st
		}
		p.next()
	}
	return st
}

// oneTable finishes a statement about the table name that comes next.
func (p *stmtParser) oneTable(kind stmtKind, what string) statement {
	r, ok := p.tableName()
	if !ok {
		return statement{kind: stmtUnknown, what: what}
	}
	return statement{kind: kind, what: what, tables: []tableRef{r}}
}

// alterRename finds a top-level RENAME [TO|AS] name clause of ALTER TABLE (not RENAME
// COLUMN, INDEX, KEY or CONSTRAINT).
func (p *stmtParser) alterRename() (tableRef, bool) {
	depth := 0
	for !p.done() {
		t := p.next()
		switch {
		case t.kind == tokPunct && t.text == "(":
			depth++
		case t.kind == tokPunct && t.text == ")":
			depth--
		case depth == 0 && t.kind == tokWord && !t.quoted && strings.EqualFold(t.text, "RENAME"):
			switch p.peekWord() {
			case "COLUMN", "INDEX", "KEY", "CONSTRAINT":
				continue
			}
			p.skipWords("TO")
			p.skipWords("AS")
			return p.tableName()
		}
	}
	return tableRef{}, false
}
