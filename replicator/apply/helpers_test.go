package apply

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/paddock/paddock/internal/testutil"
)

// pair is a replication source (binlog ROW) and a target, shared by the tests of a group.
type pair struct {
	src, dst     *testutil.MariaDB
	srcDB, dstDB *sql.DB
}

// startPair starts a source and a target for tb.
func startPair(tb testing.TB, srcOpts testutil.MariaDBOptions) *pair {
	tb.Helper()
	srcOpts.Binlog = true
	p := &pair{src: testutil.StartMariaDB(tb, srcOpts), dst: testutil.StartMariaDB(tb, testutil.MariaDBOptions{})}
	p.srcDB, p.dstDB = p.src.Open(tb, ""), p.dst.Open(tb, "")
	return p
}

// serverIDs hands out replica server ids unique within the test binary.
var serverIDs atomic.Uint32

// config returns a task configuration between the pair's servers.
func (p *pair) config(task string, epoch int64, include ...string) Config {
	return Config{Task: task, Source: p.src.DSN(""), Target: p.dst.DSN(""), Include: include,
		ServerID: 1000 + serverIDs.Add(1), Epoch: epoch, Logger: testLogger()}
}

// testLogger logs at Warn and above to stderr, so that a failing test shows the trouble.
func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// exec runs statements on db, failing tb on error.
func exec(tb testing.TB, db *sql.DB, stmts ...string) {
	tb.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
}

// txn runs statements in one transaction on db.
func txn(tb testing.TB, db *sql.DB, stmts ...string) {
	tb.Helper()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := tx.Exec(q); err != nil {
			tx.Rollback()
			tb.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// running is a Run in a goroutine.
type running struct {
	cfg     Config
	tracker *Tracker
	cancel  context.CancelFunc
	done    chan struct{}
	err     error // set when done is closed

	mu      sync.Mutex
	commits []Position // every onCommit, in order
}

// startRun runs cfg until stopped or the test ends.
func startRun(tb testing.TB, cfg Config) *running {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cfg: cfg, tracker: &Tracker{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = Run(ctx, cfg, r.onCommit, r.tracker)
	}()
	tb.Cleanup(func() { r.stop() })
	return r
}

func (r *running) onCommit(p Position) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits = append(r.commits, p)
}

// commitCount returns how many commits the run reported.
func (r *running) commitCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.commits)
}

// stop cancels the run and returns its error (nil when it ended by the cancel).
func (r *running) stop() error {
	r.cancel()
	<-r.done
	return r.err
}

// wait waits for the run to end by itself and returns its error.
func (r *running) wait(tb testing.TB, timeout time.Duration) error {
	tb.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(timeout):
		tb.Fatalf("task %s still runs after %v: %+v", r.cfg.Task, timeout, r.tracker.Snapshot())
		return nil
	}
}

// sourcePos returns the source's current binlog end.
func (p *pair) sourcePos(tb testing.TB) gomysql.Position {
	tb.Helper()
	var file string
	var pos uint32
	var doDB, ignoreDB sql.NullString
	if err := p.srcDB.QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, &doDB, &ignoreDB); err != nil {
		tb.Fatal(err)
	}
	return gomysql.Position{Name: file, Pos: pos}
}

// reached reports whether the run's durable position is at or after want.
func (r *running) reached(want gomysql.Position) bool {
	got := r.tracker.Snapshot().Position
	return got.File != "" && gomysql.Position{Name: got.File, Pos: got.Pos}.Compare(want) >= 0
}

// catchUp waits until the run has made the source's current end durable.
func (p *pair) catchUp(tb testing.TB, r *running) {
	tb.Helper()
	want := p.sourcePos(tb)
	r.waitUntil(tb, fmt.Sprintf("the source's end %v", want), func() bool { return r.reached(want) })
}

// waitUntil waits up to 30 s for cond, failing tb at once if the run ends first.
func (r *running) waitUntil(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	ended := false
	ok := testutil.WaitFor(30*time.Second, 2*time.Millisecond, func() bool {
		select {
		case <-r.done:
			ended = true
		default:
		}
		return ended || cond()
	})
	switch {
	case ended && !cond():
		tb.Fatalf("task %s ended before reaching %s: %v", r.cfg.Task, what, r.err)
	case !ok:
		tb.Fatalf("after 30s: task %s has not reached %s: %+v", r.cfg.Task, what, r.tracker.Snapshot())
	}
}

// tables lists the base tables of db.
func tables(tb testing.TB, db *sql.DB, schema string) []string {
	tb.Helper()
	rows, err := db.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? "+
		"AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", schema)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			tb.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

// tableSum returns a table's row count and CHECKSUM TABLE.
func tableSum(tb testing.TB, db *sql.DB, schema, table string) (count int64, sum sql.NullInt64) {
	tb.Helper()
	qt := quoteTable(schema, table)
	if err := db.QueryRow("SELECT COUNT(*) FROM " + qt).Scan(&count); err != nil {
		tb.Fatal(err)
	}
	var name string
	if err := db.QueryRow("CHECKSUM TABLE "+qt).Scan(&name, &sum); err != nil {
		tb.Fatal(err)
	}
	return count, sum
}

// columnsOf returns a table's column definitions, for comparing schemas.
func columnsOf(tb testing.TB, db *sql.DB, schema, table string) string {
	tb.Helper()
	var cols []string
	rows, err := db.Query("SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "+
		"WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", schema, table)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			tb.Fatal(err)
		}
		cols = append(cols, n+" "+t)
	}
	return strings.Join(cols, ", ")
}

// sameDatabase fails tb unless schema has the same tables, columns, row counts and
// checksums on the source and the target.
func (p *pair) sameDatabase(tb testing.TB, schema string) {
	tb.Helper()
	srcTables, dstTables := tables(tb, p.srcDB, schema), tables(tb, p.dstDB, schema)
	if strings.Join(srcTables, ",") != strings.Join(dstTables, ",") {
		tb.Fatalf("%s: source tables %v, target tables %v", schema, srcTables, dstTables)
	}
	for _, table := range srcTables {
		if s, d := columnsOf(tb, p.srcDB, schema, table), columnsOf(tb, p.dstDB, schema, table); s != d {
			tb.Fatalf("%s.%s columns differ:\nsource %s\ntarget %s", schema, table, s, d)
		}
		sc, ss := tableSum(tb, p.srcDB, schema, table)
		dc, ds := tableSum(tb, p.dstDB, schema, table)
		if sc != dc || ss != ds {
			tb.Fatalf("%s.%s differs: source %d rows checksum %v, target %d rows checksum %v",
				schema, table, sc, ss.Int64, dc, ds.Int64)
		}
	}
}

// noLeakedGoroutines fails tb if goroutines of the engine or go-mysql still run.
func noLeakedGoroutines(tb testing.TB) {
	tb.Helper()
	var stacks string
	ok := testutil.WaitFor(5*time.Second, 20*time.Millisecond, func() bool {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		return !strings.Contains(stacks, "go-mysql-org/go-mysql") && !strings.Contains(stacks, "replicator/apply.pump") &&
			!strings.Contains(stacks, "replicator/apply.(*stream)")
	})
	if !ok {
		tb.Fatalf("goroutines of the engine outlive its runs:\n%s", stacks)
	}
}

// row counts of one table, for quick assertions.
func count(tb testing.TB, db *sql.DB, table string) int {
	tb.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// errContains fails tb unless err's text contains every part.
func errContains(tb testing.TB, err error, parts ...string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("no error, want one containing %q", parts)
	}
	for _, part := range parts {
		if !strings.Contains(err.Error(), part) {
			tb.Fatalf("error %q lacks %q", err, part)
		}
	}
}
