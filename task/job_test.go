package task

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func mustSchedule(t *testing.T, expr, tz string) Job {
	t.Helper()
	return Job{Name: "j", Task: Spec{Command: "true"}, Schedule: expr, TimeZone: tz, Enabled: true}
}

func plan(t *testing.T, j Job, st PlanState, now time.Time) ([]Decision, time.Time) {
	t.Helper()
	s, err := ParseSchedule(j.Schedule, j.TimeZone)
	if err != nil {
		t.Fatal(err)
	}
	return Plan(j, s, st, now)
}

func describe(ds []Decision) string {
	var parts []string
	for _, d := range ds {
		p := d.Scheduled.UTC().Format("15:04:05") + " " + d.Outcome
		if d.Covers > 1 {
			p += fmt.Sprintf(" covers %d from %s", d.Covers, d.First.UTC().Format("15:04:05"))
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

var t0 = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct{ expr, tz, want string }{
		{"*/15 * * * *", "", "09:15:00"},           // five fields: minutes
		{"*/20 * * * * *", "", "09:00:20"},         // six: seconds first
		{"@every 90s", "", "09:01:30"},             // a descriptor
		{"0 10 * * *", "Europe/Paris", "09:00:00"}, // 10:00 in Paris is 09:00 UTC in November
	} {
		s, err := ParseSchedule(tc.expr, tc.tz)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		from := t0
		if tc.tz != "" {
			from = t0.Add(-time.Minute)
		}
		if got := s.Next(from).UTC().Format("15:04:05"); got != tc.want {
			t.Errorf("%q in %q: next after %v = %s, want %s", tc.expr, tc.tz, from, got, tc.want)
		}
	}
	for _, bad := range []struct{ expr, tz, want string }{
		{"* * *", "", "schedule"},
		{"61 * * * *", "", "schedule"},
		{"* * * * *", "Mars/Olympus", "time_zone"},
		{"CRON_TZ=UTC * * * * *", "", "time_zone"},
	} {
		if _, err := ParseSchedule(bad.expr, bad.tz); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q in %q: %v, want an error naming %s", bad.expr, bad.tz, err, bad.want)
		}
	}
}

func TestJobValidate(t *testing.T) {
	j := Job{Name: "nightly", Task: Spec{Command: "backup"}, Schedule: "0 3 * * *", Enabled: true}
	if err := j.Validate(); err != nil {
		t.Fatalf("a good job: %v", err)
	}
	bad := Job{Name: "-x", Task: Spec{}, Schedule: "nope", Misfire: "sometimes", Concurrency: "maybe",
		History: -1, Start: t0, End: t0.Add(-time.Hour)}
	err := bad.Validate()
	for _, field := range []string{"name", "schedule", "misfire", "concurrency", "history", "end", "task spec: command"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("a bad job's error %v does not name %s", err, field)
		}
	}
}

func TestFireName(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	name := FireName(at)
	if name != "fire-20260102T020405Z" {
		t.Fatalf("FireName = %s", name)
	}
	back, err := ParseFireName(name)
	if err != nil || !back.Equal(at) {
		t.Fatalf("ParseFireName(%s) = %v, %v", name, back, err)
	}
	if FireName(at) >= FireName(at.Add(time.Second)) {
		t.Fatal("fire names do not sort in time order")
	}
}

// On time, every scheduled time in (after, now] starts a task, and next is the
// following one.
func TestPlanOnTime(t *testing.T) {
	j := mustSchedule(t, "* * * * * *", "")
	j.Concurrency = ConcurrencyAllow
	ds, next := plan(t, j, PlanState{After: t0}, t0.Add(3*time.Second))
	if got := describe(ds); got != "09:00:01 started, 09:00:02 started, 09:00:03 started" {
		t.Fatalf("decisions: %s", got)
	}
	if !next.Equal(t0.Add(4 * time.Second)) {
		t.Fatalf("next = %v", next)
	}
}

// Concurrency: skip while a run has not ended; queue up to MaxQueued; allow always.
func TestPlanConcurrency(t *testing.T) {
	j := mustSchedule(t, "* * * * * *", "")
	now := t0.Add(2 * time.Second)
	for _, tc := range []struct {
		policy string
		st     PlanState
		want   string
	}{
		{ConcurrencySkip, PlanState{After: t0}, "09:00:01 started, 09:00:02 skipped"},
		{ConcurrencySkip, PlanState{After: t0, Running: true}, "09:00:01 skipped, 09:00:02 skipped"},
		{ConcurrencyQueue, PlanState{After: t0, Running: true}, "09:00:01 queued, 09:00:02 queued"},
		{ConcurrencyQueue, PlanState{After: t0, Running: true, Queued: MaxQueued - 1}, "09:00:01 queued, 09:00:02 skipped"},
		{ConcurrencyAllow, PlanState{After: t0, Running: true}, "09:00:01 started, 09:00:02 started"},
	} {
		j.Concurrency = tc.policy
		if ds, _ := plan(t, j, tc.st, now); describe(ds) != tc.want {
			t.Errorf("%s %+v: %s, want %s", tc.policy, tc.st, describe(ds), tc.want)
		}
	}
}

// Misfires: times more than the threshold late are skipped, but for the latest of them
// under run_once; a long backlog is covered by one record.
func TestPlanMisfire(t *testing.T) {
	j := mustSchedule(t, "* * * * * *", "")
	j.Concurrency, j.MisfireThreshold = ConcurrencyAllow, Duration(2*time.Second)
	now := t0.Add(6 * time.Second) // 01..03 missed, 04..06 on time
	j.Misfire = MisfireRunOnce
	ds, _ := plan(t, j, PlanState{After: t0}, now)
	if got, want := describe(ds), "09:00:01 skipped, 09:00:02 skipped, 09:00:03 started, 09:00:04 started, 09:00:05 started, 09:00:06 started"; got != want {
		t.Fatalf("run_once: %s\nwant %s", got, want)
	}
	if ds[2].Reason != ReasonLate || ds[0].Reason != ReasonMisfire {
		t.Fatalf("reasons: %q, %q", ds[2].Reason, ds[0].Reason)
	}
	j.Misfire = MisfireSkip
	ds, _ = plan(t, j, PlanState{After: t0}, now)
	if got, want := describe(ds), "09:00:01 skipped, 09:00:02 skipped, 09:00:03 skipped, 09:00:04 started, 09:00:05 started, 09:00:06 started"; got != want {
		t.Fatalf("skip: %s\nwant %s", got, want)
	}
	// An hour without a master: 3600 missed, one record covers the oldest.
	ds, _ = plan(t, j, PlanState{After: t0}, t0.Add(time.Hour))
	if len(ds) != MaxBacklog+1+2 || ds[0].Covers != 3600-2-MaxBacklog || !ds[0].First.Equal(t0.Add(time.Second)) {
		t.Fatalf("an hour's backlog: %d decisions, the first %+v", len(ds), ds[0])
	}
}

// Start and End bound the times fired; a job past its End has no next time.
func TestPlanBounds(t *testing.T) {
	j := mustSchedule(t, "* * * * * *", "")
	j.Concurrency = ConcurrencyAllow
	j.Start, j.End = t0.Add(2*time.Second), t0.Add(3*time.Second)
	ds, next := plan(t, j, PlanState{After: t0}, t0.Add(5*time.Second))
	if got := describe(ds); got != "09:00:02 started, 09:00:03 started" || !next.IsZero() {
		t.Fatalf("%s, next %v", got, next)
	}
}

// An @every schedule with a start counts from the start: it fires at the start, then
// every period.
func TestPlanEveryFromStart(t *testing.T) {
	j := mustSchedule(t, "@every 1h", "")
	j.Concurrency, j.Start = ConcurrencyAllow, t0.Add(2*time.Hour)
	ds, next := plan(t, j, PlanState{After: t0}, t0.Add(3*time.Hour))
	if got := describe(ds); got != "11:00:00 started, 12:00:00 started" || !next.Equal(t0.Add(4*time.Hour)) {
		t.Fatalf("%s, next %v", got, next)
	}
}

// Randomized: whatever the moments the master plans at, each scheduled time in the
// window is decided exactly once, in order.
func TestPlanEachTimeOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		j := mustSchedule(t, "*/3 * * * * *", "")
		j.Concurrency = []string{ConcurrencySkip, ConcurrencyQueue, ConcurrencyAllow}[r.IntN(3)]
		j.Misfire = []string{MisfireRunOnce, MisfireSkip}[r.IntN(2)]
		j.MisfireThreshold = Duration(time.Duration(r.IntN(10)) * time.Second)
		st := PlanState{After: t0}
		seen := map[time.Time]int{}
		end := t0.Add(10 * time.Minute)
		for now := t0; now.Before(end); now = now.Add(time.Duration(r.IntN(40_000)) * time.Millisecond) {
			ds, _ := plan(t, j, st, now)
			for _, d := range ds {
				if !d.Scheduled.After(st.After) {
					t.Fatalf("round %d: %v decided again after %v", round, d.Scheduled, st.After)
				}
				for k := range max(d.Covers, 1) {
					seen[d.Scheduled.Add(-time.Duration(max(d.Covers, 1)-1-k)*3*time.Second)]++
				}
				st.After = d.Scheduled
			}
			st.Running = r.IntN(2) == 0
		}
		for tm, n := range seen {
			if n != 1 || tm.Second()%3 != 0 {
				t.Fatalf("round %d: %v decided %d times", round, tm, n)
			}
		}
		for tm := t0.Add(3 * time.Second); !tm.After(st.After); tm = tm.Add(3 * time.Second) {
			if seen[tm] != 1 {
				t.Fatalf("round %d: %v never decided (planned up to %v)", round, tm, st.After)
			}
		}
	}
}

// A sharded job's run is one task per item, with its parameter in Shard and the
// environment; the job's own environment is not shared between the items.
func TestJobRuns(t *testing.T) {
	j := Job{Name: "s", Task: Spec{Command: "x", Env: map[string]string{"A": "1"}}, Shards: 3, ShardParams: []string{"a", "b"}}
	runs := j.Runs(t0, t0, "tok")
	if len(runs) != 3 {
		t.Fatalf("%d runs", len(runs))
	}
	for i, r := range runs {
		if r.Shard == nil || r.Shard.Item != i || r.Shard.Total != 3 || r.Job != "s" || !r.Scheduled.Equal(t0) ||
			r.Env["PADDOCK_SHARD_ITEM"] != fmt.Sprint(i) || r.Env["A"] != "1" || r.Token != fmt.Sprintf("tok/%d", i) {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	if runs[1].Shard.Param != "b" || runs[2].Shard.Param != "" || runs[1].Env["PADDOCK_SHARD_PARAM"] != "b" {
		t.Fatalf("params: %+v %+v", runs[1].Shard, runs[2].Shard)
	}
	runs[0].Env["A"] = "changed"
	if runs[1].Env["A"] != "1" || j.Task.Env["A"] != "1" {
		t.Fatal("the items share one environment map")
	}
	if one := (&Job{Name: "p", Task: Spec{Command: "x"}}).Runs(time.Time{}, t0, "tok"); len(one) != 1 || one[0].Shard != nil || !one[0].Scheduled.IsZero() {
		t.Fatalf("a plain job's run-now: %+v", one)
	}
}

// A DAG job's run is its DAG's tasks, parents first, sharing the run's token as their
// DAG id; a job with both a task and a DAG, or a sharded DAG, or a cyclic one, is refused.
func TestJobDAGRuns(t *testing.T) {
	j := Job{Name: "etl", DAG: []DAGNode{node("load", "transform"), node("extract"), node("transform", "extract")}}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	runs := j.Runs(t0, t0, "etl/fire-x")
	if len(runs) != 3 || runs[0].Name != "extract" || runs[1].Name != "transform" || runs[2].Name != "load" {
		t.Fatalf("runs %+v", runs)
	}
	for _, r := range runs {
		if r.DAG != "etl/fire-x" || r.Job != "etl" || !r.Scheduled.Equal(t0) || r.Token != "etl/fire-x/"+r.Name || r.Validate() != nil {
			t.Fatalf("run %+v: %v", r, r.Validate())
		}
	}
	for _, bad := range []struct {
		j    Job
		want string
	}{
		{Job{Name: "b", Task: Spec{Command: "x"}, DAG: []DAGNode{node("a")}}, "a task or a dag"},
		{Job{Name: "b", Shards: 2, DAG: []DAGNode{node("a")}}, "cannot be sharded"},
		{Job{Name: "b", DAG: []DAGNode{node("a", "b"), node("b", "a")}}, "a cycle"},
	} {
		if err := bad.j.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.j, err, bad.want)
		}
	}
}
