package taskcluster

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/provenance"
	"github.com/paddock/paddock/task"
)

// The provenance tests, process-level: masters and workers are paddock processes (or
// paddock up), the backend paddock or Apache ZooKeeper 3.8, and every forged task and
// job is written with world:anyone cdrwa, so that only its signature stands between it
// and a worker. A forged task never runs and ends failed, "task not signed by a trusted
// submitter"; a forged job never fires; the signed ones beside them do.

// forger writes forged tasks and jobs on a platform.
type forger struct {
	t      *testing.T
	conn   *zk.Conn // writes whatever it likes: the admin on paddock up, anyone on an open ZooKeeper
	l      task.Layout
	keys   func(role string) *provenance.Signer // the platform's signing keys (nil: none for the role)
	marker string                               // a run touches $M/<task id>, a job's run $M/job-<name>
}

// open is the ACL of every forged node: no ACL protects it.
var open = zk.WorldACL(zk.PermAll)

// spec is a task that leaves a trace of its run, made unique by token.
func (f *forger) spec(token string) []byte {
	data, _ := json.Marshal(task.Spec{Command: "sh", Args: []string{"-c", `touch "$M/$PADDOCK_TASK_ID"`},
		Env: map[string]string{"M": f.marker}, Token: token, Submitted: time.Now().UTC()})
	return data
}

// job is an every-second job whose runs leave a trace named for it.
func (f *forger) job(name string) []byte {
	data, _ := json.Marshal(task.Job{Task: task.Spec{Command: "sh", Args: []string{"-c", `touch "$M/job-$JOB"`},
		Env: map[string]string{"M": f.marker, "JOB": name}}, Schedule: "* * * * * *", Concurrency: task.ConcurrencyAllow,
		Enabled: true, EnabledSince: time.Now().UTC()})
	return data
}

// create makes node p with data, open to all; sequential names the node after it.
func (f *forger) create(p string, data []byte, flags int32) string {
	f.t.Helper()
	got, err := f.conn.Create(p, data, flags, open)
	if err != nil {
		f.t.Fatalf("create %s: %v", p, err)
	}
	return got
}

// sign writes the signature of node p, holding data, by s under domain.
func (f *forger) sign(p, domain string, data []byte, s *provenance.Signer) {
	f.t.Helper()
	testutil.SignNode(f.t, f.conn, p, domain, data, s)
}

func (f *forger) sigOf(p string) []byte {
	f.t.Helper()
	sig, _, err := f.conn.Get(p + "/sig")
	if err != nil {
		f.t.Fatal(err)
	}
	return sig
}

// stranger is a key no signers file lists (a stolen worker credential can make one).
func stranger(t *testing.T) *provenance.Signer {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return provenance.NewKeySigner(priv)
}

// forgeTasks writes the forged tasks, by what was forged, and returns them with the
// signed tasks beside them (open to all, and a donor whose signature is replayed).
func (f *forger) forgeTasks() (forged map[string]string, good []string) {
	f.t.Helper()
	l, sub := f.l, f.keys(coordinator.RoleSubmitter)
	newTask := func(token string) (string, []byte) {
		data := f.spec(token)
		return f.create(l.Task("task-"), data, zk.FlagSequence), data
	}
	forged = map[string]string{}
	p, _ := newTask("unsigned")
	forged["unsigned"] = p
	p, data := newTask("unlisted key")
	f.sign(p, task.SpecDomain, data, stranger(f.t))
	forged["unlisted key"] = p
	if w := f.keys(coordinator.RoleWorker); w != nil {
		p, data = newTask("worker's key")
		f.sign(p, task.SpecDomain, data, w)
		forged["worker's key"] = p
	}
	p, data = newTask("signed as a job")
	f.sign(p, task.JobDomain, data, sub)
	forged["signed as a job"] = p
	p, data = newTask("altered spec")
	f.sign(p, task.SpecDomain, data, sub)
	if _, err := f.conn.Set(p, f.spec("altered spec, changed after signing"), -1); err != nil {
		f.t.Fatal(err)
	}
	forged["altered spec"] = p
	p, data = newTask("altered signature")
	f.sign(p, task.SpecDomain, data, sub)
	sig := f.sigOf(p)
	sig[len(sig)/2] ^= 0x20
	if _, err := f.conn.Set(p+"/sig", sig, -1); err != nil {
		f.t.Fatal(err)
	}
	forged["altered signature"] = p
	donor, data := newTask("donor")
	f.sign(donor, task.SpecDomain, data, sub)
	replayed := f.create(l.Task("task-"), data, zk.FlagSequence) // the donor's very bytes
	f.create(replayed+"/sig", f.sigOf(donor), 0)
	forged["replayed onto another node"] = replayed
	good1, data := newTask("good, open to all")
	f.sign(good1, task.SpecDomain, data, sub)
	for name, p := range forged {
		forged[name] = path.Base(p)
	}
	return forged, []string{path.Base(donor), path.Base(good1)}
}

// forgeJobs writes the forged jobs and a signed one, "good", and returns the forged
// ones' names.
func (f *forger) forgeJobs() []string {
	f.t.Helper()
	l, sub := f.l, f.keys(coordinator.RoleSubmitter)
	put := func(name string) []byte {
		data := f.job(name)
		f.create(l.Job(name), data, 0)
		return data
	}
	f.sign(l.Job("good"), task.JobDomain, put("good"), sub)
	put("unsigned")
	f.sign(l.Job("unlisted-key"), task.JobDomain, put("unlisted-key"), stranger(f.t))
	f.sign(l.Job("signed-as-a-task"), task.SpecDomain, put("signed-as-a-task"), sub)
	names := []string{"unsigned", "unlisted-key", "signed-as-a-task", "altered", "replayed"}
	for _, role := range []string{coordinator.RoleWorker, coordinator.RoleMaster} {
		if k := f.keys(role); k != nil {
			f.sign(l.Job(role+"-key"), task.JobDomain, put(role+"-key"), k)
			names = append(names, role+"-key")
		}
	}
	f.sign(l.Job("altered"), task.JobDomain, put("altered"), sub)
	if _, err := f.conn.Set(l.Job("altered"), f.job("altered-after-signing"), -1); err != nil {
		f.t.Fatal(err)
	}
	// The good job's definition but for the name its runs touch: the same bytes.
	f.create(l.Job("replayed"), f.job("good"), 0)
	f.create(l.JobSig("replayed"), f.sigOf(l.Job("good")), 0)
	return names
}

// check waits for the signed tasks and the good job to run, and checks that no forged
// task or job ran, that each forged task ended failed, not signed by a trusted
// submitter (the unsigned one once its grace is over, if unsignedEnds), and that no
// forged job has a fire on record.
func (f *forger) check(c *task.Client, forged map[string]string, good, jobs []string, unsignedEnds bool, logs func() string) {
	f.t.Helper()
	ran := func(name string) bool { _, err := os.Stat(filepath.Join(f.marker, name)); return err == nil }
	testutil.Eventually(f.t, 60*time.Second, 50*time.Millisecond, func() bool {
		return ran(good[0]) && ran(good[1]) && ran("job-good")
	}, "the signed tasks and the signed job ran:\n%s", logs())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for name, id := range forged {
		if name == "unsigned" && !unsignedEnds {
			// Held back while its grace lasts, or ended for want of a signature since.
			tk, err := c.Get(ctx, id)
			if err != nil || tk.State != task.Pending && (tk.State != task.Failed || !strings.Contains(tk.Status.Error, "not signed")) {
				f.t.Errorf("the unsigned task %s: %+v, %v; want it held pending, or failed unsigned", id, tk, err)
			}
			continue
		}
		tk, err := c.Wait(ctx, id)
		if err != nil || tk.State != task.Failed || !strings.Contains(tk.Status.Error, "not signed by a trusted submitter") {
			f.t.Errorf("forged task %q (%s): %+v, %v; want failed, not signed by a trusted submitter", name, id, tk, err)
		}
	}
	for name, id := range forged {
		if ran(id) {
			f.t.Errorf("forged task %q (%s) ran", name, id)
		}
	}
	for _, name := range jobs {
		if ran("job-" + name) {
			f.t.Errorf("forged job %s ran", name)
		}
		if names, _, err := f.conn.Children(f.l.Fires(name)); err == nil && len(names) > 0 {
			f.t.Errorf("forged job %s fired: %v", name, names)
		}
	}
}

// TestProvenanceOnUp: on paddock up, whatever the nodes' ACLs (the admin, the
// superuser, writes them all open), only what a trusted key signed runs: unsigned,
// wrongly signed, altered and replayed tasks and jobs never do; the attacks 4
// and 5 are refused at their first step; no unauthenticated client can change the root
// znode, a service's root or the quotas.
func TestProvenanceOnUp(t *testing.T) {
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	up, err := testutil.StartChild(t, filepath.Join(dir, "up.log"), nil, paddock.Path(t),
		"up", "--data-dir", data, "--client-addr", addr, "--admin-addr=", "--metrics-port", "0", "--listen", "127.0.0.1:0",
		"--allow-root") // the signed tasks mark the test's own directory, root's alone (TestUp runs them as nobody)
	if err != nil {
		t.Fatal(err)
	}
	admin := upSession(t, up, addr, data, coordinator.RoleAdmin)
	console := upSession(t, up, addr, data, coordinator.RoleConsole)
	sub := upSession(t, up, addr, data, coordinator.RoleSubmitter)
	worker := upSession(t, up, addr, data, coordinator.RoleWorker)
	l := task.DefaultLayout
	anon := anonymous(t, addr)
	upRootsClosed(t, anon, l)
	upAttack4(t, anon, l)
	upAttack5(t, worker, sub, l)

	// Hold the workers while the forgeries are written, so that none is read half made.
	cc := task.NewClient(console, l)
	ctx := context.Background()
	workers := []string{"up-worker-1", "up-worker-2"}
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		ws, _, err := admin.Conn().Children(l.Workers())
		return err == nil && len(ws) == 2
	}, "two workers register")
	for _, w := range workers {
		if err := cc.Drain(ctx, w, task.DrainRequest{By: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	keys := map[string]*provenance.Signer{}
	for _, role := range []string{coordinator.RoleSubmitter, coordinator.RoleMaster} {
		s, err := provenance.LoadKey(filepath.Join(data, "credentials", role+".key"))
		if err != nil {
			t.Fatal(err)
		}
		keys[role] = s
	}
	f := &forger{t: t, conn: admin.Conn(), l: l, keys: func(r string) *provenance.Signer { return keys[r] }, marker: t.TempDir()}
	forged, good := f.forgeTasks()
	jobs := f.forgeJobs()
	for _, w := range workers {
		if err := cc.Undrain(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	// paddock up's master gives an unsigned task 30 s: here it is only seen held back.
	f.check(task.NewClient(sub, l), forged, good, jobs, false, func() string { return up.LogTail(30) })
	if err := up.Stop(20 * time.Second); err != nil {
		t.Fatalf("paddock up after SIGTERM: %v\n%s", err, up.LogTail(20))
	}
}

// upRootsClosed: an unauthenticated client can read the root znode and create a node
// beside the services', and cannot delete, write, re-ACL or add to any service root,
// change the root's ACL, or set a quota.
func upRootsClosed(t *testing.T, anon *zk.Conn, l task.Layout) {
	t.Helper()
	if _, _, err := anon.Children("/"); err != nil {
		t.Errorf("unauthenticated list of /: %v", err)
	}
	if _, err := anon.Create("/someapp", nil, 0, open); err != nil {
		t.Errorf("unauthenticated create of a top-level node: %v", err)
	}
	roots := append(l.Dirs(), "/mysql_replicator", "/logs", "/paddock")
	for _, p := range append(roots, "/") {
		if _, err := anon.SetACL(p, open, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("unauthenticated setACL of %s: %v, want %v", p, err, zk.ErrNoAuth)
		}
	}
	for _, p := range roots {
		if err := anon.Delete(p, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("unauthenticated delete of %s: %v, want %v", p, err, zk.ErrNoAuth)
		}
		if _, err := anon.Set(p, []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("unauthenticated write of %s: %v, want %v", p, err, zk.ErrNoAuth)
		}
		if _, err := anon.Create(p+"/x", nil, 0, open); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("unauthenticated create under %s: %v, want %v", p, err, zk.ErrNoAuth)
		}
	}
	// The quotas: readable, set by the admin alone (zkCli's setquota makes these nodes).
	if _, _, err := anon.Children("/zookeeper/quota"); err != nil {
		t.Errorf("unauthenticated read of the quotas: %v", err)
	}
	if _, err := anon.Create("/zookeeper/quota/someapp", nil, 0, open); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated quota: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := anon.Set("/zookeeper/quota", []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated write of /zookeeper/quota: %v, want %v", err, zk.ErrNoAuth)
	}
}

// upAttack4 replays the attack 4: one unauthenticated multi deletes the empty
// /jobs, makes it again open and creates a job that gives nobody write or admin. The
// root's ACL refuses the delete, and nothing of the multi is applied.
func upAttack4(t *testing.T, anon *zk.Conn, l task.Layout) {
	t.Helper()
	evil, _ := json.Marshal(task.Job{Task: task.Spec{Command: "sh", Args: []string{"-c", "touch /tmp/pwned-attack4"}},
		Schedule: "* * * * * *", Enabled: true, EnabledSince: time.Now().UTC()})
	for _, dir := range []string{l.Jobs(), l.Tasks()} {
		child := l.Job("evil")
		if dir == l.Tasks() {
			child = l.Task("task-0000000000")
		}
		_, err := anon.Multi(&zk.DeleteRequest{Path: dir, Version: -1},
			&zk.CreateRequest{Path: dir, Acl: open},
			&zk.CreateRequest{Path: child, Data: evil, Acl: zk.WorldACL(zk.PermRead)})
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("attack 4 on %s: %v, want %v", dir, err, zk.ErrNoAuth)
		}
	}
}

// upAttack5 replays the attack 5 with the worker's credential: setACL of a
// pending task to itself, a new command, setACL back. The worker holds no ADMIN, so
// the first step is refused, and so is the write.
func upAttack5(t *testing.T, worker, sub *coordinator.Session, l task.Layout) {
	t.Helper()
	// A pending task nothing runs: its selector matches no worker.
	id, err := task.NewClient(sub, l).Submit(context.Background(), task.Spec{Command: "true", Selector: task.Selector{"nowhere": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	wc := worker.Conn()
	acl, stat, err := wc.GetACL(l.Task(id))
	if err != nil {
		t.Fatal(err)
	}
	self := worker.ACLFor(l.Task(id))
	if _, err := wc.SetACL(l.Task(id), self, stat.Aversion); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("attack 5: the worker's setACL of %s: %v, want %v", id, err, zk.ErrNoAuth)
	}
	if _, err := wc.Set(l.Task(id), []byte(`{"command":"sh","args":["-c","touch /tmp/pwned-attack5"]}`), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("attack 5: the worker's write of %s: %v, want %v", id, err, zk.ErrNoAuth)
	}
	if _, err := wc.SetACL(l.Task(id), acl, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("attack 5: the worker's setACL back: %v, want %v", err, zk.ErrNoAuth)
	}
	if err := task.NewClient(sub, l).Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// TestProvenanceOnZooKeeper: with Apache ZooKeeper 3.8 as the backend and no ACLs at all
// (every node open to all), masters and workers that trust only their signers file run
// nothing but what a trusted key signed: a signed task re-created under the same name
// in a re-created /tasks, with its old signature, never runs; neither do the forged
// tasks and jobs, nor the attacks 4 and 5 replayed step by step.
func TestProvenanceOnZooKeeper(t *testing.T) {
	z, err := testutil.StartZooKeeper(t, testutil.ZooKeeperOptions{TickTime: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := newClusterOn(t, z.Addr)
	l := c.layout
	anonConn := anonymous(t, z.Addr)
	marker := t.TempDir()
	f := &forger{t: t, conn: anonConn, l: l, keys: c.keys.Signer, marker: marker}
	ctx := context.Background()

	// Before any master: a signed task in a fresh /tasks, then /tasks deleted and made
	// again, the task made again under its name (sequence numbers restart) with its
	// bytes and its signature.
	first, err := c.client.Submit(ctx, task.Spec{Command: "sh", Args: []string{"-c", `touch "$M/$PADDOCK_TASK_ID"`},
		Env: map[string]string{"M": marker}})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := anonConn.Get(l.Task(first))
	sig := f.sigOf(l.Task(first))
	for _, p := range []string{l.TaskSig(first), l.Task(first), l.Tasks()} {
		if err := anonConn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	f.create(l.Tasks(), nil, 0)
	if again := path.Base(f.create(l.Task("task-"), spec, zk.FlagSequence)); again != first {
		t.Fatalf("the re-created task is %s, not %s", again, first)
	}
	f.create(l.TaskSig(first), sig, 0)

	// Attack 4, step by step: the jobs' directory deleted, made again open, a job
	// whose ACL gives nobody write or admin.
	f.create(l.Jobs(), nil, 0)
	if err := anonConn.Delete(l.Jobs(), -1); err != nil {
		t.Fatal(err)
	}
	f.create(l.Jobs(), nil, 0)
	if _, err := anonConn.Create(l.Job("attack4"), f.job("attack4"), 0, zk.WorldACL(zk.PermRead)); err != nil {
		t.Fatal(err)
	}
	// Attack 5, step by step: a signed task's ACL given to one identity, its command
	// changed, its ACL given back.
	a5, err := c.client.Submit(ctx, task.Spec{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	worker := zk.DigestACL(zk.PermAll, "worker", "pw")
	if _, err := anonConn.SetACL(l.Task(a5), worker, -1); err != nil {
		t.Fatal(err)
	}
	if err := anonConn.AddAuth("digest", []byte("worker:pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := anonConn.Set(l.Task(a5), f.spec("attack5"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := anonConn.SetACL(l.Task(a5), open, -1); err != nil {
		t.Fatal(err)
	}

	forged, good := f.forgeTasks()
	forged["re-created under its name"], forged["attack 5"] = first, a5
	jobs := append(f.forgeJobs(), "attack4")
	c.startMaster("m1", "--sign-grace", "2s")
	c.startWorker("w1", 4)
	f.check(c.client, forged, good, jobs, true, c.logTails)
}
