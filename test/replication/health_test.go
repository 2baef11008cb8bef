package replication

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/web"
)

// lazy is a failure message's part made when it is printed.
type lazy func() string

func (l lazy) String() string { return l() }

// listRow returns the columns of task's row in `paddock replicator task list`.
func (b *bus) listRow(task string) []string {
	b.t.Helper()
	out, errOut, code := b.taskCmd("list")
	if code != 0 {
		b.t.Fatalf("list: exit %d: %s", code, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == task {
			return f
		}
	}
	b.t.Fatalf("list has no row for %s:\n%s", task, out)
	return nil
}

// listLag parses the LAG column ("12.3s") of a list row; -1 for "-".
func listLag(t *testing.T, row []string) float64 {
	t.Helper()
	for _, f := range row {
		if f == "-" {
			continue
		}
		if s, ok := strings.CutSuffix(f, "s"); ok {
			if lag, err := strconv.ParseFloat(s, 64); err == nil && strings.Contains(s, ".") {
				return lag
			}
		}
	}
	return -1
}

// startConsole runs `paddock web` on the bus: its replication monitor campaigns with
// the replicators'.
func (b *bus) startConsole() *testutil.Child {
	b.t.Helper()
	hash, err := web.HashPassword("pw-ada")
	if err != nil {
		b.t.Fatal(err)
	}
	cfg := filepath.Join(b.dir, "web.yaml")
	if err := os.WriteFile(cfg, []byte("web:\n  users: [\"ada:admin:"+hash+"\"]\n"), 0o600); err != nil {
		b.t.Fatal(err)
	}
	p, err := testutil.StartChild(b.t, filepath.Join(b.dir, "web.log"), nil, paddock.Path(b.t), "web", "--config", cfg,
		"--zk", b.addr, "--listen", "127.0.0.1:0", "--log-level", "debug")
	if err != nil {
		b.t.Fatal(err)
	}
	b.procs["web"] = p
	return p
}

// TestHealthWithoutReplicators kills every replicator process with SIGKILL, inserts a
// row on the source, and reads the task as `paddock replicator task list` and the
// console's Admin do: the task turns stale and then unserved within the bound
// (docs/replication.md: the session timeout, plus the server's expiry tick), and its
// lag grows, although the last status any instance wrote still says "running" with a
// lag of 0; the console (paddock web), whose monitor takes over the election from the
// dead replicators', logs that the task is unserved. A task no instance ever ran has
// no lag ("-"), never 0.
func TestHealthWithoutReplicators(t *testing.T) {
	b := newBus(t)
	b.schema("hz")
	b.createTask("hz", "hz")
	r1 := b.start("r1", "--tasks", "hz")
	r2 := b.start("r2", "--tasks", "hz")
	console := b.startConsole()
	testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		return b.runningHost("hz") != "" && len(b.view("hz").Instances) == 2
	}, "the task runs with a standby\n%s", lazy(b.tails))
	b.exec(b.src, "INSERT INTO hz.orders VALUES (1, 1, 'before')")
	b.waitEqual(30*time.Second, "hz.orders")
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
		row := b.listRow("hz")
		return row[2] == "ok" && listLag(t, row) >= 0 && listLag(t, row) < 3
	}, "the list says ok with a small lag\n%s", lazy(b.tails))

	r1.Kill()
	r2.Kill()
	killed := time.Now()
	b.exec(b.src, "INSERT INTO hz.orders VALUES (2, 2, 'after the kill')")

	bound := sessionTimeout + 2*time.Second // the session's expiry, then the server's expiry tick and a read
	var row []string
	testutil.Eventually(t, bound+10*time.Second, 50*time.Millisecond, func() bool {
		row = b.listRow("hz")
		return row[2] == "unserved"
	}, "the task becomes unserved: %s", lazy(func() string { return strings.Join(row, " ") }))
	took := time.Since(killed)
	if took > bound+5*time.Second {
		t.Errorf("unserved %v after the kill, want within about %v", took, bound)
	}
	v := b.view("hz")
	if v.Status == nil || v.Status.State != "running" || v.Health.State != "unserved" || len(v.Instances) != 0 {
		t.Fatalf("want the last report running and the verdict unserved: %+v %+v", v.Status, v.Health)
	}
	lag1 := listLag(t, b.listRow("hz"))
	time.Sleep(1500 * time.Millisecond)
	lag2 := listLag(t, b.listRow("hz"))
	t.Logf("unserved %v after the kill (the list's own run included); lag %.1f s, then %.1f s", took.Round(100*time.Millisecond), lag1, lag2)
	if lag1 < 0 || lag2 < lag1+1 {
		t.Errorf("lag %.1f s then %.1f s 1.5 s later: want it known and growing while nothing applies", lag1, lag2)
	}
	testutil.Eventually(t, 3*replicator.StaleAfter, 100*time.Millisecond, func() bool {
		log, _ := os.ReadFile(console.LogPath)
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, `msg="task unhealthy"`) && strings.Contains(line, "task=hz health=unserved") {
				return true
			}
		}
		return false
	}, "the console's monitor logs the task unserved:\n%s", lazy(func() string { return console.LogTail(30) }))
	var dst int
	b.dst.QueryRow("SELECT COUNT(*) FROM hz.orders").Scan(&dst)
	if dst != 1 {
		t.Fatalf("target has %d rows, want 1 (nothing runs)", dst)
	}

	// A task that never ran: unserved, lag unknown.
	b.createTask("never", "hz")
	row = b.listRow("never")
	if row[2] != "unserved" || listLag(t, row) != -1 {
		t.Errorf("a task that never ran: %v, want unserved and no lag", row)
	}
	out, _, _ := b.taskCmd("get", "never")
	var got replicator.TaskView
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Health == nil || got.Health.LagSeconds != nil ||
		got.Health.Clock != "server" {
		t.Errorf("get never: %v %s: want health with lag_seconds null, judged by the server's clock", err, out)
	}
}

// proxy forwards connections from a new loopback port to addr: another address for the
// same server.
func proxy(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				u, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite() }()
				io.Copy(c, u)
			})
		}
	})
	return ln.Addr().String()
}

// TestSameServerRefused: a task whose source and target are one server is refused at
// create and update, by the CLI and the admin, whether the addresses say so (localhost
// and 127.0.0.1) or only the servers do (a proxy's port); a definition that gets past
// them is refused at run, before anything is written, with a clear error in the
// status, not replicated onto itself.
func TestSameServerRefused(t *testing.T) {
	b := newBus(t)
	b.schema("same")
	src := b.source.DSN("")
	byName := "root@tcp(localhost:" + itoa(b.source.Port()) + ")/"
	byProxy := "root@tcp(" + proxy(t, b.source.Addr()) + ")/"

	for _, target := range []string{src, byName, byProxy} {
		_, errOut, code := b.taskCmd("create", "loop", "--source", src, "--target", target, "--include", "same.*")
		if code == 0 || !strings.Contains(errOut, "same server") {
			t.Errorf("create with target %s: exit %d, %q: want a refusal naming the same server", target, code, errOut)
		}
		err := b.admin.Create(t.Context(), "loop", taskDef(src, target, "same.*"))
		if !errors.Is(err, replicator.ErrSameServer) {
			t.Errorf("Admin.Create with target %s: %v, want ErrSameServer", target, err)
		}
	}
	if views, _ := b.admin.List(t.Context()); len(views) != 0 {
		t.Fatalf("refused creates left %d tasks", len(views))
	}
	b.createTask("ok", "same")
	if _, errOut, code := b.taskCmd("update", "ok", "--target", byProxy); code == 0 || !strings.Contains(errOut, "same server") {
		t.Errorf("update onto the source: exit %d, %q", code, errOut)
	}

	// Written past the admin's checks, as an older paddock could have: refused at run.
	def := taskDef(src, byProxy, "same.*")
	def.Created, def.Updated = time.Now().UTC(), def.Created
	data, _ := json.Marshal(def)
	conn := b.session.Conn()
	if _, err := conn.Create(b.layout.Task("loop"), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var before, after string
	if err := b.src.QueryRow("SELECT @@gtid_binlog_pos").Scan(&before); err != nil {
		t.Fatal(err)
	}
	b.start("s1", "--tasks", "loop")
	var v *replicator.TaskView
	var seen []byte
	testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		v = b.view("loop")
		seen, _ = json.Marshal(v.Status)
		return v.Status != nil && v.Status.State == "failed" && strings.Contains(v.Status.LastError, "same server")
	}, "the run fails naming the same server: %s\n%s", lazy(func() string { return string(seen) }), lazy(b.tails))
	if v.Health.State != "error" || !strings.Contains(v.Health.Detail, "same server") {
		t.Errorf("health %+v, want error naming the same server", v.Health)
	}
	time.Sleep(time.Second)
	b.src.QueryRow("SELECT @@gtid_binlog_pos").Scan(&after)
	if after != before {
		t.Errorf("the source's binlog moved from %s to %s: the run wrote to it", before, after)
	}
	var dbs int
	b.src.QueryRow("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name LIKE 'paddock%'").Scan(&dbs)
	if dbs != 0 {
		t.Errorf("the run created %d checkpoint databases on the source", dbs)
	}
}
