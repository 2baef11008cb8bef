// Package replication tests the MySQL binlog replication bus end to end: a paddock
// server, two real MariaDB servers (a source with a ROW binary log and a target) and
// replicator processes of the paddock binary, killed with SIGKILL to fail over.
package replication

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/server"
)

var paddock testutil.Binary

func TestMain(m *testing.M) { paddock.Main(m) }

const sessionTimeout = 2 * time.Second

type bus struct {
	t        testing.TB
	addr     string
	dir      string
	source   *testutil.MariaDB
	target   *testutil.MariaDB
	src, dst *sql.DB
	admin    *replicator.Admin
	session  *coordinator.Session // the admin's
	layout   replicator.Layout
	procs    map[string]*testutil.Child
	// args are added to every replicator process's command line (credentials).
	args []string
}

func newBus(t testing.TB) *bus {
	t.Helper()
	return newBusAs(t, coordinator.Access{})
}

// newBusAs is newBus whose admin (the console's part) connects with access.
func newBusAs(t testing.TB, access coordinator.Access) *bus {
	t.Helper()
	b := &bus{
		t:      t,
		addr:   testutil.StartPaddock(t, func(c *server.Config) { c.TickTime = 100 * time.Millisecond }),
		dir:    t.TempDir(),
		source: testutil.StartMariaDB(t, testutil.MariaDBOptions{Binlog: true}),
		target: testutil.StartMariaDB(t, testutil.MariaDBOptions{}),
		procs:  map[string]*testutil.Child{},
	}
	b.src, b.dst = b.source.Open(t, ""), b.target.Open(t, "")
	b.layout, _ = replicator.NewLayout("/")
	cc, err := access.Config([]string{b.addr}, 4*time.Second, nil, b.layout.ACLRules())
	if err != nil {
		t.Fatal(err)
	}
	s, err := coordinator.Connect(context.Background(), cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b.admin, b.session = replicator.NewAdmin(s, b.layout), s
	t.Cleanup(b.checkLogs)
	return b
}

// createTask defines an enabled task replicating the database db.
func (b *bus) createTask(name, db string) {
	b.t.Helper()
	def := replicator.TaskDef{Source: b.source.DSN(""), Target: b.target.DSN(""), Include: []string{db + ".*"},
		ServerID: replicator.DefaultServerID(name), Enabled: true}
	if err := b.admin.Create(context.Background(), name, def); err != nil {
		b.t.Fatal(err)
	}
}

// start runs a replicator process named host.
func (b *bus) start(host string, args ...string) *testutil.Child {
	b.t.Helper()
	args = append([]string{"replicator", "--zk", b.addr, "--host", host, "--session-timeout", sessionTimeout.String(),
		"--log-level", "debug"}, append(b.args, args...)...)
	p, err := testutil.StartChild(b.t, filepath.Join(b.dir, host+".log"), nil, paddock.Path(b.t), args...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.procs[host] = p
	return p
}

func (b *bus) checkLogs() {
	for host, p := range b.procs {
		problems, _ := p.LogProblems()
		var real []string
		for _, line := range problems {
			// A run's failure while a server is gone is logged at error level by design
			// in some paths; races and panics are what must not be there.
			if !strings.Contains(line, "level=ERROR") {
				real = append(real, line)
			}
		}
		if len(real) > 0 {
			b.t.Errorf("%s's log:\n%s", host, strings.Join(real, "\n"))
		}
	}
}

func (b *bus) tails() string {
	var s strings.Builder
	for host, p := range b.procs {
		fmt.Fprintf(&s, "--- %s:\n%s\n", host, p.LogTail(20))
	}
	return s.String()
}

// view returns the task as the admin sees it.
func (b *bus) view(name string) *replicator.TaskView {
	b.t.Helper()
	v, err := b.admin.Get(context.Background(), name)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

// runningHost returns the host of the instance that runs the task, if its status says
// it runs.
func (b *bus) runningHost(name string) string {
	v := b.view(name)
	if v.Status == nil || v.Status.State != "running" || len(v.Instances) == 0 || v.Instances[0].State != "running" {
		return ""
	}
	return v.Instances[0].Host
}

func (b *bus) exec(db *sql.DB, query string, args ...any) {
	b.t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		b.t.Fatalf("%s: %v", query, err)
	}
}

// tableState is what must agree between source and target: row count and checksum.
func tableState(db *sql.DB, table string) (string, error) {
	var n int64
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		return "", err
	}
	var name string
	var sum sql.NullInt64
	if err := db.QueryRow("CHECKSUM TABLE "+table).Scan(&name, &sum); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d rows, checksum %d", n, sum.Int64), nil
}

// waitEqual waits until every table has the same rows on the target as on the source.
func (b *bus) waitEqual(timeout time.Duration, tables ...string) {
	b.t.Helper()
	var diff string
	ok := testutil.WaitFor(timeout, 100*time.Millisecond, func() bool {
		diff = ""
		for _, table := range tables {
			s, err1 := tableState(b.src, table)
			d, err2 := tableState(b.dst, table)
			if err1 != nil || err2 != nil || s != d {
				diff += fmt.Sprintf("%s: source %s (%v), target %s (%v); ", table, s, err1, d, err2)
			}
		}
		return diff == ""
	})
	if !ok {
		b.t.Fatalf("after %v the target differs from the source: %s\n%s", timeout, diff, b.tails())
	}
}
