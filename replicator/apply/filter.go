package apply

import (
	"errors"
	"strings"
)

// CheckpointDatabase and CheckpointTable name where the checkpoint rows live on the target.
const (
	CheckpointDatabase = "paddock"
	CheckpointTable    = "paddock_checkpoint"
)

// systemSchemas are never replicated, whatever the filters say.
var systemSchemas = map[string]bool{
	"mysql": true, "information_schema": true, "performance_schema": true, "sys": true,
	CheckpointDatabase: true,
}

// pattern is a parsed "db.table" glob.
type pattern struct{ db, table string }

// parsePattern parses a "db.table" glob: exactly one dot, both sides non-empty, no
// whitespace or backquotes. Names are matched case-sensitively, as MariaDB on Linux does.
func parsePattern(s string) (pattern, error) {
	db, table, ok := strings.Cut(s, ".")
	switch {
	case !ok:
		return pattern{}, errors.New("want db.table, e.g. shop.* or app.user_?")
	case strings.Contains(table, "."):
		return pattern{}, errors.New("more than one dot: want db.table")
	case db == "" || table == "":
		return pattern{}, errors.New("empty database or table part: want db.table")
	case strings.ContainsAny(s, " \t\r\n`"):
		return pattern{}, errors.New("contains whitespace or a backquote")
	}
	return pattern{db: db, table: table}, nil
}

// glob reports whether name matches pat, where * matches any run of characters and ?
// exactly one.
func glob(pat, name string) bool {
	p, n := []rune(pat), []rune(name)
	i, j := 0, 0
	star, mark := -1, 0 // the last * seen in p, and the end of what it matches in n
	for j < len(n) {
		switch {
		case i < len(p) && p[i] == '*':
			star, mark = i, j
			i++
		case i < len(p) && (p[i] == '?' || p[i] == n[j]):
			i, j = i+1, j+1
		case star >= 0: // let the last * take one more character
			mark++
			i, j = star+1, mark
		default:
			return false
		}
	}
	for i < len(p) && p[i] == '*' {
		i++
	}
	return i == len(p)
}

// scope decides which tables and databases a task replicates.
type scope struct{ include, exclude []pattern }

// newScope builds the scope of validated include and exclude globs.
func newScope(include, exclude []string) scope {
	var s scope
	for _, g := range include {
		if p, err := parsePattern(g); err == nil {
			s.include = append(s.include, p)
		}
	}
	for _, g := range exclude {
		if p, err := parsePattern(g); err == nil {
			s.exclude = append(s.exclude, p)
		}
	}
	return s
}

// table reports whether db.name is replicated.
func (s scope) table(db, name string) bool {
	if systemSchemas[db] {
		return false
	}
	for _, p := range s.exclude {
		if glob(p.db, db) && glob(p.table, name) {
			return false
		}
	}
	if len(s.include) == 0 {
		return true
	}
	for _, p := range s.include {
		if glob(p.db, db) && glob(p.table, name) {
			return true
		}
	}
	return false
}

// database reports whether db may hold replicated tables: database statements (CREATE,
// ALTER DATABASE) on it are applied.
func (s scope) database(db string) bool {
	if systemSchemas[db] {
		return false
	}
	for _, p := range s.exclude {
		if p.table == "*" && glob(p.db, db) {
			return false
		}
	}
	if len(s.include) == 0 {
		return true
	}
	for _, p := range s.include {
		if glob(p.db, db) {
			return true
		}
	}
	return false
}

// wholeDatabase reports whether every table of db is replicated, so that DROP DATABASE
// may drop the target's database itself rather than only its replicated tables.
func (s scope) wholeDatabase(db string) bool {
	if !s.database(db) {
		return false
	}
	for _, p := range s.exclude {
		if glob(p.db, db) {
			return false
		}
	}
	if len(s.include) == 0 {
		return true
	}
	for _, p := range s.include {
		if p.table == "*" && glob(p.db, db) {
			return true
		}
	}
	return false
}
