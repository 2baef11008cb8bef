package master

import (
	"context"
	"encoding/json"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// putJob writes a job's definition by hand, and signs it as a submitter, as a client
// would.
func (c *cluster) putJob(j task.Job) {
	c.t.Helper()
	ctx := context.Background()
	if err := c.s.MakeDirs(ctx, c.layout.Jobs()); err != nil {
		c.t.Fatal(err)
	}
	if j.Enabled && j.EnabledSince.IsZero() {
		j.EnabledSince = time.Now().UTC()
	}
	data, _ := json.Marshal(j)
	conn := c.s.Conn()
	if _, err := conn.Create(c.layout.Job(j.Name), data, 0, zk.WorldACL(zk.PermAll)); err == zk.ErrNodeExists {
		_, err = conn.Set(c.layout.Job(j.Name), data, -1)
		if err != nil {
			c.t.Fatal(err)
		}
	} else if err != nil {
		c.t.Fatal(err)
	}
	c.signJob(j.Name, data)
}

// signJob signs job name's definition, data, with the submitter's key.
func (c *cluster) signJob(name string, data []byte) {
	c.t.Helper()
	c.signNode(c.layout.Job(name), task.JobDomain, data, c.keys.Signer(coordinator.RoleSubmitter))
}

// fires returns a job's fire records, oldest first.
func (c *cluster) fires(job string) []task.Fire {
	c.t.Helper()
	conn := c.s.Conn()
	names, _, err := conn.Children(c.layout.Fires(job))
	if err == zk.ErrNoNode {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	slices.Sort(names)
	var out []task.Fire
	for _, n := range names {
		data, _, err := conn.Get(c.layout.Fire(job, n))
		if err != nil {
			c.t.Fatal(err)
		}
		var f task.Fire
		if err := json.Unmarshal(data, &f); err != nil {
			c.t.Fatal(err)
		}
		if task.FireName(f.Scheduled) != n {
			c.t.Fatalf("fire %s records %v", n, f.Scheduled)
		}
		out = append(out, f)
	}
	return out
}

// jobTasks returns the tasks that are runs of job, by scheduled time.
func (c *cluster) jobTasks(job string) map[time.Time][]string {
	c.t.Helper()
	all, err := c.client.List(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[time.Time][]string{}
	for _, t := range all {
		if t.Spec.Job == job {
			out[t.Spec.Scheduled] = append(out[t.Spec.Scheduled], t.ID)
		}
	}
	return out
}

func everySecond(name, concurrency string) task.Job {
	return task.Job{Name: name, Task: task.Spec{Command: "true"}, Schedule: "* * * * * *",
		Concurrency: concurrency, Enabled: true}
}

// A job every second, runs allowed alongside: each scheduled second gets one fire
// record, started, with its task, and the task says which job and time it is for.
func TestJobFiresEachSecondOnce(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	c.putJob(everySecond("tick", task.ConcurrencyAllow))
	testutil.Eventually(t, wait, 20*time.Millisecond, func() bool { return len(c.fires("tick")) >= 4 }, "four fires")
	// The newest record may not name its task yet: the master signs the fire's tasks and
	// links them in a write after the fire's.
	fires := c.fires("tick")[:3]
	tasks := c.jobTasks("tick")
	for i, f := range fires {
		if f.Outcome != task.FireStarted || f.Task == "" {
			t.Errorf("fire %v: %+v, want started with its task", f.Scheduled, f)
		}
		if i > 0 && !f.Scheduled.Equal(fires[i-1].Scheduled.Add(time.Second)) {
			t.Errorf("fire %v follows %v: a second was skipped or doubled", f.Scheduled, fires[i-1].Scheduled)
		}
		if ids := tasks[f.Scheduled]; len(ids) > 1 || (len(ids) == 1 && ids[0] != f.Task) {
			t.Errorf("fire %v: tasks %v, record says %s", f.Scheduled, ids, f.Task)
		}
	}
}

// Concurrency skip: with no worker the first run never ends, so the next seconds are
// recorded skipped, with the reason; queue: they are recorded queued, and the first
// queued one starts once the run before it has ended.
func TestJobConcurrency(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	c.putJob(everySecond("skipper", task.ConcurrencySkip))
	c.putJob(everySecond("queuer", task.ConcurrencyQueue))
	testutil.Eventually(t, wait, 20*time.Millisecond, func() bool {
		return len(c.fires("skipper")) >= 3 && len(c.fires("queuer")) >= 3
	}, "three fires of each")
	skipper := c.fires("skipper")
	if skipper[0].Outcome != task.FireStarted || skipper[1].Outcome != task.FireSkipped || skipper[1].Reason != task.ReasonRunning {
		t.Fatalf("skip: %+v", skipper[:2])
	}
	queuer := c.fires("queuer")
	if queuer[0].Outcome != task.FireStarted || queuer[1].Outcome != task.FireQueued {
		t.Fatalf("queue: %+v", queuer[:2])
	}
	// The first run ends (a worker would write its status): the first queued fire starts.
	st, _ := json.Marshal(task.Status{State: task.Done, Finished: time.Now()})
	if _, err := c.s.Conn().Create(c.layout.Status(queuer[0].Task), st, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	second := task.FireName(queuer[1].Scheduled)
	testutil.Eventually(t, wait, 20*time.Millisecond, func() bool {
		for _, f := range c.fires("queuer") {
			if task.FireName(f.Scheduled) == second {
				return f.Outcome == task.FireStarted && f.Task != ""
			}
		}
		return false
	}, "the first queued fire started once the run before it ended")
	if ids := c.jobTasks("queuer")[queuer[1].Scheduled]; len(ids) != 1 {
		t.Fatalf("the dequeued fire has tasks %v", ids)
	}
}

// A disabled job is not fired; enabled, it fires only the times after it was enabled.
func TestJobDisabled(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	j := everySecond("off", task.ConcurrencyAllow)
	j.Enabled = false
	c.putJob(j)
	time.Sleep(1500 * time.Millisecond)
	if f := c.fires("off"); len(f) != 0 {
		t.Fatalf("a disabled job fired: %+v", f)
	}
	j.Enabled, j.EnabledSince = true, time.Now().UTC()
	c.putJob(j)
	testutil.Eventually(t, wait, 20*time.Millisecond, func() bool { return len(c.fires("off")) >= 1 }, "a fire once enabled")
	if f := c.fires("off")[0]; f.Scheduled.Before(j.EnabledSince.Truncate(time.Second)) {
		t.Fatalf("fired %v, before it was enabled at %v", f.Scheduled, j.EnabledSince)
	}
}

// Two masters in turn: the second takes over where the first stopped, and no scheduled
// second is recorded twice or left out (misfire run_once with a long threshold: the
// seconds missed during the takeover run late).
func TestJobFailover(t *testing.T) {
	c := newCluster(t)
	_, stop1 := c.startMaster("m1")
	c.startMaster("m2")
	c.putJob(everySecond("ha", task.ConcurrencyAllow))
	testutil.Eventually(t, wait, 20*time.Millisecond, func() bool { return len(c.fires("ha")) >= 2 }, "fires under m1")
	stop1()
	n := len(c.fires("ha"))
	testutil.Eventually(t, wait, 20*time.Millisecond, func() bool { return len(c.fires("ha")) >= n+3 }, "fires under m2")
	fires := c.fires("ha")
	for i := 1; i < len(fires); i++ {
		if !fires[i].Scheduled.Equal(fires[i-1].Scheduled.Add(time.Second)) {
			t.Fatalf("fire %v follows %v", fires[i].Scheduled, fires[i-1].Scheduled)
		}
	}
	for at, ids := range c.jobTasks("ha") {
		if len(ids) != 1 {
			t.Errorf("%v: tasks %v", at, ids)
		}
	}
}

// A started fire whose record names no task — the write after its multi, with the ids
// and the tasks' signatures, was lost, to a disconnection or the master's death — is
// finished by the next master: it makes the fire's tasks again from the job's verified
// definition, links and signs them. The tasks the record's multi made, left unsigned,
// are not its: a record and a task of its token made in one multi by anyone (an open
// deployment) get no signature — the master signs only what it made.
func TestJobFireRelinked(t *testing.T) {
	c := newCluster(t)
	j := everySecond("relink", task.ConcurrencyAllow)
	j.Schedule = "0 0 0 1 1 *" // enabled, and no fire of its own in the test: only the repair writes
	c.putJob(j)
	at := time.Date(2026, 11, 27, 10, 23, 13, 0, time.UTC)
	fire := task.FireName(at)
	conn := c.s.Conn()
	if err := c.s.MakeDirs(context.Background(), c.layout.Tasks()); err != nil {
		t.Fatal(err)
	}
	forged, _ := json.Marshal(task.Spec{Command: "rm", Args: []string{"-rf", "/"}, Job: "relink", Scheduled: at,
		Token: "relink/" + fire})
	rec, _ := json.Marshal(task.Fire{Scheduled: at, Recorded: at, Outcome: task.FireStarted})
	res, err := conn.Multi(
		&zk.CreateRequest{Path: c.layout.Fires("relink"), Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: c.layout.Fire("relink", fire), Data: rec, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: c.layout.Task("task-"), Data: forged, Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagSequence})
	if err != nil {
		t.Fatal(err)
	}
	orphan := path.Base(res[2].String)
	c.startMaster("m1")
	var id string
	testutil.Eventually(t, wait, 20*time.Millisecond, func() bool {
		f := c.fires("relink")
		if len(f) == 1 {
			id = f[0].Task
		}
		return id != "" && id != orphan
	}, "the fire record linked to a task of the master's")
	data, st, err := conn.Get(c.layout.Task(id))
	if err != nil {
		t.Fatal(err)
	}
	var spec task.Spec
	if err := json.Unmarshal(data, &spec); err != nil || spec.Command != "true" || spec.Token != "relink/"+fire {
		t.Errorf("the fire's task: %+v, %v; want the job's command and the fire's token", spec, err)
	}
	sig, err := task.ReadSig(conn, c.layout.TaskSig(id))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := task.VerifySpec(c.keys.Trust(), st.Czxid, data, sig); err != nil || s.Role != coordinator.RoleMaster {
		t.Errorf("the fire's task: signed by %+v, %v; want the master", s, err)
	}
	if sig, err := task.ReadSig(conn, c.layout.TaskSig(orphan)); err != nil || sig != nil {
		t.Errorf("the task made with the record was signed: %q, %v", sig, err)
	}
}

// Jobs a client wrote wrong or hostile — not JSON, an unknown schedule, shards and a
// history out of range, a DAG with a cycle, a backlog of decades — are not fired and
// do not stop the master, which fires a good job beside them; a backlog is covered by
// bounded records.
func TestJobHostileDefinitions(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	if err := c.s.MakeDirs(ctx, c.layout.Jobs()); err != nil {
		t.Fatal(err)
	}
	conn := c.s.Conn()
	raw := map[string]string{
		"garbage":  `{"task": [`,
		"schedule": `{"task": {"command": "x"}, "schedule": "61 * * * *", "enabled": true}`,
		"shards":   `{"task": {"command": "x"}, "schedule": "* * * * * *", "shards": 100000, "enabled": true}`,
		"history":  `{"task": {"command": "x"}, "schedule": "* * * * * *", "history": -5, "enabled": true}`,
		"cycle": `{"schedule": "* * * * * *", "enabled": true, "dag": [{"name": "a", "spec": {"command": "x"}, "after": ["b"]},
			{"name": "b", "spec": {"command": "x"}, "after": ["a"]}]}`,
	}
	for name, data := range raw {
		if _, err := conn.Create(c.layout.Job(name), []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		c.signJob(name, []byte(data)) // refused for what they say, not for who wrote them
	}
	old := everySecond("decades", task.ConcurrencyAllow)
	old.Misfire, old.EnabledSince = task.MisfireSkip, time.Now().AddDate(-30, 0, 0)
	c.putJob(old)
	c.putJob(everySecond("good", task.ConcurrencyAllow))
	c.startMaster("m1") // a master that stopped on them fails the test when it ends
	testutil.Eventually(t, 2*wait, 50*time.Millisecond, func() bool { return len(c.fires("good")) >= 2 }, "the good job fired")
	for name := range raw {
		if f := c.fires(name); len(f) != 0 {
			t.Errorf("job %s fired: %+v", name, f)
		}
	}
	// Thirty years of seconds are recorded a bounded batch a round, each covering many.
	testutil.Eventually(t, 2*wait, 50*time.Millisecond, func() bool {
		f := c.fires("decades")
		return len(f) > 0 && time.Since(f[len(f)-1].Scheduled) < time.Minute
	}, "the backlog caught up")
	if f := c.fires("decades"); len(f) > task.DefaultHistory {
		t.Errorf("%d fire records kept, more than the history", len(f))
	}
}
