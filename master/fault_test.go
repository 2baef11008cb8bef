package master

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/backoff"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// The platform's roles as the role tests have them: each role a digest identity whose
// password is pw-<role>.
var testRoles = []string{coordinator.RoleConsole, coordinator.RoleMaster, coordinator.RoleWorker, coordinator.RoleSubmitter}

func roleEntries() []string {
	var out []string
	for _, r := range testRoles {
		out = append(out, r+"=digest:"+coordinator.DigestID(r, "pw-"+r))
	}
	return out
}

func roleAccess(role string) coordinator.Access {
	return coordinator.Access{Auth: []string{"digest:" + role + ":pw-" + role}, Roles: roleEntries()}
}

// newRoleCluster is newCluster under role ACLs: the test's own session (c.s, c.client)
// is the console's, and as opens a session as another role.
func newRoleCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t, addr: testutil.StartPaddock(t, nil), layout: task.DefaultLayout, roles: true, keys: testutil.NewKeys(t)}
	c.s = c.as(coordinator.RoleConsole)
	c.client = task.NewClient(c.s, c.layout)
	return c
}

// as opens a session as role, its nodes getting the role ACLs.
func (c *cluster) as(role string) *coordinator.Session {
	c.t.Helper()
	cc, err := roleAccess(role).Config([]string{c.addr}, 2*time.Second, nil, c.layout.ACLRules())
	if err != nil {
		c.t.Fatal(err)
	}
	cc.Signer, cc.Trust = c.keys.Signer(role), c.keys.Trust() // nil for a role without a key
	s, err := coordinator.Connect(context.Background(), cc)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { s.Close() })
	return s
}

// digestACL is an ACL entry for role's identity.
func digestACL(role string, perms int32) zk.ACL {
	return zk.ACL{Perms: perms, Scheme: "digest", ID: coordinator.DigestID(role, "pw-"+role)}
}

// masterCzxid waits for master id to be active and returns the czxid of /master: the
// same one for the whole test says the master never gave it up.
func (c *cluster) masterCzxid(id string) int64 {
	c.t.Helper()
	var czxid int64
	testutil.Eventually(c.t, wait, 10*time.Millisecond, func() bool {
		data, st, err := c.s.Conn().Get(c.layout.Master())
		var info task.MasterInfo
		if err != nil || json.Unmarshal(data, &info) != nil || info.ID != id || info.Epoch == 0 {
			return false
		}
		czxid = st.Czxid
		return true
	}, "master %s never active", id)
	return czxid
}

// metric reads one sample of the master's /metrics (0 if absent).
func metric(t *testing.T, m *Master, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	match := re.FindStringSubmatch(metricsText(t, m))
	if match == nil {
		return 0
	}
	v, err := strconv.ParseFloat(match[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", series, err)
	}
	return v
}

// fault reads an item's fault record; nil if there is none.
func (c *cluster) fault(p string) *task.Fault {
	c.t.Helper()
	data, _, err := c.s.Conn().Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		c.t.Fatalf("read %s: %v", p, err)
	}
	var f task.Fault
	if err := json.Unmarshal(data, &f); err != nil {
		c.t.Fatalf("%s: %v", p, err)
	}
	return &f
}

// keepsAssigning submits a task and waits for the master to give it to w, then ends it
// as w: a master that lost mastership, or stepped in a loop, does not assign it. t is
// the (sub)test that fails if not.
func (c *cluster) keepsAssigning(t *testing.T, sub *task.Client, w *fakeWorker) {
	t.Helper()
	id, err := sub.Submit(context.Background(), task.Spec{Command: "true"})
	if err != nil {
		t.Fatalf("submit the probe: %v", err)
	}
	testutil.Eventually(t, 3*wait, 10*time.Millisecond, func() bool { _, ok := w.assignments()[id]; return ok },
		"the master did not assign %s", id)
	if err := w.finish(id, 0, false); err != nil {
		t.Fatalf("end the probe %s: %v", id, err)
	}
}

// checkOneTerm fails the test unless m is active in its first and only term, in
// /master since czxid.
func (c *cluster) checkOneTerm(m *Master, czxid int64) {
	c.t.Helper()
	if got := c.masterCzxid(m.ID()); got != czxid {
		c.t.Errorf("/master re-created (czxid %#x, first %#x): mastership was given up", got, czxid)
	}
	if n := metric(c.t, m, "paddock_master_terms_total"); n != 1 {
		c.t.Errorf("paddock_master_terms_total %v, want 1", n)
	}
}

// triesBound is how many tries the backoff allows an item in d: the floors of its waits
// summed pass d after that many.
func triesBound(d time.Duration) int {
	n, spent := 1, time.Duration(0)
	for ; spent <= d; n++ {
		spent += backoff.Default.Delay(n, 0)
	}
	return n
}

// TestUnfireableJobKeepsMastership replays issue 31's attack 7 on the master, set up by a
// submitter alone: its job, written as CreateJob writes it, with a fires directory made
// so that the master may only read it. The landed master gave up and retook mastership
// 3,208 times in 20 s, assigning nothing. Now the job is in error, with its reason, in
// /faults/jobs/<job>, tried again only with the backoff; the master keeps its one term
// and goes on assigning; a change of the job tries it at once, and once it fires the
// record is gone.
func TestUnfireableJobKeepsMastership(t *testing.T) {
	c := newRoleCluster(t)
	m, _ := c.startMaster("m1")
	czxid := c.masterCzxid("m1")
	w := c.roleWorker("w1", 100)
	subSession := c.as(coordinator.RoleSubmitter)
	sub := task.NewClient(subSession, c.layout)
	ctx := context.Background()

	job := task.Job{Name: "every", Task: task.Spec{Command: "true"}, Schedule: "@every 1s", Enabled: true}
	if err := sub.CreateJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	// The submitter may delete the fires directory (it deletes a job's records before
	// the job) and create children of its job: a directory the master cannot write in.
	conn := subSession.Conn()
	if err := conn.Delete(c.layout.Fires("every"), -1); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if _, err := conn.Create(c.layout.Fires("every"), nil, 0,
		[]zk.ACL{digestACL(coordinator.RoleSubmitter, zk.PermAll), digestACL(coordinator.RoleMaster, zk.PermRead)}); err != nil {
		t.Fatal(err)
	}
	var f *task.Fault
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		f = c.fault(c.layout.JobFault("every"))
		return f != nil && f.Tries >= 3
	}, "the job is not recorded in error three times")
	if f.Kind != task.FaultJob || f.Name != "every" || f.Step != "fire" || !strings.Contains(f.Error, "not authenticated") ||
		f.Master != "m1" || !f.Next.After(f.Last) {
		t.Errorf("fault %+v: want job every at step fire, not authenticated, by m1, a next try after the last", f)
	}
	for range 3 {
		c.keepsAssigning(t, sub, w)
	}
	elapsed := time.Since(began)
	tries := int(metric(t, m, `paddock_master_item_errors_total{kind="job",step="fire"}`))
	if bound := triesBound(elapsed); tries > bound {
		t.Errorf("the job was tried %d times in %v: the backoff allows %d", tries, elapsed, bound)
	}
	if n := metric(t, m, `paddock_master_items_in_error{kind="job"}`); n != 1 {
		t.Errorf("paddock_master_items_in_error{kind=\"job\"} %v, want 1", n)
	}
	if v, err := c.client.GetJob(ctx, "every"); err != nil || v.Fault == nil || v.Fault.Step != "fire" {
		t.Errorf("GetJob: %+v, %v; want the fault in the view", v, err)
	}

	// The submitter mends it: the directory goes, and a change of the job tries it at once.
	if err := conn.Delete(c.layout.Fires("every"), -1); err != nil {
		t.Fatal(err)
	}
	job.Schedule = "@every 2s"
	if err := sub.UpdateJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		return c.fault(c.layout.JobFault("every")) == nil && len(c.fires("every")) > 0
	}, "the mended job is still in error, or fired nothing")
	c.checkOneTerm(m, czxid)
}

// TestOperatorClearsJobFault: a job the master cannot read (its node's ACL leaves the
// master out, as its submitter may make it) is in error; an operator's clear tries it
// again at once, and the failure is recorded anew, from its first try.
func TestOperatorClearsJobFault(t *testing.T) {
	c := newRoleCluster(t)
	m, _ := c.startMaster("m1")
	czxid := c.masterCzxid("m1")
	subSession := c.as(coordinator.RoleSubmitter)
	if err := subSession.MakeDirs(context.Background(), c.layout.Jobs()); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(task.Job{Task: task.Spec{Command: "true"}, Schedule: "@every 1s", Enabled: true})
	if _, err := subSession.Conn().Create(c.layout.Job("hidden"), data, 0,
		[]zk.ACL{digestACL(coordinator.RoleSubmitter, zk.PermAll), digestACL(coordinator.RoleConsole, zk.PermRead)}); err != nil {
		t.Fatal(err)
	}
	var f *task.Fault
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		f = c.fault(c.layout.JobFault("hidden"))
		return f != nil && f.Tries >= 2
	}, "the unreadable job is not recorded in error twice")
	if f.Step != "read" || !strings.Contains(f.Error, "not authenticated") {
		t.Errorf("fault %+v: want step read, not authenticated", f)
	}
	cleared := time.Now()
	if err := c.client.ClearJobFault(context.Background(), "hidden"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		f = c.fault(c.layout.JobFault("hidden"))
		return f != nil && f.Tries == 1 && !f.Since.Before(cleared.Add(-time.Second))
	}, "the cleared job was not tried again at once")
	c.checkOneTerm(m, czxid)
}

// roleWorker registers a worker by hand under role ACLs, as the worker role.
func (c *cluster) roleWorker(id string, capacity int) *fakeWorker {
	c.t.Helper()
	w := &fakeWorker{c: c, id: id, s: c.as(coordinator.RoleWorker)}
	ctx := context.Background()
	for _, dir := range []string{c.layout.AssignDir(id), c.layout.Workers()} {
		if err := w.s.MakeDirs(ctx, dir); err != nil {
			c.t.Fatal(err)
		}
	}
	info, _ := json.Marshal(task.WorkerInfo{Capacity: capacity, Started: time.Now()})
	if _, err := w.s.Conn().Create(c.layout.Worker(id), info, zk.FlagEphemeral, w.s.ACLFor(c.layout.Worker(id))); err != nil {
		c.t.Fatal(err)
	}
	return w
}

// refuse hands an assigned task back as refused, as a worker does.
func (w *fakeWorker) refuse(id string, ran bool, why string) {
	w.c.t.Helper()
	a := w.assignments()[id]
	rec, _ := json.Marshal(task.Refusal{Task: id, Worker: w.id, Attempt: a.Attempt, Ran: ran, Error: why, At: time.Now()})
	p := w.c.layout.Refusal(w.id, id)
	res, err := w.s.Conn().Multi(&zk.DeleteRequest{Path: w.c.layout.Assignment(w.id, id), Version: -1},
		&zk.CreateRequest{Path: p, Data: rec, Acl: w.s.ACLFor(p)})
	for _, r := range res {
		if r.Error != nil {
			err = r.Error
		}
	}
	if err != nil {
		w.c.t.Fatalf("refuse %s: %v", id, err)
	}
}

// TestRefusedTaskEndsFailed: a task its worker refused is ended failed by the master,
// naming the worker and why, and the refusal goes with it; it is not assigned again.
func TestRefusedTaskEndsFailed(t *testing.T) {
	c := newCluster(t)
	m, _ := c.startMaster("m1")
	w := c.worker("w1", 4)
	id := c.submit(task.Spec{Command: "true"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w.assignments()[id]; return ok }, "assigned")
	w.refuse(id, true, "record the outcome: zk: not authenticated")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tk, err := c.client.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != task.Failed || tk.Status.Worker != "w1" || tk.Status.Attempts != 1 ||
		!strings.Contains(tk.Status.Error, "worker w1 ran it but could not record its outcome: record the outcome: zk: not authenticated") {
		t.Fatalf("refused task: %s, %+v; want failed by w1 after one run, saying why", tk.State, tk.Status)
	}
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		ok, _, _ := c.s.Conn().Exists(c.layout.Refusal("w1", id))
		return !ok && metric(t, m, "paddock_master_refused_tasks_total") == 1
	}, "the refusal is still there, or not counted")
	if _, ok := w.assignments()[id]; ok {
		t.Fatal("the refused task was assigned again")
	}
}

// TestUnendableTaskInError: a task the worker refused and the master cannot end either
// (its node, world:anyone:r, lets no one create under it) is in error in
// /faults/tasks/<task>, never assigned again, while the master keeps its term and
// assigns the others; deleting the task clears it.
func TestUnendableTaskInError(t *testing.T) {
	c := newCluster(t)
	m, _ := c.startMaster("m1")
	czxid := c.masterCzxid("m1")
	w := c.worker("w1", 4)
	if err := c.s.MakeDirs(context.Background(), c.layout.Tasks()); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(task.Spec{Command: "true", Submitted: time.Now()})
	// Signed, then made writable by none: a submitter's own choice for its task.
	p, err := c.s.Conn().Create(c.layout.Task("task-"), spec, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	c.signNode(p, task.SpecDomain, spec, c.keys.Signer(coordinator.RoleSubmitter))
	// The test keeps the right to delete it (as its owner); the master and the worker read.
	if err := c.s.Conn().AddAuth("digest", []byte("owner:pw")); err != nil {
		t.Fatal(err)
	}
	acl := append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "owner", "pw")...)
	if _, err := c.s.Conn().SetACL(p, acl, -1); err != nil {
		t.Fatal(err)
	}
	id := path.Base(p)
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w.assignments()[id]; return ok }, "assigned")
	w.refuse(id, true, "zk: not authenticated")
	var f *task.Fault
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		f = c.fault(c.layout.TaskFault(id))
		return f != nil && f.Tries >= 2
	}, "the unendable task is not recorded in error twice")
	if f.Step != "end" || !strings.Contains(f.Error, "not authenticated") {
		t.Errorf("fault %+v: want step end, not authenticated", f)
	}
	c.keepsAssigning(t, c.client, w)
	if _, ok := w.assignments()[id]; ok {
		t.Fatal("the refused task was assigned again")
	}
	for _, q := range []string{c.layout.TaskSig(id), p} {
		if err := c.s.Conn().Delete(q, -1); err != nil {
			t.Fatal(err)
		}
	}
	c.submit(task.Spec{Command: "true"}) // a change of /tasks: the master reads it again
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { return c.fault(c.layout.TaskFault(id)) == nil },
		"the deleted task is still in error")
	c.checkOneTerm(m, czxid)
}

// TestUnreadableWorkerKeepsItsTasks: a worker whose registration the master cannot read
// (its ACL changed under it) is in error, not gone: its assignments stand, it gets
// nothing new while the others do, and once readable it gets work again.
func TestUnreadableWorkerKeepsItsTasks(t *testing.T) {
	c := newCluster(t)
	m, _ := c.startMaster("m1")
	czxid := c.masterCzxid("m1")
	w1 := c.worker("w1", 4)
	first := c.submit(task.Spec{Command: "true"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w1.assignments()[first]; return ok }, "assigned to w1")
	if _, err := w1.s.Conn().SetACL(c.layout.Worker("w1"), zk.WorldACL(zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	w2 := c.worker("w2", 4) // a change of /workers: the master reads the registrations again
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		return metric(t, m, `paddock_master_items_in_error{kind="worker"}`) == 1
	}, "w1 not in error")
	second := c.submit(task.Spec{Command: "true"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w2.assignments()[second]; return ok }, "assigned to w2")
	if _, ok := w1.assignments()[first]; !ok {
		t.Fatal("the unreadable worker's assignment was taken back")
	}
	if tk, err := c.client.Get(context.Background(), first); err != nil || len(tk.History) != 0 {
		t.Fatalf("the unreadable worker's task: %+v, %v; want no lost run", tk, err)
	}
	if _, err := w1.s.Conn().SetACL(c.layout.Worker("w1"), zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 3*wait, 10*time.Millisecond, func() bool {
		return metric(t, m, `paddock_master_items_in_error{kind="worker"}`) == 0
	}, "w1 still in error once readable")
	c.checkOneTerm(m, czxid)
}

// TestEndedTaskFreesItsSlot: a task whose status someone else wrote while it was
// assigned (its submitter may) leaves its assignment to the master, which takes it back:
// the slot is not held for ever.
func TestEndedTaskFreesItsSlot(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	w := c.worker("w1", 1)
	id := c.submit(task.Spec{Command: "true"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w.assignments()[id]; return ok }, "assigned")
	st, _ := json.Marshal(task.Status{State: task.Done, Finished: time.Now()})
	if _, err := c.s.Conn().Create(c.layout.Status(id), st, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	next := c.submit(task.Spec{Command: "true"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		a := w.assignments()
		_, old := a[id]
		_, ok := a[next]
		return !old && ok
	}, "the ended task's slot not given to the next")
}
