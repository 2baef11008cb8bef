package master

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/provenance"
	"github.com/paddock/paddock/task"
)

// forge creates a task node open to all holding spec, and, unless role is "", a
// signature of it by role's key; it returns the task's id.
func (c *cluster) forge(spec task.Spec, role string) string {
	c.t.Helper()
	if err := c.s.MakeDirs(context.Background(), c.layout.Tasks()); err != nil {
		c.t.Fatal(err)
	}
	data, _ := json.Marshal(spec)
	p, err := c.s.Conn().Create(c.layout.Task("task-"), data, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		c.t.Fatal(err)
	}
	if role != "" {
		c.signNode(p, task.SpecDomain, data, c.keys.Signer(role))
	}
	return path.Base(p)
}

// signNode writes the signature of data, node p's, under domain by s as p's sig child.
func (c *cluster) signNode(p, domain string, data []byte, s *provenance.Signer) {
	c.t.Helper()
	testutil.SignNode(c.t, c.s.Conn(), p, domain, data, s)
}

func (c *cluster) status(id string) task.Status {
	c.t.Helper()
	var st task.Status
	testutil.Eventually(c.t, wait, 10*time.Millisecond, func() bool {
		data, _, err := c.s.Conn().Get(c.layout.Status(id))
		return err == nil && json.Unmarshal(data, &st) == nil
	}, "task %s ended", id)
	return st
}

// TestAssignsOnlySignedTasks: the master assigns a task only once its spec's
// signature verifies against a key trusted for submitting, whatever its ACL; a badly
// signed task is ended failed at once, and an unsigned one once its grace is over, by
// the servers' clock, with the reason, neither ever assigned; a task signed within the
// grace is assigned.
func TestAssignsOnlySignedTasks(t *testing.T) {
	c := newCluster(t)
	w := c.worker("w1", 10)
	c.startMaster("m1", func(cfg *Config) { cfg.SignGrace = 2 * time.Second })
	spec := task.Spec{Command: "true"}
	workerSigned := c.forge(spec, coordinator.RoleWorker)
	unsigned := c.forge(spec, "")
	good := c.forge(spec, coordinator.RoleSubmitter)
	late := c.forge(task.Spec{Command: "true", Token: "late"}, "")
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w.assignments()[good]; return ok },
		"the signed task assigned")
	st := c.status(workerSigned)
	if st.State != task.Failed || !strings.Contains(st.Error, "task not signed by a trusted submitter, not run") ||
		!strings.Contains(st.Error, "worker") {
		t.Errorf("a task a worker's key signed: %+v", st)
	}
	data, _, _ := c.s.Conn().Get(c.layout.Task(late))
	c.signNode(c.layout.Task(late), task.SpecDomain, data, c.keys.Signer(coordinator.RoleConsole))
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w.assignments()[late]; return ok },
		"the task signed within its grace assigned")
	st = c.status(unsigned)
	if st.State != task.Failed || !strings.Contains(st.Error, "not signed by a trusted submitter within 2s") {
		t.Errorf("an unsigned task: %+v", st)
	}
	for _, id := range []string{workerSigned, unsigned} {
		if _, ok := w.assignments()[id]; ok {
			t.Errorf("%s was assigned", id)
		}
	}
}

// TestFiresOnlySignedJobs: the master fires a job only while its definition's
// signature verifies against a key trusted for jobs — not an unsigned one, one signed
// by a worker's or the master's own key, one changed after signing, or one carrying
// another job's signature — and signs each fire's task itself; a job signed after it
// was created fires.
func TestFiresOnlySignedJobs(t *testing.T) {
	c := newCluster(t)
	conn := c.s.Conn()
	put := func(name string) []byte {
		t.Helper()
		j := everySecond(name, task.ConcurrencyAllow)
		j.EnabledSince = time.Now().UTC()
		data, _ := json.Marshal(j)
		if _, err := conn.Create(c.layout.Job(name), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		return data
	}
	if err := c.s.MakeDirs(context.Background(), c.layout.Jobs()); err != nil {
		t.Fatal(err)
	}
	put("unsigned")
	for _, role := range []string{coordinator.RoleWorker, coordinator.RoleMaster} {
		data := put(role + "-signed")
		c.signNode(c.layout.Job(role+"-signed"), task.JobDomain, data, c.keys.Signer(role))
	}
	_, stranger, _ := ed25519.GenerateKey(nil)
	c.signNode(c.layout.Job("stranger"), task.JobDomain, put("stranger"), provenance.NewKeySigner(stranger))
	c.putJob(everySecond("altered", task.ConcurrencyAllow))
	evil, _ := json.Marshal(task.Job{Task: task.Spec{Command: "sh", Args: []string{"-c", "touch /tmp/pwned"}},
		Schedule: "* * * * * *", Enabled: true, EnabledSince: time.Now().UTC()})
	if _, err := conn.Set(c.layout.Job("altered"), evil, -1); err != nil {
		t.Fatal(err)
	}
	c.putJob(everySecond("donor", task.ConcurrencyAllow))
	put("replayed")
	donorSig, _, _ := conn.Get(c.layout.JobSig("donor"))
	if _, err := conn.Create(c.layout.JobSig("replayed"), donorSig, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	late := put("late")
	c.startMaster("m1")
	testutil.Eventually(t, wait, 20*time.Millisecond, func() bool { return len(c.fires("donor")) >= 2 }, "the signed job fired")
	c.signNode(c.layout.Job("late"), task.JobDomain, late, c.keys.Signer(coordinator.RoleAdmin))
	testutil.Eventually(t, wait, 20*time.Millisecond, func() bool { return len(c.fires("late")) >= 1 },
		"the job signed after its creation fired")
	for _, name := range []string{"unsigned", "worker-signed", "master-signed", "stranger", "altered", "replayed"} {
		if f := c.fires(name); len(f) != 0 {
			t.Errorf("job %s fired: %+v", name, f)
		}
	}
	// The fire's task carries the master's signature.
	testutil.Eventually(t, wait, 20*time.Millisecond, func() bool { return c.fires("donor")[0].Task != "" }, "the fire linked")
	id := c.fires("donor")[0].Task
	data, st, err := conn.Get(c.layout.Task(id))
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := task.ReadSig(conn, c.layout.TaskSig(id))
	if signed, err := task.VerifySpec(c.keys.Trust(), st.Czxid, data, sig); err != nil || signed.Role != coordinator.RoleMaster {
		t.Errorf("the fire's task %s: signed %+v, %v; want the master's signature", id, signed, err)
	}
}

// TestUnsignedTasksHoldNothing: a task nobody signed changes nothing for the signed
// ones, whatever it names: one naming a job does not count as the job's run (its first
// fire starts, concurrency skip notwithstanding), and one bearing the name of a DAG's
// task does not stand in for it (the DAG's child runs once the real parent is done).
func TestUnsignedTasksHoldNothing(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	ids, err := c.client.SubmitDAG(ctx, []task.DAGNode{{Name: "a", Spec: task.Spec{Command: "true"}},
		{Name: "b", Spec: task.Spec{Command: "true"}, After: []string{"a"}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.client.Get(ctx, ids["a"])
	if err != nil {
		t.Fatal(err)
	}
	c.forge(task.Spec{Command: "true", DAG: a.Spec.DAG, Name: "a"}, "")
	c.forge(task.Spec{Command: "true", Job: "solo"}, "")
	c.putJob(everySecond("solo", task.ConcurrencySkip))
	w := c.worker("w1", 10)
	c.startMaster("m1", func(cfg *Config) { cfg.SignGrace = time.Second })
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w.assignments()[ids["a"]]; return ok }, "a assigned")
	if err := w.finish(ids["a"], 0, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w.assignments()[ids["b"]]; return ok },
		"b assigned once a is done")
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { return len(c.fires("solo")) > 0 }, "a fire of solo")
	if f := c.fires("solo")[0]; f.Outcome != task.FireStarted {
		t.Errorf("solo's first fire: %+v; want started (the unsigned task naming it is no run of it)", f)
	}
}
