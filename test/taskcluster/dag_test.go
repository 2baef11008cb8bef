package taskcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// TestDAGWithAFailure: a DAG of 20 tasks in which one fails midway. The tasks that wait
// on it, directly or not, fail or are skipped as each one's on_parent_failure says,
// without running; every other task runs once, after the tasks it waits for.
func TestDAGWithAFailure(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	c.startWorker("w1", 4)
	c.startWorker("w2", 4)

	ok := c.runOnce("")
	boom := c.runOnce("; exit 3")
	n := func(name string, spec task.Spec, policy string, after ...string) task.DAGNode {
		return task.DAGNode{Name: name, Spec: spec, After: after, OnParentFailure: policy}
	}
	nodes := []task.DAGNode{
		n("r", ok, ""),
		n("x1", ok, "", "r"), n("x2", ok, "", "r"), n("x3", ok, "", "r"),
		n("boom", boom, "", "x1"),
		n("s1", ok, task.OnParentFailureSkip, "boom"), n("f1", ok, task.OnParentFailureFail, "boom"),
		n("s1c", ok, "", "s1"), n("f1c", ok, task.OnParentFailureSkip, "f1"),
		n("join", ok, "", "x2", "x3"),
		n("mixed", ok, task.OnParentFailureSkip, "join", "boom"),
		n("y1", ok, "", "join"), n("y2", ok, "", "y1"), n("y3", ok, "", "y2"),
		n("y4", ok, "", "y3"), n("y5", ok, "", "y4"), n("y6", ok, "", "y5"),
		n("last", ok, "", "y6", "s1c"),
		n("z1", ok, ""), n("z2", ok, "", "z1"),
	}
	want := map[string]task.State{
		"r": task.Done, "x1": task.Done, "x2": task.Done, "x3": task.Done, "boom": task.Failed,
		"s1": task.Skipped, "f1": task.Failed, "s1c": task.Failed, "f1c": task.Skipped,
		"join": task.Done, "mixed": task.Skipped,
		"y1": task.Done, "y2": task.Done, "y3": task.Done, "y4": task.Done, "y5": task.Done, "y6": task.Done,
		"last": task.Failed, "z1": task.Done, "z2": task.Done,
	}
	ids, err := c.client.SubmitDAG(context.Background(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(nodes) {
		t.Fatalf("ids %v", ids)
	}
	var all []string
	byID := map[string]string{}
	for name, id := range ids {
		all = append(all, id)
		byID[id] = name
	}
	ended := c.waitAll(all, 60*time.Second)
	runs := c.runs()
	finished := map[string]time.Time{}
	for id, tk := range ended {
		name := byID[id]
		if tk.State != want[name] {
			t.Errorf("%s (%s): %s, want %s (%s)", name, id, tk.State, want[name], tk.Status.Error)
		}
		ran := want[name] == task.Done || name == "boom"
		if ran && runs[id] != 1 || !ran && runs[id] != 0 {
			t.Errorf("%s (%s) ran %d times", name, id, runs[id])
		}
		if !ran && !strings.Contains(tk.Status.Error, "which it waits for, ended") {
			t.Errorf("%s: ended %s saying %q; want the parent named", name, tk.State, tk.Status.Error)
		}
		finished[name] = tk.Status.Finished
	}
	// Every task that ran started after the tasks it waits for had ended.
	for _, nd := range nodes {
		tk := ended[ids[nd.Name]]
		if tk.State != task.Done {
			continue
		}
		for _, p := range nd.After {
			if started := tk.Status.Started; !started.IsZero() && started.Before(finished[p]) {
				t.Errorf("%s started at %v, before %s ended at %v", nd.Name, started, p, finished[p])
			}
		}
	}
}

// TestDAGJob: a job whose run is a DAG fires it whole — its tasks share the fire's DAG
// id and run in order — and a run-now submits another such run.
func TestDAGJob(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	c.startWorker("w1", 4)
	ok := c.runOnce("")
	job := task.Job{Name: "etl", Schedule: "*/2 * * * * *", Concurrency: task.ConcurrencySkip, Enabled: true,
		DAG: []task.DAGNode{{Name: "load", Spec: ok, After: []string{"transform"}}, {Name: "extract", Spec: ok},
			{Name: "transform", Spec: ok, After: []string{"extract"}}}}
	ctx := context.Background()
	if err := c.client.CreateJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	var fired task.Fire
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		for _, f := range c.jobFires(job.Name) {
			if f.Outcome == task.FireStarted && len(f.Tasks) == 3 {
				fired = f
				return true
			}
		}
		return false
	}, "a fire of the DAG job")
	ids, err := c.client.RunNow(ctx, job.Name)
	if err != nil || len(ids) != 3 {
		t.Fatalf("run-now: %v, %v", ids, err)
	}
	for _, run := range [][]string{fired.Tasks, ids} {
		ended := c.waitAll(run, 30*time.Second)
		byName := map[string]*task.Task{}
		dag := ""
		for _, tk := range ended {
			if tk.State != task.Done || tk.Spec.Job != job.Name || (dag != "" && tk.Spec.DAG != dag) {
				t.Fatalf("%s: %s, job %q, dag %q (others %q)", tk.ID, tk.State, tk.Spec.Job, tk.Spec.DAG, dag)
			}
			dag = tk.Spec.DAG
			byName[tk.Spec.Name] = tk
		}
		for _, edge := range [][2]string{{"extract", "transform"}, {"transform", "load"}} {
			parent, child := byName[edge[0]], byName[edge[1]]
			if parent == nil || child == nil || child.Status.Started.Before(parent.Status.Finished) {
				t.Fatalf("%s should start after %s ended: %+v, %+v", edge[1], edge[0], child, parent)
			}
		}
	}
}
