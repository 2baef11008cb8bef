package replication

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// schema creates the test database: orders gets one row per transaction, stock is
// updated by each (so a transaction applied twice, or half, changes the checksum).
func (b *bus) schema(db string) {
	b.t.Helper()
	b.exec(b.src, "CREATE DATABASE "+db)
	b.exec(b.src, "CREATE TABLE "+db+".orders (id BIGINT PRIMARY KEY, item INT NOT NULL, note VARCHAR(64))")
	b.exec(b.src, "CREATE TABLE "+db+".stock (item INT PRIMARY KEY, qty BIGINT NOT NULL)")
	for i := range 10 {
		b.exec(b.src, "INSERT INTO "+db+".stock VALUES (?, 1000000)", i)
	}
}

// writer commits transactions on the source until stop is closed: each inserts an
// order and decrements its item's stock, in one transaction.
type writer struct {
	db     *sql.DB
	schema string
	stop   chan struct{}
	done   sync.WaitGroup
	mu     sync.Mutex
	n      int
	err    error
}

func (b *bus) startWriter(db string, from int) *writer {
	w := &writer{db: b.src, schema: db, stop: make(chan struct{}), n: from}
	w.done.Go(w.run)
	return w
}

func (w *writer) run() {
	for {
		select {
		case <-w.stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
		w.mu.Lock()
		id := w.n
		w.mu.Unlock()
		if err := w.one(id); err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		w.mu.Lock()
		w.n++
		w.mu.Unlock()
	}
}

func (w *writer) one(id int) error {
	tx, err := w.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec("INSERT INTO "+w.schema+".orders VALUES (?, ?, ?)", id, id%10, "order"); err != nil {
		return err
	}
	if _, err := tx.Exec("UPDATE "+w.schema+".stock SET qty = qty - 1 WHERE item = ?", id%10); err != nil {
		return err
	}
	return tx.Commit()
}

// waitCommitted waits until the writer has committed n more transactions than when
// called: the writes are flowing.
func (w *writer) waitCommitted(t testing.TB, n int) {
	t.Helper()
	w.mu.Lock()
	target := w.n + n
	w.mu.Unlock()
	testutil.Eventually(t, 30*time.Second, 5*time.Millisecond, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err != nil {
			t.Fatalf("writer: %v", w.err)
		}
		return w.n >= target
	}, "the writer commits %d transactions", n)
}

// halt stops the writer and returns how many transactions it committed in all.
func (w *writer) halt(t testing.TB) int {
	close(w.stop)
	w.done.Wait()
	if w.err != nil {
		t.Fatalf("writer: %v", w.err)
	}
	return w.n
}

// TestHotFailover: two replicator processes stand for one task; the running one is
// killed with SIGKILL under continuous writes; the hot standby takes over within the
// session timeout, and the target ends equal to the source: no transaction lost or
// applied twice.
func TestHotFailover(t *testing.T) {
	b := newBus(t)
	b.schema("shop")
	b.createTask("shop", "shop")
	first := b.start("r1", "--tasks", "shop")
	testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool { return b.runningHost("shop") == "r1" },
		"r1 runs the task\n%s", b.tails())
	b.start("r2", "--tasks", "shop")
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool { return len(b.view("shop").Instances) == 2 },
		"r2 stands by")

	w := b.startWriter("shop", 0)
	w.waitCommitted(t, 200) // writes flowing when the running instance is killed
	first.Kill()
	killed := time.Now()
	testutil.Eventually(t, 3*sessionTimeout+5*time.Second, 20*time.Millisecond, func() bool { return b.runningHost("shop") == "r2" },
		"r2 takes over\n%s", b.tails())
	failover := time.Since(killed)
	// Applying resumed: the target gains rows the writer committed after the takeover.
	var before int
	b.dst.QueryRow("SELECT COUNT(*) FROM shop.orders").Scan(&before)
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() bool {
		var now int
		return b.dst.QueryRow("SELECT COUNT(*) FROM shop.orders").Scan(&now) == nil && now > before
	}, "r2 applies")
	resumed := time.Since(killed)
	w.waitCommitted(t, 200) // and flowing after the takeover
	n := w.halt(t)
	b.waitEqual(30*time.Second, "shop.orders", "shop.stock")
	t.Logf("%d transactions; r2 took over %v after r1 was killed, and applied again %v after it",
		n, failover.Round(time.Millisecond), resumed.Round(time.Millisecond))
	if failover > sessionTimeout+3*time.Second {
		t.Errorf("failover took %v, want about the session timeout (%v)", failover, sessionTimeout)
	}
	v := b.view("shop")
	if v.LastCommit == nil || v.LastCommit.File == "" {
		t.Errorf("lastCommit not mirrored: %+v", v.LastCommit)
	}
}

// TestColdStandbyAndRestart: a cold standby claims a task whose every instance died;
// after every process is stopped and the source has moved on, a new process resumes
// from the checkpoint.
func TestColdStandbyAndRestart(t *testing.T) {
	b := newBus(t)
	b.schema("cold")
	b.createTask("cold", "cold")
	hot := b.start("h1", "--tasks", "cold")
	testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool { return b.runningHost("cold") == "h1" },
		"h1 runs the task\n%s", b.tails())
	b.start("c1", "--mode", "cold")
	w := b.startWriter("cold", 0)
	w.waitCommitted(t, 100)
	hot.Kill()
	testutil.Eventually(t, 3*sessionTimeout+10*time.Second, 50*time.Millisecond, func() bool { return b.runningHost("cold") == "c1" },
		"the cold standby claims the task\n%s", b.tails())
	n := w.halt(t)
	b.waitEqual(30*time.Second, "cold.orders", "cold.stock")

	// Everything stops; the source moves on; a new process resumes.
	for _, p := range b.procs {
		p.Stop(20 * time.Second)
	}
	w = b.startWriter("cold", n)
	w.waitCommitted(t, 100)
	w.halt(t)
	b.start("h2", "--tasks", "cold")
	b.waitEqual(30*time.Second, "cold.orders", "cold.stock")
}

// TestErrorsInStatus: a task whose source cannot be reached reports it in its status,
// naming the source, and keeps retrying; once the task is fixed it replicates.
func TestErrorsInStatus(t *testing.T) {
	b := newBus(t)
	b.schema("broken")
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	def := "root@tcp(127.0.0.1:" + itoa(port) + ")/"
	if err := b.admin.Create(context.Background(), "broken", taskDef(def, b.target.DSN(""), "broken.*")); err != nil {
		t.Fatal(err)
	}
	b.start("e1", "--tasks", "broken")
	testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		st := b.view("broken").Status
		return st != nil && st.State == "retrying" && strings.Contains(st.LastError, "source") &&
			strings.Contains(st.LastError, itoa(port))
	}, "the status names the unreachable source\n%s", b.tails())
	if _, err := b.admin.Update(context.Background(), "broken", func(d *replicatorTaskDef) error {
		d.Source = b.source.DSN("")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.exec(b.src, "INSERT INTO broken.orders VALUES (1, 1, 'after the fix')")
	b.waitEqual(30*time.Second, "broken.orders", "broken.stock")
}
