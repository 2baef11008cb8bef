package taskcluster

import (
	"context"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// TestScheduleAcrossMasterKill: a job firing every second for a minute, across a kill -9
// of the active master. Every scheduled second is on record exactly once — started, or
// skipped by the misfire policy (run_once, 1 s threshold: the seconds no master could
// fire on time are skipped, the latest of them runs late) — and each started fire's task
// ran exactly once; none ran twice.
func TestScheduleAcrossMasterKill(t *testing.T) {
	c := newCluster(t)
	m1 := c.startMaster("m1")
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() bool { return c.activeMaster() == "m1" }, "m1 active")
	c.startMaster("m2")
	c.startWorker("w1", 4)
	c.startWorker("w2", 4)

	now := time.Now().UTC()
	start := now.Truncate(time.Second).Add(2 * time.Second)
	end := start.Add(59 * time.Second)
	job := task.Job{Name: "tick", Task: c.runOnce(""), Schedule: "* * * * * *", Start: start, End: end,
		Misfire: task.MisfireRunOnce, MisfireThreshold: task.Duration(time.Second), Concurrency: task.ConcurrencyAllow,
		Enabled: true, EnabledSince: now, Created: now}
	if err := c.client.CreateJob(context.Background(), job); err != nil {
		t.Fatal(err)
	}

	time.Sleep(time.Until(start.Add(20 * time.Second)))
	m1.Kill()
	killed := time.Now()
	testutil.Eventually(t, 4*sessionTimeout, 5*time.Millisecond, func() bool { return c.activeMaster() == "m2" }, "m2 active")
	t.Logf("m2 took over %v after m1's kill -9", time.Since(killed).Round(time.Millisecond))
	time.Sleep(time.Until(end.Add(3 * time.Second)))

	covered := map[time.Time]int{}
	var started []task.Fire
	skipped, late := 0, 0
	fires := c.jobFires(job.Name)
	for _, f := range fires {
		first := f.Scheduled
		if f.Covers > 1 {
			first = f.First
		}
		for at := first; !at.After(f.Scheduled); at = at.Add(time.Second) {
			covered[at]++
		}
		switch {
		case f.Outcome == task.FireStarted:
			started = append(started, f)
			if f.Reason == task.ReasonLate {
				late++
			}
		case f.Outcome == task.FireSkipped && f.Reason == task.ReasonMisfire:
			skipped += max(f.Covers, 1)
		default:
			t.Errorf("fire of %v: %+v, want started or skipped as a misfire", f.Scheduled.Format(time.TimeOnly), f)
		}
	}
	for at := start; !at.After(end); at = at.Add(time.Second) {
		if covered[at] != 1 {
			t.Errorf("scheduled %v is on record %d times", at.Format(time.TimeOnly), covered[at])
		}
		delete(covered, at)
	}
	for at, n := range covered {
		t.Errorf("%v, outside the job's start and end, is on record %d times", at, n)
	}
	t.Logf("%d fires: %d started (%d of them late, for seconds missed), %d seconds skipped as misfires",
		len(fires), len(started), late, skipped)
	if late == 0 {
		// The takeover takes more than the threshold: at least one second is missed, and
		// run_once runs the latest missed one late (the others, if any, are skipped).
		t.Errorf("no second ran late for seconds missed while no master was active (%d skipped): the kill went unnoticed?", skipped)
	}

	var ids []string
	for _, f := range started {
		if f.Task == "" {
			t.Errorf("started fire %v names no task", f.Scheduled)
			continue
		}
		ids = append(ids, f.Task)
	}
	ended := c.waitAll(ids, 30*time.Second)
	runs := c.runs()
	byTime := map[time.Time]string{}
	for id, tk := range ended {
		if tk.State != task.Done || runs[id] != 1 {
			t.Errorf("%s: %s, ran %d times; want done, once", id, tk.State, runs[id])
		}
		if tk.Spec.Job != job.Name {
			t.Errorf("%s: job %q", id, tk.Spec.Job)
		}
		if other, dup := byTime[tk.Spec.Scheduled]; dup {
			t.Errorf("%s and %s both ran for %v", id, other, tk.Spec.Scheduled)
		}
		byTime[tk.Spec.Scheduled] = id
	}
	if len(runs) != len(ids) {
		t.Errorf("%d tasks ran, %d fires started", len(runs), len(ids))
	}
}
