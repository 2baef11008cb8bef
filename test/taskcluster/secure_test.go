package taskcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/task"
	"github.com/paddock/paddock/web"
)

// upSession connects to a platform started by paddock up (data in dataDir) as role,
// with the credentials paddock up made (its signing key, if it has one), once it serves.
func upSession(t *testing.T, up *testutil.Child, addr, dataDir, role string) *coordinator.Session {
	t.Helper()
	creds := filepath.Join(dataDir, "credentials")
	access := coordinator.Access{AuthFile: filepath.Join(creds, role), RolesFile: filepath.Join(creds, "roles"),
		SignersFile: filepath.Join(creds, "signers")}
	wc := web.DefaultConfig()
	var s *coordinator.Session
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		// The signers file is written after the keys: once it is there, so are they.
		if _, err := os.Stat(filepath.Join(creds, role+".key")); err == nil {
			access.SigningKey = filepath.Join(creds, role+".key")
		}
		cc, err := access.Config([]string{addr}, 4*time.Second, nil, wc.ACLRules())
		if err != nil {
			return false // not made yet
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s, err = coordinator.Connect(ctx, cc)
		return err == nil
	}, "paddock up serves on %s, credentials in %s:\n%s", addr, creds, up.LogTail(20))
	t.Cleanup(func() { s.Close() })
	return s
}

// anonymous connects to addr with go-zookeeper/zk and no credentials, as an attacker
// who can reach the port would.
func anonymous(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	return conn
}

// upAttacks checks, on a platform started by paddock up, what the attacker
// tried: an unauthenticated client cannot submit a task, read a replication task's
// DSN or delete the audit log; a service's identity can do only its role's part.
func upAttacks(t *testing.T, addr, dataDir string, up *testutil.Child) {
	t.Helper()
	l := task.DefaultLayout
	anon := anonymous(t, addr)
	if _, err := anon.Create(l.Task("task-"), []byte(`{"command":"sh","args":["-c","touch /tmp/pwned"]}`),
		zk.FlagSequence, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated create under /tasks: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, _, err := anon.Children(l.Tasks()); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated list of /tasks: %v, want %v", err, zk.ErrNoAuth)
	}
	// A worker's identity cannot submit either.
	worker := upSession(t, up, addr, dataDir, coordinator.RoleWorker)
	if _, err := worker.Conn().Create(l.Task("task-"), nil, zk.FlagSequence, worker.ACLFor(l.Task("task-"))); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("worker's create under /tasks: %v, want %v", err, zk.ErrNoAuth)
	}

	// A task a submitter's identity wrote by hand, writable by all and never signed,
	// is refused: anyone could have written its command. (TestProvenanceOnUp tries the
	// other forgeries.)
	sub := upSession(t, up, addr, dataDir, coordinator.RoleSubmitter)
	marker := filepath.Join(t.TempDir(), "ran")
	if _, err := sub.Conn().Create(l.Task("task-"), []byte(`{"command":"touch","args":["`+marker+`"]}`), zk.FlagSequence,
		zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// A replication task's definition, with a password in its DSNs, made by the console.
	console := upSession(t, up, addr, dataDir, coordinator.RoleConsole)
	rl, _ := replicator.NewLayout("/")
	def := replicator.TaskDef{Source: "repl:S3cretSrcPw@tcp(127.0.0.1:3306)/", Target: "w:S3cretDstPw@tcp(127.0.0.1:3307)/", ServerID: 4242}
	if err := replicator.NewAdmin(console, rl).Create(context.Background(), "orders", def); err != nil {
		t.Fatal(err)
	}
	for name, conn := range map[string]*zk.Conn{"unauthenticated": anon, "worker": worker.Conn()} {
		if data, _, err := conn.Get(rl.Task("orders")); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s read of %s: %v (%q), want %v", name, rl.Task("orders"), err, data, zk.ErrNoAuth)
		}
	}
	rep := upSession(t, up, addr, dataDir, coordinator.RoleReplicator)
	if data, _, err := rep.Conn().Get(rl.Task("orders")); err != nil || !strings.Contains(string(data), "S3cretSrcPw") {
		t.Errorf("replicator's read of %s: %v, %q", rl.Task("orders"), err, data)
	}

	// The audit log: the console appends; nobody but the admin deletes or rewrites.
	audit := web.DefaultConfig().AuditRoot
	entry, err := console.Conn().Create(audit+"/entry-", []byte(`{}`), zk.FlagSequence, console.ACLFor(audit+"/entry-"))
	if err != nil {
		t.Fatal(err)
	}
	for name, conn := range map[string]*zk.Conn{"unauthenticated": anon, "console": console.Conn()} {
		if err := conn.Delete(entry, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s delete of %s: %v, want %v", name, entry, err, zk.ErrNoAuth)
		}
		if _, err := conn.Set(entry, []byte(`{"forged":true}`), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s set of %s: %v, want %v", name, entry, err, zk.ErrNoAuth)
		}
		if err := conn.Delete(audit, -1); !errors.Is(err, zk.ErrNoAuth) && !errors.Is(err, zk.ErrNotEmpty) {
			t.Errorf("%s delete of %s: %v, want %v", name, audit, err, zk.ErrNoAuth)
		}
	}
	if _, err := anon.Create(audit+"/entry-", []byte(`{"forged":true}`), zk.FlagSequence, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated append to %s: %v, want %v", audit, err, zk.ErrNoAuth)
	}
	admin := upSession(t, up, addr, dataDir, coordinator.RoleAdmin)
	if err := admin.Conn().Delete(entry, -1); err != nil {
		t.Errorf("admin (the superuser) delete of %s: %v", entry, err)
	}
	upJobAttacks(t, l, anon, worker, sub)
	upDrain(t, up, l, console, worker, sub, admin, addr, dataDir)
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("an unsigned task open to all ran")
	}
	// The credentials are the owner's only.
	for _, role := range coordinator.KnownRoles {
		fi, err := os.Stat(filepath.Join(dataDir, "credentials", role))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("credentials/%s: %v, mode %v, want 0600", role, err, fi.Mode().Perm())
		}
	}
}

// TestUpMigratesOpenACLs: data made by an older paddock (every node world:anyone
// cdrwa, the root znode, /jobs and the quotas included) gets its role ACLs when paddock
// up starts on it; a task left pending in it, which nobody signed, never runs: it ends
// failed once its grace is over.
func TestUpMigratesOpenACLs(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// The older platform: a plain server, nodes open to all.
	old, err := testutil.StartChild(t, filepath.Join(dir, "server.log"), nil, paddock.Path(t),
		"server", "--data-dir", data, "--client-addr", addr, "--admin-addr=")
	if err != nil {
		t.Fatal(err)
	}
	var anon *zk.Conn
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
		if err != nil {
			return false
		}
		if _, _, err := conn.Exists("/"); err != nil {
			conn.Close()
			return false
		}
		anon = conn
		return true
	}, "paddock server serves on %s", addr)
	l := task.DefaultLayout
	open := zk.WorldACL(zk.PermAll)
	for _, p := range []string{l.Tasks(), l.Jobs(), "/mysql_replicator", "/mysql_replicator/tasks", "/paddock", "/paddock/audit", "/zookeeper/quota/app"} {
		if _, err := anon.Create(p, nil, 0, open); err != nil {
			t.Fatal(err)
		}
	}
	id, err := anon.Create(l.Task("task-"), []byte(`{"command":"sh","args":["-c","echo old"]}`), zk.FlagSequence, open)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Create("/mysql_replicator/tasks/orders", []byte(`{"source":"u:S3cretSrcPw@tcp(127.0.0.1:1)/"}`), 0, open); err != nil {
		t.Fatal(err)
	}
	anon.Close()
	if err := old.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	up, err := testutil.StartChild(t, filepath.Join(dir, "up.log"), nil, paddock.Path(t),
		"up", "--data-dir", data, "--client-addr", addr, "--admin-addr=", "--metrics-port", "0", "--listen", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := upSession(t, up, addr, data, coordinator.RoleSubmitter)
	c := &cluster{t: t, addr: addr, layout: l, s: s, client: task.NewClient(s, l)}
	id = filepath.Base(id)
	if tk := c.waitAll([]string{id}, 60*time.Second)[id]; tk.State != task.Failed || tk.Status.OutputTail != "" ||
		!strings.Contains(tk.Status.Error, "not signed by a trusted submitter within 30s") {
		t.Fatalf("%s: %s, output %q, error %q; want failed, unsigned, never run", id, tk.State, tk.Status.OutputTail, tk.Status.Error)
	}
	anon = anonymous(t, addr)
	admin := upSession(t, up, addr, data, coordinator.RoleAdmin)
	for _, p := range []string{l.Tasks(), l.Task(id), l.Jobs(), "/mysql_replicator/tasks/orders", "/paddock/audit", "/zookeeper/quota/app"} {
		acl, _, err := admin.Conn().GetACL(p)
		if err != nil || coordinator.OpenToWorld(acl) {
			t.Errorf("%s after paddock up: acl %v, %v: still open to all", p, acl, err)
		}
	}
	if acl, _, err := admin.Conn().GetACL("/"); err != nil || !slices.Contains(acl, zk.ACL{Perms: zk.PermRead | zk.PermCreate, Scheme: "world", ID: "anyone"}) ||
		slices.ContainsFunc(acl, func(a zk.ACL) bool { return a.Scheme == "world" && a.Perms&zk.PermDelete != 0 }) {
		t.Errorf("/ after paddock up: acl %v, %v; want the world to read and create only", acl, err)
	}
	if _, _, err := anon.Get("/mysql_replicator/tasks/orders"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated read of a migrated DSN: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := anon.Create(l.Task("task-"), nil, zk.FlagSequence, open); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated create under migrated /tasks: %v, want %v", err, zk.ErrNoAuth)
	}
	if err := up.Stop(20 * time.Second); err != nil {
		t.Fatalf("paddock up after SIGTERM: %v\n%s", err, up.LogTail(20))
	}
}

// upDrain: under role ACLs the console drains a worker of paddock up, which reads the
// request and says drained; neither a worker's nor a submitter's identity can write or
// withdraw a drain request; the admin's CLI can.
func upDrain(t *testing.T, up *testutil.Child, l task.Layout, console, worker, sub, admin *coordinator.Session, addr, dataDir string) {
	t.Helper()
	const id = "up-worker-1"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := task.NewClient(console, l).Drain(ctx, id, task.DrainRequest{By: "test"}); err != nil {
		t.Fatalf("console's drain of %s: %v", id, err)
	}
	state := func() task.WorkerState {
		var info task.WorkerInfo
		data, _, err := admin.Conn().Get(l.Worker(id))
		if err != nil || json.Unmarshal(data, &info) != nil {
			return ""
		}
		return info.State
	}
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool { return state() == task.WorkerDrained },
		"%s never said drained (is %q):\n%s", id, state(), up.LogTail(20))
	for name, s := range map[string]*coordinator.Session{"worker": worker, "submitter": sub} {
		if err := s.Conn().Delete(l.Drain(id), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s's delete of %s: %v, want %v", name, l.Drain(id), err, zk.ErrNoAuth)
		}
		if _, err := s.Conn().Create(l.Drain("up-worker-2"), nil, 0, s.ACLFor(l.Drain("up-worker-2"))); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s's create of a drain request: %v, want %v", name, err, zk.ErrNoAuth)
		}
	}
	creds := filepath.Join(dataDir, "credentials")
	cmd := exec.Command(paddock.Path(t), "worker", "undrain", "--zk", addr, "--auth-file", filepath.Join(creds, "admin"),
		"--roles-file", filepath.Join(creds, "roles"), id)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("paddock worker undrain as admin: %v\n%s", err, out)
	}
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool { return state() == task.WorkerActive },
		"%s never active again (is %q)", id, state())
}

// upJobAttacks: only the roles write jobs, and a job a submitter's identity wrote by
// hand, unsigned and writable by all, is never fired — anyone could have written its
// command — while one created (and signed) by the client is.
func upJobAttacks(t *testing.T, l task.Layout, anon *zk.Conn, worker, sub *coordinator.Session) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "ran")
	evil, _ := json.Marshal(task.Job{Task: task.Spec{Command: "touch", Args: []string{marker}}, Schedule: "* * * * * *",
		Enabled: true, EnabledSince: time.Now().UTC()})
	for name, conn := range map[string]*zk.Conn{"unauthenticated": anon, "worker": worker.Conn()} {
		if _, err := conn.Create(l.Job("evil"), evil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s create of a job: %v, want %v", name, err, zk.ErrNoAuth)
		}
	}
	if _, err := sub.Conn().Create(l.Job("open"), evil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c := task.NewClient(sub, l)
	ctx := context.Background()
	if err := c.CreateJob(ctx, task.Job{Name: "guarded", Task: task.Spec{Command: "true"}, Schedule: "* * * * * *",
		Concurrency: task.ConcurrencyAllow, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		v, err := c.GetJob(ctx, "guarded")
		return err == nil && len(v.Fires) >= 2
	}, "the protected job fired")
	if names, _, err := sub.Conn().Children(l.Fires("open")); err == nil && len(names) > 0 || err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("a job open to all fired: %v, %v", names, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a job open to all ran")
	}
	for _, name := range []string{"open", "guarded"} {
		if err := c.DeleteJob(ctx, name); err != nil {
			t.Errorf("delete job %s: %v", name, err)
		}
	}
}
