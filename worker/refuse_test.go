package worker

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/backoff"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// createTask writes a task node by hand, signs it as a submitter, then gives it acl, as
// a submitter may: the ACL of its own node is the creator's choice, and the task is one a
// worker runs.
func (c *cluster) createTask(spec task.Spec, acl []zk.ACL) string {
	c.t.Helper()
	if err := c.sess.MakeDirs(ctxT(c.t), c.layout.Tasks()); err != nil {
		c.t.Fatal(err)
	}
	data, _ := json.Marshal(spec)
	p, err := c.sess.Conn().Create(c.layout.Task("task-"), data, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		c.t.Fatal(err)
	}
	c.sign(p, data, coordinator.RoleSubmitter)
	if _, err := c.sess.Conn().SetACL(p, acl, -1); err != nil {
		c.t.Fatal(err)
	}
	return filepath.Base(p)
}

// runs counts the lines a task's script appended to path: one per run.
func runs(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// TestUnrecordableOutcomeRunsOnce replays issue 31's attack 7 on the worker: a task
// whose node lets the worker create nothing under it (world:anyone:r, as a submitter
// may make it) ran 2,768 times in 10 s, each outcome refused and the assignment claimed
// again. Now the worker runs it once, hands it back as a refusal in the multi that
// deletes the assignment, counts it, and does not claim it again even when it is
// assigned again; the next task runs.
func TestUnrecordableOutcomeRunsOnce(t *testing.T) {
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.MetricsAddr = "127.0.0.1:0"
	r := c.start(cfg)
	marks := filepath.Join(t.TempDir(), "runs")
	id := c.createTask(shell(`echo ran >> "$M"`, "M="+marks), zk.WorldACL(zk.PermRead))
	session := c.session("w1")
	c.assign("w1", id, task.Assignment{Session: session})

	var ref task.Refusal
	testutil.Eventually(t, waitLong, poll, func() bool { return c.read(c.layout.Refusal("w1", id), &ref) },
		"no refusal of %s", id)
	if !ref.Ran || ref.Worker != "w1" || ref.Task != id || ref.Attempt != 1 || !strings.Contains(ref.Error, "not authenticated") {
		t.Errorf("refusal %+v: want ran, by w1, of %s attempt 1, naming the servers' refusal", ref, id)
	}
	if c.exists(c.layout.Assignment("w1", id)) {
		t.Errorf("the refused task's assignment is still there")
	}
	// A master that did not learn gives it back: the worker leaves it. The next task,
	// listed after it, runs: the scan has passed over it by then.
	c.assign("w1", id, task.Assignment{Session: session, Attempt: 2})
	next := c.runTask("w1", shell("true"))
	if st := c.status(next); st.State != task.Done {
		t.Fatalf("the next task: %s, want done", st.State)
	}
	if n := runs(t, marks); n != 1 {
		t.Fatalf("the task whose outcome cannot be recorded ran %d times, want once", n)
	}
	metrics := scrape(t, r)
	for _, line := range []string{
		`paddock_worker_tasks_refused_total{reason="unrecorded"} 1`,
		`paddock_worker_tasks_refused_total{reason="unreadable"} 0`,
		`paddock_worker_tasks_refused 1`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("metrics lack %q:\n%s", line, metrics)
		}
	}
	// Once the master has ended it (the refusal and the assignment gone), it is forgotten.
	for _, p := range []string{c.layout.Refusal("w1", id), c.layout.Assignment("w1", id)} {
		if err := c.sess.Conn().Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	c.runTask("w1", shell("true")) // a change of the directory lists it again
	testutil.Eventually(t, waitLong, poll, func() bool {
		return strings.Contains(scrape(t, r), "paddock_worker_tasks_refused 0\n")
	}, "the refusal is still remembered")
}

// TestUnreadableSpecRefusedNotRun: a task whose node the worker cannot read (an ACL
// naming only someone else) is refused without running, and the scan goes on to the
// next assignment.
func TestUnreadableSpecRefusedNotRun(t *testing.T) {
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.MetricsAddr = "127.0.0.1:0"
	r := c.start(cfg)
	marks := filepath.Join(t.TempDir(), "runs")
	id := c.createTask(shell(`echo ran >> "$M"`, "M="+marks),
		[]zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "someone:NSmgsYq/Vr5BMSRhJbq3Q6ULo3A="}})
	session := c.session("w1")
	c.assign("w1", id, task.Assignment{Session: session})
	next := c.runTask("w1", shell("true"))
	if st := c.status(next); st.State != task.Done {
		t.Fatalf("the next task: %s, want done", st.State)
	}
	var ref task.Refusal
	testutil.Eventually(t, waitLong, poll, func() bool { return c.read(c.layout.Refusal("w1", id), &ref) },
		"no refusal of %s", id)
	if ref.Ran || !strings.Contains(ref.Error, "not authenticated") {
		t.Errorf("refusal %+v: want not run, naming the servers' refusal", ref)
	}
	if n := runs(t, marks); n != 0 {
		t.Fatalf("an unreadable task ran %d times", n)
	}
	if m := scrape(t, r); !strings.Contains(m, `paddock_worker_tasks_refused_total{reason="unreadable"} 1`+"\n") {
		t.Errorf("metrics lack the unreadable refusal:\n%s", m)
	}
}

// TestUnreadableAssignmentHeld: an assignment the worker cannot read (its ACL names
// someone else) is held and tried again only with the backoff, and the assignments after
// it go on: its third try comes no sooner than the first two waits' floors allow.
func TestUnreadableAssignmentHeld(t *testing.T) {
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.MetricsAddr = "127.0.0.1:0"
	r := c.start(cfg, func(w *Worker) { w.rand = rand.New(rand.NewPCG(testutil.Seed(t, "PADDOCK_WORKER_SEED"), 0)) })
	session := c.session("w1")
	id := c.submit(shell("true"))
	data, _ := json.Marshal(task.Assignment{Attempt: 1, Session: session})
	first := time.Now()
	if _, err := c.sess.Conn().Create(c.layout.Assignment("w1", id), data, 0,
		[]zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "someone:NSmgsYq/Vr5BMSRhJbq3Q6ULo3A="}}); err != nil {
		t.Fatal(err)
	}
	next := c.runTask("w1", shell("true"))
	if st := c.status(next); st.State != task.Done {
		t.Fatalf("the task after the unreadable assignment: %s, want done", st.State)
	}
	testutil.Eventually(t, waitLong, poll, func() bool {
		return strings.Contains(scrape(t, r), "paddock_worker_assignment_holds_total 3\n")
	}, "the unreadable assignment was not tried three times")
	floor := backoff.Default.Delay(1, 0) + backoff.Default.Delay(2, 0)
	if d := time.Since(first); d < floor {
		t.Fatalf("three tries within %v, before the backoff's floor of %v", d, floor)
	}
	if !strings.Contains(scrape(t, r), "paddock_worker_assignments_held 1\n") {
		t.Errorf("metrics do not show the held assignment:\n%s", scrape(t, r))
	}
}
