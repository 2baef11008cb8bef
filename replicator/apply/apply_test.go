package apply

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// TestReplication runs the scenarios that share one source and one target, each in a
// database of its own, in parallel; then it checks that no run left a goroutine behind.
func TestReplication(t *testing.T) {
	p := startPair(t, testutil.MariaDBOptions{})
	t.Run("group", func(t *testing.T) {
		for name, fn := range map[string]func(*testing.T, *pair){
			"Workload":           testWorkload,
			"SnapshotThenStream": testSnapshotThenStream,
			"Restart":            testRestart,
			"DDLReapplied":       testDDLReapplied,
			"Filters":            testFilters,
			"SourceErrors":       testSourceErrors,
			"TargetErrors":       testTargetErrors,
			"Divergence":         testDivergence,
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fn(t, p)
			})
		}
	})
	noLeakedGoroutines(t)
}

// t1DDL is a table with most column types, a generated column and a secondary key.
const t1DDL = `CREATE TABLE wl.t1 (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(50) NOT NULL,
  amount DECIMAL(12,2), created DATETIME(6), ts TIMESTAMP(3) NULL, day DATE, tm TIME(2), yr YEAR,
  data BLOB, bin VARBINARY(16),
  big BIGINT UNSIGNED, tiny TINYINT UNSIGNED, small SMALLINT, med MEDIUMINT UNSIGNED, neg INT,
  f FLOAT, d DOUBLE, e ENUM('a','b','c'), s SET('x','y','z'), b BIT(10), j JSON,
  utf VARCHAR(20) CHARACTER SET utf8mb4, lat VARCHAR(20) CHARACTER SET latin1, txt TEXT,
  g INT GENERATED ALWAYS AS (small + 1) VIRTUAL,
  KEY (name))`

// t1Row returns an INSERT of a t1 row whose values depend on i (some NULL).
func t1Row(i int) string {
	if i%7 == 0 {
		return fmt.Sprintf("INSERT INTO wl.t1 (name) VALUES ('null-%d')", i)
	}
	return fmt.Sprintf(`INSERT INTO wl.t1 (name, amount, created, ts, day, tm, yr, data, bin, big, tiny, small, med, neg,
  f, d, e, s, b, j, utf, lat, txt) VALUES ('n%d', %d.67, '2024-01-02 03:04:05.%06d', '2024-05-06 07:08:09.123',
  '2024-02-29', '12:34:56.78', %d, x'00FF10%02X', x'DEADBEEF', 18446744073709551615 - %d, 255, -32768 + %d,
  16777215, -2147483648, 1.1 * %d, 3.141592653589793 * %d, 'b', 'x,z', b'1010101010', '{"k": [1, 2.5, "s%d"]}',
  'héllo ☃ 🎉 %d', 'café', REPEAT('t', %d))`,
		i, i*1000, i, 1990+i%50, i%256, i, i, i, i, i, i, 100+i)
}

// testWorkload replicates inserts, updates, deletes and DDL over several tables,
// multi-statement transactions, a savepoint rollback and a table without a primary key.
func testWorkload(t *testing.T, p *pair) {
	exec(t, p.srcDB, "CREATE DATABASE wl", t1DDL,
		"CREATE TABLE wl.t2 (a INT NOT NULL, b INT NOT NULL, note VARCHAR(30), PRIMARY KEY (a, b))",
		"CREATE TABLE wl.nopk (x INT, y VARCHAR(10), f FLOAT, z TEXT)")
	for i := 1; i <= 10; i++ {
		exec(t, p.srcDB, t1Row(i))
	}
	r := startRun(t, p.config("workload", 1, "wl.*"))
	p.catchUp(t, r)
	p.sameDatabase(t, "wl")

	for i := 11; i <= 60; i++ {
		exec(t, p.srcDB, t1Row(i))
	}
	exec(t, p.srcDB,
		"INSERT INTO wl.t2 (a, b, note) SELECT seq, seq % 3, CONCAT('s', seq) FROM wl.seq_1_to_3000", // one big rows event stream
		"UPDATE wl.t1 SET name = CONCAT(name, '-u'), amount = amount + 1, lat = 'naïve' WHERE id % 3 = 0",
		"UPDATE wl.t2 SET a = a + 10000 WHERE b = 1 AND a < 100", // primary key changes
		"DELETE FROM wl.t1 WHERE id % 5 = 0",
		"DELETE FROM wl.t2 WHERE a BETWEEN 200 AND 400",
		"INSERT INTO wl.nopk VALUES (1, 'x', 1.5, 'dup'), (1, 'x', 1.5, 'dup'), (2, 'y', NULL, NULL), (3, NULL, 0.1, 'f')",
		"DELETE FROM wl.nopk WHERE x = 1 LIMIT 1",
		"UPDATE wl.nopk SET y = 'z' WHERE x = 2",
		"UPDATE wl.nopk SET z = 'float row' WHERE x = 3")
	txn(t, p.srcDB,
		"INSERT INTO wl.t1 (name) VALUES ('in-txn')",
		"UPDATE wl.t2 SET note = 'txn' WHERE a < 50",
		"DELETE FROM wl.nopk WHERE x = 2",
		"INSERT INTO wl.t2 (a, b) VALUES (90001, 1)")
	exec(t, p.srcDB, "CREATE TABLE wl.my (id INT PRIMARY KEY, v INT) ENGINE=MyISAM",
		"CREATE TABLE wl.ctas SELECT id, name, amount FROM wl.t1") // DDL and rows in one transaction
	txn(t, p.srcDB, // a non-transactional change inside a transaction is logged as a group of its own
		"INSERT INTO wl.t2 (a, b) VALUES (90002, 1)",
		"INSERT INTO wl.my VALUES (1, 1)",
		"SAVEPOINT sp",
		"INSERT INTO wl.t2 (a, b) VALUES (90003, 1)",
		"ROLLBACK TO SAVEPOINT sp",
		"INSERT INTO wl.t2 (a, b) VALUES (90004, 1)",
		"UPDATE wl.my SET v = 2")
	exec(t, p.srcDB,
		"ALTER TABLE wl.t1 ADD COLUMN extra INT NOT NULL DEFAULT 7",
		"INSERT INTO wl.t1 (name, extra) VALUES ('after-alter', 42)",
		"UPDATE wl.t1 SET extra = id WHERE id % 4 = 0",
		"CREATE TABLE wl.t3 (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO wl.t3 VALUES (1, 'one'), (2, 'two')",
		"RENAME TABLE wl.t3 TO wl.t4",
		"INSERT INTO wl.t4 VALUES (3, 'three')",
		"CREATE INDEX v_idx ON wl.t4 (v(10))",
		"CREATE TABLE wl.gone (id INT PRIMARY KEY)",
		"INSERT INTO wl.gone VALUES (1)",
		"DROP TABLE wl.gone",
		"CREATE TABLE wl.tr (id INT PRIMARY KEY)",
		"INSERT INTO wl.tr VALUES (1), (2)",
		"TRUNCATE TABLE wl.tr",
		"INSERT INTO wl.tr VALUES (3)")
	p.catchUp(t, r)
	p.sameDatabase(t, "wl")

	pr := r.tracker.Snapshot()
	if pr.Transactions < 70 || pr.Rows < 3000 || pr.DDL < 10 || pr.LastError != "" || pr.Snapshotting {
		t.Errorf("progress after the workload: %+v", pr)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	cp, found, err := ReadCheckpoint(context.Background(), p.dst.DSN(""), "workload")
	if err != nil || !found || !cp.sameStream(r.tracker.Snapshot().Position) || cp.OwnerEpoch != 1 {
		t.Fatalf("checkpoint %+v (found %v, err %v), progress position %+v", cp, found, err, r.tracker.Snapshot().Position)
	}
	if cp.GTID == "" || cp.Time.IsZero() {
		t.Errorf("checkpoint without GTID or time: %+v", cp)
	}
}

// writer changes the rows of tables a and b of db in small transactions until stopped.
type writer struct {
	p    *pair
	db   string
	stop chan struct{}
	done chan struct{}
	ops  int
	err  error
}

func startWriter(p *pair, db string) *writer {
	w := &writer{p: p, db: db, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *writer) run() {
	defer close(w.done)
	rng := rand.New(rand.NewPCG(1, 2))
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		table := []string{"a", "b"}[rng.IntN(2)]
		id := rng.IntN(30000) + 1
		q := []string{
			fmt.Sprintf("INSERT INTO %s.%s (v, pad) VALUES (%d, 'w')", w.db, table, id),
			fmt.Sprintf("UPDATE %s.%s SET v = v + 1, pad = 'u' WHERE id = %d", w.db, table, id),
			fmt.Sprintf("DELETE FROM %s.%s WHERE id = %d", w.db, table, id),
		}[rng.IntN(3)]
		if _, err := w.p.srcDB.Exec(q); err != nil {
			w.err = fmt.Errorf("%s: %w", q, err)
			return
		}
		w.ops++
	}
}

// finish stops the writer and fails t if it failed; it returns the number of changes.
func (w *writer) finish(t *testing.T) int {
	t.Helper()
	close(w.stop)
	<-w.done
	if w.err != nil {
		t.Fatal(w.err)
	}
	return w.ops
}

// testSnapshotThenStream copies pre-existing rows while a writer keeps changing them, and
// then streams: the hand-over at the snapshot's position loses and repeats nothing.
func testSnapshotThenStream(t *testing.T, p *pair) {
	exec(t, p.srcDB, "CREATE DATABASE snap",
		"CREATE TABLE snap.a (id INT AUTO_INCREMENT PRIMARY KEY, v INT, pad VARCHAR(100))",
		"CREATE TABLE snap.b (id INT AUTO_INCREMENT PRIMARY KEY, v INT, pad VARCHAR(100))",
		"INSERT INTO snap.a (v, pad) SELECT seq, REPEAT('p', 50) FROM snap.seq_1_to_20000",
		"INSERT INTO snap.b (v, pad) SELECT seq, REPEAT('q', 50) FROM snap.seq_1_to_5000")
	w := startWriter(p, "snap")
	r := startRun(t, p.config("snapshot", 1, "snap.*"))
	r.waitUntil(t, "the end of the snapshot and 20 commits", func() bool {
		return !r.tracker.Snapshot().Position.IsZero() && r.commitCount() > 20
	})
	ops := w.finish(t)
	p.catchUp(t, r)
	p.sameDatabase(t, "snap")
	pr := r.tracker.Snapshot()
	if pr.SnapshotRows < 20000 || pr.Transactions == 0 || ops == 0 {
		t.Errorf("snapshot rows %d, streamed transactions %d, writer changes %d", pr.SnapshotRows, pr.Transactions, ops)
	}
}

// testRestart stops and restarts a task with writes in between, and interrupts it
// repeatedly under a steady write load: nothing is lost or applied twice.
func testRestart(t *testing.T, p *pair) {
	exec(t, p.srcDB, "CREATE DATABASE rs",
		"CREATE TABLE rs.a (id INT AUTO_INCREMENT PRIMARY KEY, v INT, pad VARCHAR(100))",
		"CREATE TABLE rs.b (id INT AUTO_INCREMENT PRIMARY KEY, v INT, pad VARCHAR(100))",
		"INSERT INTO rs.a (v) SELECT seq FROM rs.seq_1_to_100")
	cfg := p.config("restart", 1, "rs.*")
	r := startRun(t, cfg)
	p.catchUp(t, r)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	exec(t, p.srcDB, "INSERT INTO rs.a (v) SELECT seq FROM rs.seq_1_to_100", "UPDATE rs.a SET v = -v WHERE id % 2 = 0",
		"DELETE FROM rs.a WHERE id % 9 = 0", "INSERT INTO rs.b (v) VALUES (1), (2)")
	r = startRun(t, cfg)
	p.catchUp(t, r)
	p.sameDatabase(t, "rs")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	w := startWriter(p, "rs")
	for i := range 4 {
		r = startRun(t, cfg)
		r.waitUntil(t, fmt.Sprintf("%d commits", 5*(i+1)), func() bool { return r.commitCount() > 5*(i+1) })
		if err := r.stop(); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	w.finish(t)
	r = startRun(t, cfg)
	p.catchUp(t, r)
	p.sameDatabase(t, "rs")
}

// testDDLReapplied simulates a crash between a DDL and its checkpoint: the target already
// has the column when the run resumes before the ALTER. That is accepted for the first
// group after the checkpoint and refused anywhere else.
func testDDLReapplied(t *testing.T, p *pair) {
	exec(t, p.srcDB, "CREATE DATABASE ddl", "CREATE TABLE ddl.t (id INT PRIMARY KEY)", "INSERT INTO ddl.t VALUES (1), (2)")
	cfg := p.config("ddl-reapply", 1, "ddl.*")
	r := startRun(t, cfg)
	p.catchUp(t, r)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	exec(t, p.srcDB, "ALTER TABLE ddl.t ADD COLUMN c INT DEFAULT 5")
	exec(t, p.dstDB, "ALTER TABLE ddl.t ADD COLUMN c INT DEFAULT 5") // applied before the "crash"
	exec(t, p.srcDB, "INSERT INTO ddl.t VALUES (3, 33)")
	r = startRun(t, cfg)
	p.catchUp(t, r)
	p.sameDatabase(t, "ddl")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	r = startRun(t, cfg)
	exec(t, p.srcDB, "INSERT INTO ddl.t VALUES (4, 44)")
	p.catchUp(t, r)
	exec(t, p.dstDB, "ALTER TABLE ddl.t ADD COLUMN d INT") // the target is changed by hand
	exec(t, p.srcDB, "ALTER TABLE ddl.t ADD COLUMN d INT")
	err := r.wait(t, 30*time.Second)
	errContains(t, err, "DDL at source bin.", "ALTER TABLE ddl.t ADD COLUMN d INT", "Duplicate column name 'd'")
	if Retryable(err) {
		t.Errorf("divergent DDL error is retryable: %v", err)
	}
	if got := r.tracker.Snapshot().LastError; got != err.Error() {
		t.Errorf("LastError %q, want %q", got, err)
	}
}

// TestFencing takes a running task over with a higher epoch: the old run is deposed and
// commits nothing more, and a run with the old epoch is refused at once. It has a source
// of its own, so that the old run is quiet (no other test's transactions to skip) when
// the new one takes over, and the count of its commits is exact.
func TestFencing(t *testing.T) {
	t.Parallel()
	p := startPair(t, testutil.MariaDBOptions{})
	exec(t, p.srcDB, "CREATE DATABASE fence", "CREATE TABLE fence.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
		"INSERT INTO fence.t (v) VALUES (1), (2)")
	a := startRun(t, p.config("fence", 1, "fence.*"))
	p.catchUp(t, a)
	b := startRun(t, p.config("fence", 2, "fence.*"))
	b.waitUntil(t, "ownership", func() bool {
		cp, _, err := ReadCheckpoint(context.Background(), p.dst.DSN(""), "fence")
		return err == nil && cp.OwnerEpoch == 2
	})
	commitsOfA := a.commitCount()
	exec(t, p.srcDB, "INSERT INTO fence.t (v) VALUES (3), (4)", "UPDATE fence.t SET v = v * 10")
	err := a.wait(t, 30*time.Second)
	if !errors.Is(err, ErrDeposed) || Retryable(err) {
		t.Fatalf("epoch 1 ended with %v, want ErrDeposed (not retryable)", err)
	}
	errContains(t, err, `task "fence" is owned by epoch 2, this run has epoch 1`)
	if n := a.commitCount(); n != commitsOfA {
		t.Errorf("the deposed run committed %d more times", n-commitsOfA)
	}
	p.catchUp(t, b)
	p.sameDatabase(t, "fence")

	err = Run(context.Background(), p.config("fence", 1, "fence.*"), nil, nil)
	if !errors.Is(err, ErrDeposed) {
		t.Fatalf("a new epoch-1 run: %v, want ErrDeposed", err)
	}
}

// testFilters replicates only the included, not excluded tables, through snapshot, rows,
// CREATE and DROP; a rename into the task's scope stops the run.
func testFilters(t *testing.T, p *pair) {
	exec(t, p.srcDB, "CREATE DATABASE flta", "CREATE DATABASE fltb")
	for _, tb := range []string{"flta.t1", "flta.secret1", "fltb.keep_1", "fltb.keep_10", "fltb.other"} {
		exec(t, p.srcDB, "CREATE TABLE "+tb+" (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO "+tb+" VALUES (1, 'pre')")
	}
	cfg := p.config("filters", 1, "flta.*", "fltb.keep_?")
	cfg.Exclude = []string{"flta.secret*"}
	r := startRun(t, cfg)
	p.catchUp(t, r) // the snapshot is done: what follows is streamed
	for _, tb := range []string{"flta.t1", "flta.secret1", "fltb.keep_1", "fltb.keep_10", "fltb.other"} {
		exec(t, p.srcDB, "INSERT INTO "+tb+" VALUES (2, 'stream')")
	}
	exec(t, p.srcDB,
		"CREATE TABLE flta.secret2 (id INT PRIMARY KEY)", "INSERT INTO flta.secret2 VALUES (1)",
		"CREATE TABLE fltb.keep_2 (id INT PRIMARY KEY)", "INSERT INTO fltb.keep_2 VALUES (1), (2)",
		"DROP TABLE flta.secret1, fltb.keep_1")
	p.catchUp(t, r)
	if got := tables(t, p.dstDB, "flta"); fmt.Sprint(got) != "[t1]" {
		t.Errorf("target tables of flta: %v, want [t1]", got)
	}
	if got := tables(t, p.dstDB, "fltb"); fmt.Sprint(got) != "[keep_2]" {
		t.Errorf("target tables of fltb: %v, want [keep_2]", got)
	}
	for _, tb := range []string{"flta.t1", "fltb.keep_2"} {
		if s, d := count(t, p.srcDB, tb), count(t, p.dstDB, tb); s != d {
			t.Errorf("%s: %d rows on the source, %d on the target", tb, s, d)
		}
	}
	exec(t, p.srcDB, "RENAME TABLE fltb.other TO fltb.keep_3")
	err := r.wait(t, 30*time.Second)
	errContains(t, err, "brings table fltb.other (not replicated) into the task as fltb.keep_3", "re-snapshot the task")
}

// testSourceErrors checks what Run says about sources it cannot use.
func testSourceErrors(t *testing.T, p *pair) {
	exec(t, p.srcDB, "CREATE USER 'repl'@'%' IDENTIFIED BY 'right'", "GRANT ALL ON *.* TO 'repl'@'%'")
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, source string
		retryable    bool
		want         []string
	}{
		{"unreachable", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port), true,
			[]string{fmt.Sprintf("source 127.0.0.1:%d: connect: connection refused", port)}},
		{"wrong password", "repl:wrong@tcp(" + p.src.Addr() + ")/", false,
			[]string{"source " + p.src.Addr() + ": Error 1045 (28000): Access denied for user 'repl'"}},
		{"binlog off", p.dst.DSN(""), false,
			[]string{"source " + p.dst.Addr() + ": the binary log is off (log_bin=OFF)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := p.config("source-errors", 1, "none.*")
			cfg.Source = tt.source
			tracker := &Tracker{}
			err := Run(context.Background(), cfg, nil, tracker)
			errContains(t, err, tt.want...)
			if Retryable(err) != tt.retryable {
				t.Errorf("Retryable(%v) = %v, want %v", err, !tt.retryable, tt.retryable)
			}
			if tracker.Snapshot().LastError != err.Error() {
				t.Errorf("LastError %q", tracker.Snapshot().LastError)
			}
		})
	}
}

// testTargetErrors checks what Run says about targets it cannot use, and about a
// configuration that does not validate.
func testTargetErrors(t *testing.T, p *pair) {
	cfg := p.config("target-errors", 1, "none.*")
	cfg.Target = "nobody:secret@tcp(" + p.dst.Addr() + ")/"
	err := Run(context.Background(), cfg, nil, nil)
	errContains(t, err, "target "+p.dst.Addr()+": Error 1045 (28000): Access denied for user 'nobody'")
	if Retryable(err) {
		t.Errorf("access denied is retryable")
	}
	cfg = p.config("target-errors", 0)
	cfg.ServerID = 0
	err = Run(context.Background(), cfg, nil, nil)
	errContains(t, err, "apply: invalid config: server id is 0", "epoch is 0")

	exec(t, p.dstDB, "CREATE DATABASE IF NOT EXISTS paddock") // a checkpoint owned by a later epoch
	cfg = p.config("owned-later", 3, "none.*")
	if err := Run(cancelledSoon(t), cfg, nil, nil); err != nil {
		t.Fatalf("epoch 3: %v", err)
	}
	err = Run(context.Background(), p.config("owned-later", 2, "none.*"), nil, nil)
	if !errors.Is(err, ErrDeposed) || Retryable(err) {
		t.Fatalf("epoch 2 after 3: %v, want ErrDeposed", err)
	}
}

// cancelledSoon returns a context that ends once a run has had time to take ownership
// (the run ends by it, returning nil).
func cancelledSoon(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// TestStatementFormatSource refuses a source whose binlog is not in ROW format.
func TestStatementFormatSource(t *testing.T) {
	t.Parallel()
	src := testutil.StartMariaDB(t, testutil.MariaDBOptions{Binlog: true, BinlogFormat: "STATEMENT"})
	cfg := Config{Task: "stmt", Source: src.DSN(""), Target: src.DSN(""), ServerID: 9, Epoch: 1}
	err := Run(context.Background(), cfg, nil, nil)
	errContains(t, err, "source "+src.Addr()+": binlog_format is STATEMENT: ROW is required")
	if Retryable(err) {
		t.Errorf("wrong binlog format is retryable")
	}
}

// TestPurgedPosition resumes a task whose checkpoint's binlog was purged while it was
// stopped: a clear, permanent error; after ResetCheckpoint the task snapshots again.
func TestPurgedPosition(t *testing.T) {
	t.Parallel()
	p := startPair(t, testutil.MariaDBOptions{})
	exec(t, p.srcDB, "CREATE DATABASE pg", "CREATE TABLE pg.t (id INT PRIMARY KEY)", "INSERT INTO pg.t VALUES (1)")
	cfg := p.config("purged", 1, "pg.*")
	r := startRun(t, cfg)
	p.catchUp(t, r)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	checkpoint := r.tracker.Snapshot().Position
	exec(t, p.srcDB, "INSERT INTO pg.t VALUES (2)", "FLUSH BINARY LOGS", "INSERT INTO pg.t VALUES (3)")
	file := p.sourcePos(t).Name
	// The stopped run's dump thread may still be going away, and MariaDB does not purge a
	// file a dump thread reads: purge until the old files are gone.
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		exec(t, p.srcDB, "PURGE BINARY LOGS TO '"+file+"'")
		var first string
		var size int64
		return p.srcDB.QueryRow("SHOW BINARY LOGS").Scan(&first, &size) == nil && first == file
	}, "%s is still on the source after PURGE BINARY LOGS", checkpoint.File)

	r = startRun(t, cfg)
	err := r.wait(t, 30*time.Second)
	errContains(t, err, "source "+p.src.Addr()+" no longer has binlog "+checkpoint.File+" (purged): position "+
		checkpoint.String()+" cannot be resumed; re-snapshot the task")
	if !errors.Is(err, ErrPurged) || Retryable(err) {
		t.Fatalf("purged position: errors.Is(ErrPurged) %v, Retryable %v", errors.Is(err, ErrPurged), Retryable(err))
	}
	if err := ResetCheckpoint(context.Background(), p.dst.DSN(""), "purged", 1); err != nil {
		t.Fatal(err)
	}
	r = startRun(t, cfg)
	p.catchUp(t, r)
	p.sameDatabase(t, "pg")
	r.waitUntil(t, "no lag and no backlog when idle", func() bool {
		pr := r.tracker.Snapshot()
		return pr.LagSeconds == 0 && pr.EventsBehind == 0 && pr.SnapshotRows == 3
	})
}

// TestServerCrashes kills the target in the middle of streaming a steady write load, and
// then the source: each time the run ends with a retryable error, and a new run after the
// restart resumes from the checkpoint, which InnoDB's recovery kept consistent with the
// rows: nothing is lost or applied twice.
func TestServerCrashes(t *testing.T) {
	t.Parallel()
	p := startPair(t, testutil.MariaDBOptions{})
	exec(t, p.srcDB, "CREATE DATABASE crash",
		"CREATE TABLE crash.a (id INT AUTO_INCREMENT PRIMARY KEY, v INT, pad VARCHAR(100))",
		"CREATE TABLE crash.b (id INT AUTO_INCREMENT PRIMARY KEY, v INT, pad VARCHAR(100))")
	cfg := p.config("crash", 1, "crash.*")
	w := startWriter(p, "crash")
	r := startRun(t, cfg)
	r.waitUntil(t, "50 commits", func() bool { return r.commitCount() >= 50 })
	p.dst.Kill()
	err := r.wait(t, 30*time.Second)
	if err == nil || !Retryable(err) || !strings.Contains(err.Error(), "target "+p.dst.Addr()) {
		t.Fatalf("run after the target crashed: %v (retryable %v), want a retryable target error", err, Retryable(err))
	}
	t.Logf("after the target crashed: %v", err)
	if err := p.dst.Restart(); err != nil {
		t.Fatal(err)
	}
	r = startRun(t, cfg)
	r.waitUntil(t, "50 commits", func() bool { return r.commitCount() >= 50 })
	w.finish(t)
	p.catchUp(t, r)
	p.sameDatabase(t, "crash")

	p.src.Kill()
	err = r.wait(t, 30*time.Second)
	if err == nil || !Retryable(err) || !strings.Contains(err.Error(), "source "+p.src.Addr()) {
		t.Fatalf("run after the source crashed: %v (retryable %v), want a retryable source error", err, Retryable(err))
	}
	t.Logf("after the source crashed: %v", err)
	if err := p.src.Restart(); err != nil {
		t.Fatal(err)
	}
	exec(t, p.srcDB, "INSERT INTO crash.a (v) VALUES (-1)", "UPDATE crash.b SET v = 0")
	r = startRun(t, cfg)
	p.catchUp(t, r)
	p.sameDatabase(t, "crash")
}

// testDivergence changes the target by hand: a missing row and a column the source lacks
// stop the run with an error naming the table, the position and the cause.
func testDivergence(t *testing.T, p *pair) {
	exec(t, p.srcDB, "CREATE DATABASE dvg", "CREATE TABLE dvg.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO dvg.t VALUES (1, 1), (2, 2)")
	cfg := p.config("divergence", 1, "dvg.*")
	r := startRun(t, cfg)
	p.catchUp(t, r)
	exec(t, p.dstDB, "DELETE FROM dvg.t WHERE id = 2")
	exec(t, p.srcDB, "UPDATE dvg.t SET v = 20 WHERE id = 2")
	err := r.wait(t, 30*time.Second)
	errContains(t, err, "update of dvg.t at source bin.", "the target has no row with id=2: the target has diverged "+
		"from the source; re-snapshot the task; latest source statement: UPDATE dvg.t SET v = 20 WHERE id = 2")
	if Retryable(err) {
		t.Errorf("divergence is retryable")
	}

	exec(t, p.dstDB, "INSERT INTO dvg.t VALUES (2, 20)", "ALTER TABLE dvg.t ADD COLUMN extra INT")
	exec(t, p.srcDB, "INSERT INTO dvg.t VALUES (3, 3)")
	err = startRun(t, cfg).wait(t, 30*time.Second)
	errContains(t, err, "rows for dvg.t at bin.", "have 2 columns but the target table has 3")
}
