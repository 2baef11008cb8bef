package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
)

// jobCluster is a paddock server and a client on it; the test plays the master by
// writing fire records itself.
type jobCluster struct {
	t    *testing.T
	addr string
	s    *coordinator.Session
	c    *Client
	l    Layout
	keys *testutil.Keys
}

func newJobCluster(t *testing.T) *jobCluster {
	t.Helper()
	addr := testutil.StartPaddock(t, nil)
	jc := &jobCluster{t: t, addr: addr, l: DefaultLayout, keys: testutil.NewKeys(t)}
	jc.s = jc.connect(coordinator.Config{})
	jc.c = NewClient(jc.s, jc.l)
	return jc
}

// connect opens a session with cfg (its servers and timeout set here, its signer the
// submitter's key unless it has one, and the keys' trust), closed when the test ends.
func (jc *jobCluster) connect(cfg coordinator.Config) *coordinator.Session {
	jc.t.Helper()
	cfg.Servers, cfg.SessionTimeout = []string{jc.addr}, 4*time.Second
	if cfg.Signer == nil {
		cfg.Signer = jc.keys.Signer(coordinator.RoleSubmitter)
	}
	cfg.Trust = jc.keys.Trust()
	s, err := coordinator.Connect(jobCtx(jc.t), cfg)
	if err != nil {
		jc.t.Fatal(err)
	}
	jc.t.Cleanup(func() { s.Close() })
	return s
}

func jobCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fire writes a fire record for job at scheduled, as the master would (its own
// session: the test's by default).
func (jc *jobCluster) fire(s *coordinator.Session, job string, scheduled time.Time, f Fire) error {
	if s == nil {
		s = jc.s
	}
	f.Scheduled = scheduled.UTC()
	if f.Outcome == "" {
		f.Outcome = FireSkipped
	}
	b, _ := json.Marshal(f)
	p := jc.l.Fire(job, FireName(scheduled))
	_, err := s.Conn().Create(p, b, 0, s.ACLFor(p))
	return err
}

func (jc *jobCluster) exists(p string) bool {
	jc.t.Helper()
	ok, _, err := jc.s.Conn().Exists(p)
	if err != nil {
		jc.t.Fatal(err)
	}
	return ok
}

func nightly(name string) Job {
	return Job{Name: name, Task: Spec{Command: "backup", Args: []string{"--all"}, Retries: 2},
		Schedule: "0 3 * * *", TimeZone: "Europe/Paris", Enabled: true}
}

func TestCreateJob(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	before := time.Now().UTC()
	if err := jc.c.CreateJob(ctx, nightly("nightly")); err != nil {
		t.Fatal(err)
	}
	v, err := jc.c.GetJob(ctx, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	j := v.Job
	if j.Name != "nightly" || j.Task.Command != "backup" || j.Created.Before(before) || !j.Updated.Equal(j.Created) ||
		!j.EnabledSince.Equal(j.Created) || v.Version != 0 || len(v.Fires) != 0 || v.FireCount != 0 {
		t.Fatalf("created job %+v, version %d, %d fires: want it as given, created, updated and enabled now", j, v.Version, len(v.Fires))
	}
	if !jc.exists(jc.l.Fires("nightly")) {
		t.Error("no fires directory after the create")
	}
	// The next five 03:00 in Paris, after now.
	paris, _ := time.LoadLocation("Europe/Paris")
	if len(v.Next) != JobViewNext {
		t.Fatalf("next %v: want %d times", v.Next, JobViewNext)
	}
	for i, n := range v.Next {
		if p := n.In(paris); p.Hour() != 3 || p.Minute() != 0 || !n.After(before) || i > 0 && n.Sub(v.Next[i-1]) > 25*time.Hour {
			t.Errorf("next %v: want consecutive 03:00 in Paris", v.Next)
		}
	}

	// The same name again is refused, saying so, and leaves the first as it was.
	other := nightly("nightly")
	other.Task.Command = "other"
	err = jc.c.CreateJob(ctx, other)
	if !errors.Is(err, ErrJobExists) || err.Error() != "create job nightly: already exists" {
		t.Fatalf("duplicate create: %v, want %q", err, "create job nightly: already exists")
	}
	if v, _ := jc.c.GetJob(ctx, "nightly"); v.Job.Task.Command != "backup" {
		t.Errorf("the duplicate create changed the job: %+v", v.Job)
	}

	// A disabled job has no EnabledSince and no next times; the caller's times are
	// not taken.
	off := nightly("off")
	off.Enabled, off.EnabledSince, off.Created = false, before.Add(-time.Hour), before.Add(-time.Hour)
	if err := jc.c.CreateJob(ctx, off); err != nil {
		t.Fatal(err)
	}
	v, err = jc.c.GetJob(ctx, "off")
	if err != nil || !v.Job.EnabledSince.IsZero() || v.Job.Created.Before(before) || len(v.Next) != 0 {
		t.Fatalf("disabled job %+v, next %v, %v: want no enabled_since, created now, no next times", v.Job, v.Next, err)
	}

	vs, err := jc.c.ListJobs(ctx)
	if err != nil || len(vs) != 2 || vs[0].Job.Name != "nightly" || vs[1].Job.Name != "off" {
		t.Fatalf("list: %v, %v; want nightly and off", vs, err)
	}
}

func TestCreateJobRefusesBadInput(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	badSchedule := nightly("bad")
	badSchedule.Schedule = "0 3 * *"
	badZone := nightly("bad")
	badZone.TimeZone = "Mars/Olympus"
	perRun := nightly("bad")
	perRun.Task.Token, perRun.Task.Job = "abc", "other"
	noCommand := nightly("bad")
	noCommand.Task.Command = ""
	for _, tc := range []struct {
		name string
		job  Job
		want []string
	}{
		{"schedule", badSchedule, []string{`job: schedule: schedule "0 3 * *"`}},
		{"time zone", badZone, []string{"time_zone", "Mars/Olympus"}},
		{"per-run fields", perRun, []string{"job: task: token: set for each run", "job: task: job: set for each run"}},
		{"task", noCommand, []string{"task spec: command: empty"}},
		{"name", nightly("a/b"), []string{`job name "a/b"`}},
	} {
		err := jc.c.CreateJob(ctx, tc.job)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error containing %q", tc.name, err, w)
			}
		}
	}
	if jc.exists(jc.l.Job("bad")) {
		t.Error("a refused job was created")
	}
	if _, err := jc.c.GetJob(ctx, "a/b"); err == nil || !strings.Contains(err.Error(), "job name") {
		t.Errorf("get of a bad name: %v", err)
	}
	if _, err := jc.c.GetJob(ctx, "missing"); !errors.Is(err, ErrJobNotFound) || err.Error() != "get job missing: no such job" {
		t.Errorf("get of a missing job: %v", err)
	}
	if vs, err := jc.c.ListJobs(ctx); err != nil || len(vs) != 0 {
		t.Errorf("list without /jobs: %v, %v", vs, err)
	}
}

func TestUpdateJob(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	if err := jc.c.CreateJob(ctx, nightly("nightly")); err != nil {
		t.Fatal(err)
	}
	v0, _ := jc.c.GetJob(ctx, "nightly")
	time.Sleep(5 * time.Millisecond) // Updated must move

	j := nightly("nightly")
	j.Schedule, j.Created = "*/5 * * * *", time.Time{}
	if err := jc.c.UpdateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	v1, _ := jc.c.GetJob(ctx, "nightly")
	if v1.Job.Schedule != "*/5 * * * *" || !v1.Job.Created.Equal(v0.Job.Created) || !v1.Job.Updated.After(v0.Job.Updated) ||
		!v1.Job.EnabledSince.Equal(v0.Job.EnabledSince) || v1.Version != v0.Version+1 {
		t.Fatalf("after update: %+v (version %d); want the new schedule, created and enabled_since kept, updated moved", v1.Job, v1.Version)
	}

	// Disabling by update keeps EnabledSince; enabling by update sets it to now.
	j.Enabled = false
	if err := jc.c.UpdateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	v2, _ := jc.c.GetJob(ctx, "nightly")
	if v2.Job.Enabled || !v2.Job.EnabledSince.Equal(v0.Job.EnabledSince) || len(v2.Next) != 0 {
		t.Fatalf("after disabling: %+v, next %v", v2.Job, v2.Next)
	}
	time.Sleep(5 * time.Millisecond)
	j.Enabled = true
	if err := jc.c.UpdateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	v3, _ := jc.c.GetJob(ctx, "nightly")
	if !v3.Job.EnabledSince.After(v2.Job.Updated) {
		t.Fatalf("after enabling by update: enabled_since %v, want after %v", v3.Job.EnabledSince, v2.Job.Updated)
	}

	// An update based on a read that another update has overtaken is refused, naming it,
	// and the other update stands.
	stale := v3.Version
	j.Task.Command = "first"
	if err := jc.c.UpdateJobAt(ctx, j, stale); err != nil {
		t.Fatal(err)
	}
	j.Task.Command = "second"
	err := jc.c.UpdateJobAt(ctx, j, stale)
	if !errors.Is(err, ErrJobChanged) || !strings.Contains(err.Error(), "update job nightly: changed since it was read") ||
		!strings.Contains(err.Error(), fmt.Sprintf("version %d", stale)) {
		t.Fatalf("stale update: %v, want %v naming the job and the version", err, ErrJobChanged)
	}
	if v, _ := jc.c.GetJob(ctx, "nightly"); v.Job.Task.Command != "first" {
		t.Errorf("after the refused update the command is %q, want first", v.Job.Task.Command)
	}

	// Updates racing: each is applied whole or refused as changed, never lost silently.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			j := nightly("nightly")
			j.Task.Command = fmt.Sprintf("racer-%d", i)
			errs[i] = jc.c.UpdateJob(ctx, j)
		})
	}
	wg.Wait()
	before := v3.Version + 1
	applied := 0
	for i, err := range errs {
		switch {
		case err == nil:
			applied++
		case !errors.Is(err, ErrJobChanged):
			t.Errorf("racer %d: %v", i, err)
		}
	}
	v, _ := jc.c.GetJob(ctx, "nightly")
	if applied == 0 || v.Version != before+int32(applied) || !strings.HasPrefix(v.Job.Task.Command, "racer-") {
		t.Errorf("%d of the racing updates applied, version %d -> %d, command %q", applied, before, v.Version, v.Job.Task.Command)
	}

	missing := nightly("missing")
	if err := jc.c.UpdateJob(ctx, missing); !errors.Is(err, ErrJobNotFound) {
		t.Errorf("update of a missing job: %v", err)
	}
	bad := nightly("nightly")
	bad.Concurrency = "sometimes"
	if err := jc.c.UpdateJob(ctx, bad); err == nil || !strings.Contains(err.Error(), "concurrency") {
		t.Errorf("update with a bad concurrency: %v", err)
	}
	if err := jc.c.UpdateJobAt(ctx, nightly("nightly"), -1); err == nil || !strings.Contains(err.Error(), "version -1") {
		t.Errorf("update at version -1: %v", err)
	}
}

func TestSetJobEnabled(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	if err := jc.c.CreateJob(ctx, nightly("nightly")); err != nil {
		t.Fatal(err)
	}
	v0, _ := jc.c.GetJob(ctx, "nightly")
	if err := jc.c.SetJobEnabled(ctx, "nightly", false); err != nil {
		t.Fatal(err)
	}
	v1, _ := jc.c.GetJob(ctx, "nightly")
	if v1.Job.Enabled || !v1.Job.EnabledSince.Equal(v0.Job.EnabledSince) || len(v1.Next) != 0 {
		t.Fatalf("disabled: %+v, next %v", v1.Job, v1.Next)
	}
	time.Sleep(5 * time.Millisecond)
	if err := jc.c.SetJobEnabled(ctx, "nightly", true); err != nil {
		t.Fatal(err)
	}
	v2, _ := jc.c.GetJob(ctx, "nightly")
	if !v2.Job.Enabled || !v2.Job.EnabledSince.After(v1.Job.Updated) || len(v2.Next) != JobViewNext {
		t.Fatalf("enabled again: %+v, next %v; want enabled_since now", v2.Job, v2.Next)
	}
	// Enabling an enabled job changes nothing: the times since it was enabled stay due.
	if err := jc.c.SetJobEnabled(ctx, "nightly", true); err != nil {
		t.Fatal(err)
	}
	if v3, _ := jc.c.GetJob(ctx, "nightly"); v3.Version != v2.Version {
		t.Errorf("enabling an enabled job wrote it: version %d -> %d", v2.Version, v3.Version)
	}
	if err := jc.c.SetJobEnabled(ctx, "missing", true); !errors.Is(err, ErrJobNotFound) || err.Error() != "enable job missing: no such job" {
		t.Errorf("enable a missing job: %v", err)
	}
}

func TestDeleteJob(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	if err := jc.c.CreateJob(ctx, nightly("nightly")); err != nil {
		t.Fatal(err)
	}
	// More records than one multi deletes, and a task one of them started.
	id, err := jc.c.Submit(ctx, Spec{Command: "backup", Job: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	const n = deleteBatch + 50
	for i := range n {
		f := Fire{}
		if i == n-1 {
			f = Fire{Outcome: FireStarted, Task: id}
		}
		if err := jc.fire(nil, "nightly", t0.Add(time.Duration(i)*time.Second), f); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := jc.c.GetJob(ctx, "nightly"); err != nil || v.FireCount != n {
		t.Fatalf("before delete: %v, %v", v, err)
	}
	// Another node the master keeps under the job (a sharded job's plan) goes too.
	if _, err := jc.s.Conn().Create(jc.l.Job("nightly")+"/shards", []byte(`{"w1":["0"]}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := jc.c.DeleteJob(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if jc.exists(jc.l.Job("nightly")) {
		t.Fatal("the job is still there")
	}
	if tk, err := jc.c.Get(ctx, id); err != nil || tk.State != Pending {
		t.Errorf("the job's task after the delete: %v, %v; want it untouched", tk, err)
	}
	err = jc.c.DeleteJob(ctx, "nightly")
	if !errors.Is(err, ErrJobNotFound) || err.Error() != "delete job nightly: no such job" {
		t.Errorf("second delete: %v", err)
	}
	// A job without a fires directory (written by hand) goes too.
	if _, err := jc.s.Conn().Create(jc.l.Job("bare"), []byte(`{"task":{"command":"x"}}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := jc.c.DeleteJob(ctx, "bare"); err != nil || jc.exists(jc.l.Job("bare")) {
		t.Errorf("delete of a job without fires: %v", err)
	}
	// A node under the job that has children of its own is not the client's to guess
	// about: the delete stops, naming it, instead of trying for ever.
	if err := jc.c.CreateJob(ctx, nightly("odd")); err != nil {
		t.Fatal(err)
	}
	odd := jc.l.Job("odd") + "/extra"
	for _, p := range []string{odd, odd + "/child"} {
		if _, err := jc.s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if err := jc.c.DeleteJob(ctx, "odd"); err == nil || !strings.Contains(err.Error(), "delete job odd: "+odd+" has children") {
		t.Errorf("delete of a job with an unknown subtree: %v", err)
	}
	if !jc.exists(jc.l.Job("odd")) {
		t.Error("the refused delete deleted the job")
	}
}

// TestDeleteJobWhileFiring: a master recording fires while the job is deleted does not
// stop the deletion, and nothing of the job is left.
func TestDeleteJobWhileFiring(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	master := jc.connect(coordinator.Config{})
	for round := range 5 {
		name := fmt.Sprintf("busy-%d", round)
		if err := jc.c.CreateJob(ctx, nightly(name)); err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range 50 {
			if err := jc.fire(master, name, t0.Add(time.Duration(i)*time.Second), Fire{}); err != nil {
				t.Fatal(err)
			}
		}
		stop, done := make(chan struct{}), make(chan int)
		go func() {
			recorded := 0
			defer func() { done <- recorded }()
			for i := 50; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
				err := jc.fire(master, name, t0.Add(time.Duration(i)*time.Second), Fire{})
				if errors.Is(err, zk.ErrNoNode) {
					return // the job has gone
				}
				if err != nil {
					t.Errorf("master: %v", err)
					return
				}
				recorded++
			}
		}()
		err := jc.c.DeleteJob(ctx, name)
		close(stop)
		recorded := <-done
		if err != nil {
			t.Fatalf("delete while the master records fires: %v", err)
		}
		if jc.exists(jc.l.Job(name)) {
			t.Fatalf("%s is still there after the delete (the master recorded %d fires meanwhile)", name, recorded)
		}
	}
}

func TestRunNow(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	j := nightly("nightly")
	j.Enabled = false
	j.Task.Env = map[string]string{"MODE": "full"}
	if err := jc.c.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	ids, err := jc.c.RunNow(ctx, "nightly")
	if err != nil || len(ids) != 1 {
		t.Fatal(ids, err)
	}
	id := ids[0]
	tk, err := jc.c.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	s := tk.Spec
	if s.Job != "nightly" || !s.Scheduled.IsZero() || s.Command != "backup" || !slices.Equal(s.Args, []string{"--all"}) ||
		s.Env["MODE"] != "full" || s.Retries != 2 || s.Token == "" || s.Submitted.IsZero() {
		t.Fatalf("run-now task %+v: want the job's task, naming the job, no scheduled time", s)
	}
	if id2, err := jc.c.RunNow(ctx, "nightly"); err != nil || len(id2) != 1 || id2[0] == id {
		t.Errorf("a second run-now: %v, %v; want another task", id2, err)
	}
	// A sharded job's run-now is one task per item, all or none.
	sj := nightly("sharded")
	sj.Shards, sj.ShardParams = 3, []string{"a", "b", "c"}
	if err := jc.c.CreateJob(ctx, sj); err != nil {
		t.Fatal(err)
	}
	items, err := jc.c.RunNow(ctx, "sharded")
	if err != nil || len(items) != 3 {
		t.Fatalf("run-now of a sharded job: %v, %v; want three tasks", items, err)
	}
	for i, id := range items {
		tk, err := jc.c.Get(ctx, id)
		if err != nil || tk.Spec.Shard == nil || tk.Spec.Shard.Item != i || tk.Spec.Shard.Param != sj.ShardParams[i] {
			t.Errorf("item %d: %+v, %v", i, tk, err)
		}
	}
	if _, err := jc.c.RunNow(ctx, "missing"); !errors.Is(err, ErrJobNotFound) || err.Error() != "run job missing: no such job" {
		t.Errorf("run-now of a missing job: %v", err)
	}
}

// TestJobViewFires: GetJob gives the newest fire records first with their names, the
// tasks of those that have not ended, and an @every job's next times counted from its
// newest fire, as the master counts them.
func TestJobViewFires(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	j := nightly("hourly")
	j.Schedule, j.TimeZone = "@every 1h", ""
	if err := jc.c.CreateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	last := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Second)
	// The job was enabled days ago (the client sets EnabledSince to now: write it by hand).
	j.EnabledSince = last.Add(-100 * time.Hour)
	b, _ := json.Marshal(j)
	if _, err := jc.s.Conn().Set(jc.l.Job("hourly"), b, -1); err != nil {
		t.Fatal(err)
	}
	ended, err := jc.c.Submit(ctx, Spec{Command: "x", Job: "hourly"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(Status{State: Done, Finished: time.Now()})
	if _, err := jc.s.Conn().Create(jc.l.Status(ended), b, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	running, err := jc.c.Submit(ctx, Spec{Command: "x", Job: "hourly"})
	if err != nil {
		t.Fatal(err)
	}
	for i := JobViewFires + 4; i >= 1; i-- {
		if err := jc.fire(nil, "hourly", last.Add(-time.Duration(i)*time.Hour), Fire{Reason: ReasonMisfire}); err != nil {
			t.Fatal(err)
		}
	}
	if err := jc.fire(nil, "hourly", last.Add(-30*time.Minute), Fire{Outcome: FireStarted, Task: ended}); err != nil {
		t.Fatal(err)
	}
	if err := jc.fire(nil, "hourly", last, Fire{Outcome: FireStarted, Task: running, Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	garbled := jc.l.Fire("hourly", FireName(last.Add(-45*time.Minute)))
	if _, err := jc.s.Conn().Create(garbled, []byte("{"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := jc.s.Conn().Create(jc.l.Fire("hourly", "not-a-fire"), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	v, err := jc.c.GetJob(ctx, "hourly")
	if err != nil {
		t.Fatal(err)
	}
	if v.FireCount != JobViewFires+7 || len(v.Fires) != JobViewFires {
		t.Fatalf("%d records of %d, want %d of %d", len(v.Fires), v.FireCount, JobViewFires, JobViewFires+7)
	}
	f0, f1, f2 := v.Fires[0], v.Fires[1], v.Fires[2]
	if f0.Name != FireName(last) || f0.Outcome != FireStarted || f0.Task != running || f0.Epoch != 3 || !f0.Scheduled.Equal(last) {
		t.Errorf("newest record %+v", f0)
	}
	if f1.Name != FireName(last.Add(-30*time.Minute)) || f1.Task != ended {
		t.Errorf("second record %+v", f1)
	}
	if f2.Name != baseName(garbled) || f2.Error == "" {
		t.Errorf("garbled record %+v: want its name and an error", f2)
	}
	if v.Fires[3].Reason != ReasonMisfire || v.Fires[3].Outcome != FireSkipped {
		t.Errorf("fourth record %+v", v.Fires[3])
	}
	for i := 1; i < len(v.Fires); i++ {
		if v.Fires[i].Name >= v.Fires[i-1].Name {
			t.Fatalf("records not newest first: %s before %s", v.Fires[i-1].Name, v.Fires[i].Name)
		}
	}
	if !slices.Equal(v.Active, []string{running}) {
		t.Errorf("active %v, want [%s]", v.Active, running)
	}
	want := []time.Time{last.Add(time.Hour), last.Add(2 * time.Hour)}
	if len(v.Next) != JobViewNext || !v.Next[0].Equal(want[0]) || !v.Next[1].Equal(want[1]) {
		t.Errorf("next %v, want from %v hourly", v.Next, want)
	}
}

func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

func TestNextFires(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 30, 0, time.UTC)
	base := Job{Name: "j", Task: Spec{Command: "x"}, Schedule: "*/10 * * * *", Enabled: true}
	at := func(hms string) time.Time {
		tm, _ := time.Parse("15:04:05", hms)
		return time.Date(2026, 11, 27, tm.Hour(), tm.Minute(), tm.Second(), 0, time.UTC)
	}
	show := func(ts []time.Time) string {
		var s []string
		for _, t := range ts {
			s = append(s, t.Format("15:04:05"))
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		name   string
		change func(j *Job)
		last   time.Time
		want   string
	}{
		{"cron", func(*Job) {}, time.Time{}, "09:10:00 09:20:00 09:30:00"},
		{"seconds", func(j *Job) { j.Schedule = "*/20 * * * * *" }, time.Time{}, "09:00:40 09:01:00 09:01:20"},
		{"disabled", func(j *Job) { j.Enabled = false }, time.Time{}, ""},
		{"no schedule", func(j *Job) { j.Schedule = "" }, time.Time{}, ""},
		{"end", func(j *Job) { j.End = at("09:20:00") }, time.Time{}, "09:10:00 09:20:00"},
		{"past its end", func(j *Job) { j.End = at("08:00:00") }, time.Time{}, ""},
		{"start", func(j *Job) { j.Start = at("10:00:00") }, time.Time{}, "10:00:00 10:10:00 10:20:00"},
		{"every, from the last fire", func(j *Job) { j.Schedule = "@every 25m" }, at("08:50:07"), "09:15:07 09:40:07 10:05:07"},
		{"every, from enabled_since", func(j *Job) { j.Schedule, j.EnabledSince = "@every 25m", at("08:00:02") }, time.Time{},
			"09:15:02 09:40:02 10:05:02"},
	} {
		j := base
		tc.change(&j)
		if got := show(NextFires(j, tc.last, now, 3)); got != tc.want {
			t.Errorf("%s: next %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestJobsUnderRoleACLs: with role ACLs, a submitter creates, changes and deletes jobs
// (the master's fire records included), the master records fires, and a worker can do
// neither.
func TestJobsUnderRoleACLs(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	var roles []string
	for _, r := range []string{coordinator.RoleSubmitter, coordinator.RoleMaster, coordinator.RoleWorker} {
		roles = append(roles, r+"=digest:"+coordinator.DigestID(r, "pw-"+r))
	}
	parsed, err := coordinator.ParseRoles(roles)
	if err != nil {
		t.Fatal(err)
	}
	policy := coordinator.NewPolicy(parsed, jc.l.ACLRules())
	as := func(role string) *coordinator.Session {
		return jc.connect(coordinator.Config{Auth: []coordinator.Auth{{Scheme: "digest", Credentials: role + ":pw-" + role}},
			Policy: policy, Signer: jc.keys.Signer(role)})
	}
	sub, master, worker := as(coordinator.RoleSubmitter), as(coordinator.RoleMaster), as(coordinator.RoleWorker)
	sc, wc := NewClient(sub, jc.l), NewClient(worker, jc.l)
	if err := sc.CreateJob(ctx, nightly("nightly")); err != nil {
		t.Fatalf("submitter creates: %v", err)
	}
	if err := wc.CreateJob(ctx, nightly("worker-job")); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("worker creates: %v, want %v", err, zk.ErrNoAuth)
	}
	if err := wc.SetJobEnabled(ctx, "nightly", false); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("worker disables: %v, want %v", err, zk.ErrNoAuth)
	}
	t0 := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	for i := range 3 {
		if err := jc.fire(master, "nightly", t0.Add(time.Duration(i)*24*time.Hour), Fire{}); err != nil {
			t.Fatalf("master records a fire: %v", err)
		}
	}
	if err := jc.fire(sub, "nightly", t0.Add(-24*time.Hour), Fire{}); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("submitter records a fire: %v, want %v", err, zk.ErrNoAuth)
	}
	if v, err := wc.GetJob(ctx, "nightly"); err != nil || v.FireCount != 3 {
		t.Errorf("worker reads: %v, %v", v, err)
	}
	if err := sc.UpdateJob(ctx, nightly("nightly")); err != nil {
		t.Errorf("submitter updates: %v", err)
	}
	if err := sc.SetJobEnabled(ctx, "nightly", false); err != nil {
		t.Errorf("submitter disables: %v", err)
	}
	if _, err := sc.RunNow(ctx, "nightly"); err != nil {
		t.Errorf("submitter runs now: %v", err)
	}
	if err := wc.DeleteJob(ctx, "nightly"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("worker deletes: %v, want %v", err, zk.ErrNoAuth)
	}
	if err := sc.DeleteJob(ctx, "nightly"); err != nil {
		t.Fatalf("submitter deletes: %v", err)
	}
	if jc.exists(jc.l.Job("nightly")) {
		t.Error("the job is still there")
	}
}

// TestDAGTaskSaysWhatItWaitsFor: a pending DAG task's waiting names the tasks it waits
// for that have not ended done, with where they stand; once they are done it no longer
// does.
func TestDAGTaskSaysWhatItWaitsFor(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	// Another task first, so that the DAG's block starts after a task of no DAG.
	plain, err := jc.c.Submit(ctx, Spec{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := jc.c.SubmitDAG(ctx, []DAGNode{node("a"), node("b"), node("c", "a", "b")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := jc.c.Get(ctx, ids["c"])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"waits for", "a (" + ids["a"] + ", not ended)", "b (" + ids["b"] + ", not ended)"} {
		if !strings.Contains(got.Waiting, want) {
			t.Errorf("c waiting %q, want it to say %q", got.Waiting, want)
		}
	}
	done, _ := json.Marshal(Status{State: Done, Finished: time.Now()})
	failed, _ := json.Marshal(Status{State: Failed, Finished: time.Now()})
	conn := jc.s.Conn()
	if _, err := conn.Create(jc.l.Status(ids["a"]), done, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(jc.l.Status(ids["b"]), failed, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	got, _ = jc.c.Get(ctx, ids["c"])
	if strings.Contains(got.Waiting, "a (") || !strings.Contains(got.Waiting, "b ("+ids["b"]+", failed)") {
		t.Errorf("c waiting %q once a is done and b failed", got.Waiting)
	}
	if p, _ := jc.c.Get(ctx, plain); p.State != Pending || strings.Contains(p.Waiting, "waits for") {
		t.Errorf("a pending task of no DAG: %s, waiting %q", p.State, p.Waiting)
	}
}
