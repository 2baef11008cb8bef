package apply

import (
	"context"
	"fmt"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// valueKind says how a column's string values are sent to the target.
type valueKind uint8

const (
	kindOther valueKind = iota // numbers, dates, ENUM/SET indexes: as decoded
	kindText                   // UTF-8 (or ASCII) text: as a string in the connection's utf8mb4
	kindBytes                  // binary data, BIT, geometry, text in other character sets: as _binary bytes, kept byte for byte
	kindJSON                   // MySQL JSON: as a string (JSON rejects binary strings)
)

// column is what the engine needs to know of a target column.
type column struct {
	name      string
	unsigned  bool // integer column declared UNSIGNED: the binlog decoder may hand over signed values
	generated bool // VIRTUAL or STORED generated: never written
	noMatch   bool // FLOAT or JSON: not compared when matching the row of a table without primary key
	kind      valueKind
}

// tableInfo is a target table's shape. Row events are applied by the target's columns,
// which are in the source's order as long as only the engine changed the table: the
// target is at the same place in the schema's history as the event being applied,
// unlike the source's current schema.
type tableInfo struct {
	db, name string
	cols     []column
	pk       []int // indexes of the primary key's columns in cols; empty if none
	written  []int // indexes of the non-generated columns: those INSERT and UPDATE set
	match    []int // the columns a row is found by: pk, else every written column but noMatch ones
	update   string
	delete   string
}

// qualified returns the table's quoted db.name.
func (t *tableInfo) qualified() string { return quoteTable(t.db, t.name) }

// tableCache holds the shapes of the target tables seen so far; it is emptied whenever
// DDL is applied. Only the stream's goroutine uses it.
type tableCache struct {
	tgt    *target
	tables map[string]*tableInfo // by db + "." + name
}

func newTableCache(tgt *target) *tableCache {
	return &tableCache{tgt: tgt, tables: map[string]*tableInfo{}}
}

func (c *tableCache) reset() { clear(c.tables) }

// get returns the shape of db.name on the target, or nil if the target has no such table.
func (c *tableCache) get(ctx context.Context, db, name string) (*tableInfo, error) {
	key := db + "." + name
	if t, ok := c.tables[key]; ok {
		return t, nil
	}
	t, err := loadTable(ctx, c.tgt, db, name)
	if err != nil || t == nil {
		return nil, err
	}
	c.tables[key] = t
	return t, nil
}

// loadTable reads db.name's columns and primary key from the target's information_schema.
func loadTable(ctx context.Context, tgt *target, db, name string) (*tableInfo, error) {
	rows, err := tgt.db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''), EXTRA
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, name)
	if err != nil {
		return nil, tgt.err(err, "read the columns of %s.%s", db, name)
	}
	defer rows.Close()
	t := &tableInfo{db: db, name: name}
	for rows.Next() {
		var colName, dataType, colType, charset, extra string
		if err := rows.Scan(&colName, &dataType, &colType, &charset, &extra); err != nil {
			return nil, tgt.err(err, "read the columns of %s.%s", db, name)
		}
		t.cols = append(t.cols, newColumn(colName, dataType, colType, charset, extra))
	}
	if err := rows.Err(); err != nil {
		return nil, tgt.err(err, "read the columns of %s.%s", db, name)
	}
	if len(t.cols) == 0 {
		return nil, nil
	}
	if t.pk, err = loadPrimaryKey(ctx, tgt, t); err != nil {
		return nil, err
	}
	t.prepare()
	return t, nil
}

// newColumn derives a column from its information_schema.COLUMNS fields.
func newColumn(name, dataType, colType, charset, extra string) column {
	dataType, extra = strings.ToLower(dataType), strings.ToUpper(extra)
	c := column{name: name, unsigned: strings.Contains(strings.ToLower(colType), "unsigned")}
	c.generated = strings.Contains(extra, "VIRTUAL") || strings.Contains(extra, "STORED") ||
		strings.Contains(extra, "PERSISTENT")
	switch {
	case dataType == "json":
		c.kind, c.noMatch = kindJSON, true
	case dataType == "float":
		c.noMatch = true
	case charset == "" && isBinaryType(dataType):
		c.kind = kindBytes
	case charset == "":
		c.kind = kindOther
	case strings.HasPrefix(charset, "utf8") || charset == "ascii":
		c.kind = kindText
	default:
		c.kind = kindBytes
	}
	return c
}

// isBinaryType reports whether a data type without a character set holds raw bytes.
func isBinaryType(dataType string) bool {
	switch dataType {
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bit",
		"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
		"multipolygon", "geometrycollection":
		return true
	}
	return false
}

// loadPrimaryKey returns the indexes in t.cols of t's primary key columns.
func loadPrimaryKey(ctx context.Context, tgt *target, t *tableInfo) ([]int, error) {
	rows, err := tgt.db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, t.db, t.name)
	if err != nil {
		return nil, tgt.err(err, "read the primary key of %s.%s", t.db, t.name)
	}
	defer rows.Close()
	var pk []int
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, tgt.err(err, "read the primary key of %s.%s", t.db, t.name)
		}
		for i, c := range t.cols {
			if c.name == name {
				pk = append(pk, i)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, tgt.err(err, "read the primary key of %s.%s", t.db, t.name)
	}
	return pk, nil
}

// prepare derives the written and match columns and the UPDATE and DELETE statements.
func (t *tableInfo) prepare() {
	for i, c := range t.cols {
		if !c.generated {
			t.written = append(t.written, i)
		}
	}
	t.match = t.pk
	if len(t.pk) == 0 {
		for _, i := range t.written {
			if !t.cols[i].noMatch {
				t.match = append(t.match, i)
			}
		}
	}
	sets := make([]string, len(t.written))
	for n, i := range t.written {
		sets[n] = quoteIdent(t.cols[i].name) + " = ?"
	}
	where, limit := t.whereClause()
	t.update = "UPDATE " + t.qualified() + " SET " + strings.Join(sets, ", ") + where + limit
	t.delete = "DELETE FROM " + t.qualified() + where + limit
}

// whereClause finds one row: by primary key, or by every match column compared NULL-safe
// with LIMIT 1 for a table without one.
func (t *tableInfo) whereClause() (where, limit string) {
	op := " = ?"
	if len(t.pk) == 0 {
		op, limit = " <=> ?", " LIMIT 1"
	}
	conds := make([]string, len(t.match))
	for n, i := range t.match {
		conds[n] = quoteIdent(t.cols[i].name) + op
	}
	return " WHERE " + strings.Join(conds, " AND "), limit
}

// insertSQL returns an INSERT of rows rows.
func (t *tableInfo) insertSQL(rows int) string {
	names := make([]string, len(t.written))
	for n, i := range t.written {
		names[n] = quoteIdent(t.cols[i].name)
	}
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(t.written)), ", ") + ")"
	var b strings.Builder
	b.Grow(40 + len(t.qualified()) + rows*(len(one)+2))
	b.WriteString("INSERT INTO " + t.qualified() + " (" + strings.Join(names, ", ") + ") VALUES ")
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	return b.String()
}

// values converts a decoded binlog row to the target's parameter values, in cols order.
func (t *tableInfo) values(row []any, types []byte) []any {
	out := make([]any, len(row))
	for i, v := range row {
		out[i] = t.cols[i].value(types[i], v)
	}
	return out
}

// pick returns the values of the columns idx of a converted row, appended to dst.
func pick(dst []any, row []any, idx []int) []any {
	for _, i := range idx {
		dst = append(dst, row[i])
	}
	return dst
}

// value converts one decoded binlog value for the column: the decoder reads integers as
// signed unless the binlog carries signedness, and strings as the column's raw bytes.
func (c column) value(typ byte, v any) any {
	if c.unsigned {
		v = unsigned(typ, v)
	}
	switch x := v.(type) {
	case string:
		if c.kind == kindBytes {
			return []byte(x)
		}
	case []byte:
		if c.kind != kindBytes {
			return string(x)
		}
	}
	return v
}

// unsigned reinterprets a signed integer of binlog type typ as unsigned.
func unsigned(typ byte, v any) any {
	switch x := v.(type) {
	case int8:
		return uint8(x)
	case int16:
		return uint16(x)
	case int32:
		if typ == gomysql.MYSQL_TYPE_INT24 {
			return uint32(x) & 0xFFFFFF
		}
		return uint32(x)
	case int64:
		return uint64(x)
	}
	return v
}

// describeKey renders the match columns' values of a converted row for an error message.
func (t *tableInfo) describeKey(row []any) string {
	parts := make([]string, 0, len(t.match))
	for _, i := range t.match {
		v := row[i]
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		s := fmt.Sprintf("%v", v)
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		parts = append(parts, t.cols[i].name+"="+s)
	}
	return strings.Join(parts, ", ")
}
