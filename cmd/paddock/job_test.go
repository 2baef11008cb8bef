package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// jobRun runs paddock job --zk addr ARGS, signing as a submitter with the test's keys
// (keyArgs), and returns its exit code, stdout and stderr.
func jobRun(t *testing.T, addr string, args ...string) (int, string, string) {
	t.Helper()
	return run(t, append(append([]string{"job", "--zk", addr}, keyArgs(t)...), args...)...)
}

// testKeys are the signing keys of each test that asks for them, made on first use.
var testKeys sync.Map // *testing.T -> *testutil.Keys

// keyArgs are the flags that make a CLI sign as a submitter with the test's keys and
// trust them: --signing-key and --signers-file.
func keyArgs(t *testing.T) []string {
	t.Helper()
	k, ok := testKeys.Load(t)
	if !ok {
		k, _ = testKeys.LoadOrStore(t, testutil.NewKeys(t))
		t.Cleanup(func() { testKeys.Delete(t) })
	}
	keys := k.(*testutil.Keys)
	return []string{"--signing-key", keys.KeyFile("submitter"), "--signers-file", keys.SignersFile}
}

// jobOK runs paddock job and fails the test unless it exits 0.
func jobOK(t *testing.T, addr string, args ...string) string {
	t.Helper()
	code, stdout, stderr := jobRun(t, addr, args...)
	if code != 0 {
		t.Fatalf("paddock job %q: exit %d, stderr %q", args, code, stderr)
	}
	return stdout
}

func jobJSON(t *testing.T, addr, name string) task.JobView {
	t.Helper()
	var v task.JobView
	out := jobOK(t, addr, "get", name, "--json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("paddock job get %s --json: %v\n%s", name, err, out)
	}
	return v
}

// TestJobCLI: a job made with flags holds what they say; update changes only the
// flags given; disable, enable, run-now and delete do what they say; get and list show
// it as a table and as JSON.
func TestJobCLI(t *testing.T) {
	addr := startZKPaddock(t)
	out := jobOK(t, addr, "create", "nightly", "--schedule", "30 2 * * *", "--time-zone", "Europe/Paris",
		"--start", "2026-01-01T00:00:00Z", "--end", "2036-01-01T00:00:00+01:00", "--misfire", "skip", "--misfire-threshold", "1m",
		"--concurrency", "queue", "--history", "50", "--retries", "2", "--retry-delay", "5s", "--timeout", "1h",
		"--priority", "7", "--env", "MODE=full", "--env", "DB_PASSWORD=S3cret", "--dir", "/srv",
		"--", "backup.sh", "--all", "-v")
	if out != "nightly created\n" {
		t.Errorf("create printed %q", out)
	}
	v := jobJSON(t, addr, "nightly")
	j := v.Job
	if j.Name != "nightly" || !j.Enabled || j.Schedule != "30 2 * * *" || j.TimeZone != "Europe/Paris" ||
		!j.Start.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || !j.End.Equal(time.Date(2035, 12, 31, 23, 0, 0, 0, time.UTC)) ||
		j.Misfire != "skip" || time.Duration(j.MisfireThreshold) != time.Minute || j.Concurrency != "queue" || j.History != 50 {
		t.Errorf("job as created: %+v", j)
	}
	s := j.Task
	if s.Command != "backup.sh" || !slices.Equal(s.Args, []string{"--all", "-v"}) || s.Retries != 2 ||
		time.Duration(s.RetryDelay) != 5*time.Second || time.Duration(s.Timeout) != time.Hour || s.Priority != 7 ||
		s.Dir != "/srv" || !maps.Equal(s.Env, map[string]string{"MODE": "full", "DB_PASSWORD": "S3cret"}) {
		t.Errorf("task as created: %+v", s)
	}
	if len(v.Next) != task.JobViewNext {
		t.Errorf("next %v", v.Next)
	}

	// A sharded job with a selector.
	jobOK(t, addr, "create", "spread", "--schedule", "@every 1m", "--selector", "os=linux,zone=a", "--shards", "3",
		"--shard-param", "eu", "--shard-param", "us", "--", "sync.sh")
	sj := jobJSON(t, addr, "spread").Job
	if sj.Shards != 3 || !slices.Equal(sj.ShardParams, []string{"eu", "us"}) ||
		!maps.Equal(map[string]string(sj.Task.Selector), map[string]string{"os": "linux", "zone": "a"}) {
		t.Errorf("sharded job as created: %+v", sj)
	}
	if code, _, errOut := jobRun(t, addr, "create", "bad", "--schedule", "@hourly", "--shards", "2",
		"--shard-param", "a", "--shard-param", "b", "--shard-param", "c", "--", "x"); code != 2 || !strings.Contains(errOut, "shard_params") {
		t.Errorf("three parameters for two shards: exit %d, %q", code, errOut)
	}
	if code, _, errOut := jobRun(t, addr, "create", "bad", "--selector", "os", "--", "x"); code != 2 || !strings.Contains(errOut, "--selector") {
		t.Errorf("a bad selector: exit %d, %q", code, errOut)
	}
	jobOK(t, addr, "delete", "spread")

	// A fire record, as the master writes it, shows in get and list.
	conn := zkConn(t, addr)
	fireAt := time.Date(2026, 3, 1, 1, 30, 0, 0, time.UTC)
	rec, _ := json.Marshal(task.Fire{Scheduled: fireAt, Recorded: fireAt.Add(time.Second), Outcome: task.FireSkipped,
		Reason: task.ReasonMisfire, Covers: 3, First: fireAt.Add(-48 * time.Hour)})
	if _, err := conn.Create(task.DefaultLayout.Fire("nightly", task.FireName(fireAt)), rec, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	table := jobOK(t, addr, "get", "nightly")
	for _, want := range []string{"Name:", "nightly", "Enabled:", "yes (since ", "30 2 * * * (Europe/Paris)",
		"Window:", "2026-01-01T00:00:00Z to 2035-12-31T23:00:00Z", "skip (threshold 1m0s)", "queue", "50 records kept, 1 now",
		"backup.sh --all -v", "DB_PASSWORD, MODE", "timeout 1h0m0s, retries 2 (delay 5s), priority 7", "Next:",
		"T02:30:00+0", " Europe/Paris)", "Dir:", "/srv",
		"SCHEDULED", "2026-03-01T01:30:00Z", "skipped (3 times from 2026-02-27T01:30:00Z)", task.ReasonMisfire} {
		if !strings.Contains(table, want) {
			t.Errorf("get does not show %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "S3cret") {
		t.Errorf("get shows an environment value:\n%s", table)
	}
	list := jobOK(t, addr, "list")
	if lines := strings.Split(strings.TrimSpace(list), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.Contains(lines[1], "nightly") || !strings.Contains(lines[1], "2026-03-01T01:30:00Z skipped") ||
		!strings.Contains(lines[1], "backup.sh --all -v") {
		t.Errorf("list:\n%s", list)
	}

	// update with flags changes what they give, nothing else.
	if out := jobOK(t, addr, "update", "nightly", "--schedule", "*/5 * * * *", "--end", "", "--env", "MODE=quick"); out != "nightly updated\n" {
		t.Errorf("update printed %q", out)
	}
	u := jobJSON(t, addr, "nightly")
	if u.Job.Schedule != "*/5 * * * *" || !u.Job.End.IsZero() || !u.Job.Start.Equal(j.Start) || u.Job.Task.Command != "backup.sh" ||
		!maps.Equal(u.Job.Task.Env, map[string]string{"MODE": "quick"}) || u.Job.Task.Retries != 2 || u.Job.Concurrency != "queue" ||
		!u.Job.Created.Equal(j.Created) || u.Version != v.Version+1 {
		t.Errorf("after update --schedule --end --env: %+v (version %d)", u.Job, u.Version)
	}
	jobOK(t, addr, "update", "nightly", "--", "restore.sh", "x")
	if u := jobJSON(t, addr, "nightly"); u.Job.Task.Command != "restore.sh" || !slices.Equal(u.Job.Task.Args, []string{"x"}) ||
		u.Job.Schedule != "*/5 * * * *" {
		t.Errorf("after update -- restore.sh x: %+v", u.Job)
	}

	if out := jobOK(t, addr, "disable", "nightly"); out != "nightly disabled\n" {
		t.Errorf("disable printed %q", out)
	}
	if d := jobJSON(t, addr, "nightly"); d.Job.Enabled || len(d.Next) != 0 {
		t.Errorf("disabled: %+v, next %v", d.Job, d.Next)
	}
	if out := jobOK(t, addr, "get", "nightly"); !regexp.MustCompile(`(?m)^Next: +none$`).MatchString(out) {
		t.Errorf("get of a disabled job does not say Next: none:\n%s", out)
	}
	out = jobOK(t, addr, "run-now", "nightly")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id := lines[len(lines)-1]
	if task.CheckID(id) != nil {
		t.Fatalf("run-now printed %q, want a task id", out)
	}
	tk, err := runTaskGet(t, addr, id)
	if err != nil || tk.Spec.Job != "nightly" || tk.Spec.Command != "restore.sh" || !tk.Spec.Scheduled.IsZero() {
		t.Errorf("the run-now task: %+v, %v", tk, err)
	}
	if out := jobOK(t, addr, "enable", "nightly"); out != "nightly enabled\n" {
		t.Errorf("enable printed %q", out)
	}
	if e := jobJSON(t, addr, "nightly"); !e.Job.Enabled || !e.Job.EnabledSince.After(j.EnabledSince) {
		t.Errorf("enabled again: %+v; want enabled_since moved", e.Job)
	}

	var all []task.JobView
	if err := json.Unmarshal([]byte(jobOK(t, addr, "list", "--json")), &all); err != nil || len(all) != 1 || all[0].Job.Name != "nightly" {
		t.Errorf("list --json: %v, %v", all, err)
	}
	if out := jobOK(t, addr, "delete", "nightly"); out != "nightly deleted\n" {
		t.Errorf("delete printed %q", out)
	}
	if ok, _, _ := conn.Exists(task.DefaultLayout.Job("nightly")); ok {
		t.Error("the job is still there after delete")
	}
	if _, err := runTaskGet(t, addr, id); err != nil {
		t.Errorf("the job's task after delete: %v", err)
	}
	if out := jobOK(t, addr, "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("list --json of no jobs: %q", out)
	}
}

// runTaskGet reads task id with paddock task get.
func runTaskGet(t *testing.T, addr, id string) (task.Task, error) {
	t.Helper()
	var tk task.Task
	code, out, stderr := run(t, "task", "--zk", addr, "get", id)
	if code != 0 {
		return tk, fmt.Errorf("paddock task get %s: exit %d: %s", id, code, stderr)
	}
	return tk, json.Unmarshal([]byte(out), &tk)
}

// TestJobCLIFile: --file creates and replaces a job from JSON, such as get --json's;
// the name comes from the file or NAME.
func TestJobCLIFile(t *testing.T) {
	addr := startZKPaddock(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "job.json")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"schedule": "@every 1h", "task": {"command": "sync", "args": ["a"]}, "enabled": true}`)
	jobOK(t, addr, "create", "sync", "--file", file)
	v := jobJSON(t, addr, "sync")
	if v.Job.Schedule != "@every 1h" || v.Job.Task.Command != "sync" || !v.Job.Enabled {
		t.Fatalf("created from a file: %+v", v.Job)
	}
	// get --json's job, changed, replaces the definition.
	b, _ := json.Marshal(v.Job)
	write(strings.Replace(string(b), `"@every 1h"`, `"@every 2h"`, 1))
	jobOK(t, addr, "update", "--file", file)
	if u := jobJSON(t, addr, "sync"); u.Job.Schedule != "@every 2h" || u.Job.Task.Command != "sync" || !u.Job.Created.Equal(v.Job.Created) {
		t.Errorf("updated from a file: %+v", u.Job)
	}
	code, _, stderr := jobRun(t, addr, "update", "other", "--file", file)
	if code != 2 || !strings.Contains(stderr, `names the job "sync", the command line "other"`) {
		t.Errorf("update with two names: exit %d, %q", code, stderr)
	}
	write(`{"task": {"command": "x"}, "shedule": "@daily"}`)
	if code, _, stderr := jobRun(t, addr, "create", "typo", "--file", file); code != 2 || !strings.Contains(stderr, `"shedule"`) {
		t.Errorf("unknown field: exit %d, %q; want 2 naming it", code, stderr)
	}
	write(`{"task": {"command": "x"}}`)
	if code, _, stderr := jobRun(t, addr, "create", "--file", file); code != 2 || !strings.Contains(stderr, "no job name") {
		t.Errorf("no name: exit %d, %q", code, stderr)
	}
	if code, _, stderr := jobRun(t, addr, "create", "both", "--file", file, "--schedule", "@daily"); code != 2 ||
		!strings.Contains(stderr, "--file and --schedule") {
		t.Errorf("--file with a flag: exit %d, %q", code, stderr)
	}
	if code, _, stderr := jobRun(t, addr, "create", "gone", "--file", filepath.Join(dir, "missing.json")); code != 2 ||
		!strings.Contains(stderr, "missing.json") {
		t.Errorf("missing file: exit %d, %q", code, stderr)
	}
	// stdin
	cmd := command(append(append([]string{"job", "--zk", addr}, keyArgs(t)...), "create", "piped", "--file", "-")...)
	cmd.Stdin = strings.NewReader(`{"task": {"command": "x"}}`)
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "piped created\n" {
		t.Errorf("--file -: %v, %q", err, out)
	}
}

// TestJobCLIErrors: bad input is a usage error (2) naming what is wrong, each problem
// once; a failed operation exits 1 saying the step and the job once.
func TestJobCLIErrors(t *testing.T) {
	addr := startZKPaddock(t)
	jobOK(t, addr, "create", "nightly", "--schedule", "@daily", "--", "true")
	tests := []struct {
		args []string
		code int
		want string // in stderr; exact when it ends with a newline
	}{
		{[]string{"create", "nightly", "--", "true"}, 1, "paddock job: create job nightly: already exists\n"},
		{[]string{"get", "missing"}, 1, "paddock job: get job missing: no such job\n"},
		{[]string{"update", "missing", "--schedule", "@daily"}, 1, "paddock job: update job missing: no such job\n"},
		{[]string{"enable", "missing"}, 1, "paddock job: enable job missing: no such job\n"},
		{[]string{"delete", "missing"}, 1, "paddock job: delete job missing: no such job\n"},
		{[]string{"run-now", "missing"}, 1, "paddock job: run job missing: no such job\n"},
		{[]string{"get", "a/b"}, 1, "paddock job: job name \"a/b\": want 1 to 128 letters"},
		{[]string{"create", "bad", "--schedule", "61 * * * *", "--", "true"}, 2, "paddock job: schedule: schedule \"61 * * * *\""},
		{[]string{"create", "bad", "--time-zone", "Mars/Olympus", "--schedule", "@daily", "--", "true"}, 2, "time_zone"},
		{[]string{"create", "bad", "--concurrency", "sometimes", "--retries", "-1", "--", "true"}, 2, "concurrency: \"sometimes\""},
		{[]string{"create", "bad", "--start", "tomorrow", "--", "true"}, 2, "--start \"tomorrow\": want an RFC 3339 time"},
		{[]string{"create", "bad", "--env", "NOEQUALS", "--", "true"}, 2, "--env \"NOEQUALS\": want K=V"},
		{[]string{"create", "bad"}, 2, "want a job name and, after --, the command it runs"},
		{[]string{"update", "nightly", "--misfire", "never"}, 2, "misfire: \"never\""},
		{[]string{"enable"}, 2, "accepts 1 arg(s)"},
	}
	for _, tt := range tests {
		code, _, stderr := jobRun(t, addr, tt.args...)
		ok := code == tt.code && strings.Contains(stderr, tt.want)
		if strings.HasSuffix(tt.want, "\n") {
			ok = code == tt.code && stderr == tt.want
		}
		if !ok || strings.Contains(stderr, "job: job:") {
			t.Errorf("paddock job %q: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
	// Both problems of a job with two, each once.
	_, _, stderr := jobRun(t, addr, "create", "bad", "--concurrency", "sometimes", "--retries", "-1", "--", "true")
	if !strings.Contains(stderr, "retries: -1") || strings.Count(stderr, "concurrency: \"sometimes\"") != 1 {
		t.Errorf("two problems: %q", stderr)
	}
	// Nothing refused was written, and the refused update left the job as it was.
	v := jobJSON(t, addr, "nightly")
	if v.Job.Misfire != "" || v.Version != 0 {
		t.Errorf("after a refused update: %+v, version %d", v.Job, v.Version)
	}
	if code, _, _ := jobRun(t, addr, "get", "bad"); code != 1 {
		t.Errorf("a refused job was created")
	}
}

// TestJobCLIShowsFault: a job the master has in error says so in get (the step, the
// reason, the tries and the next try) and in list (in place of its next time).
func TestJobCLIShowsFault(t *testing.T) {
	addr := startZKPaddock(t)
	jobOK(t, addr, "create", "stuck", "--schedule", "@every 1m", "--", "true")
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	l := task.DefaultLayout
	since := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	data, _ := json.Marshal(task.Fault{Kind: task.FaultJob, Name: "stuck", Step: "fire", Error: "zk: not authenticated",
		Since: since, Last: since, Tries: 3, Next: since.Add(time.Minute)})
	for _, p := range []string{l.Faults(), l.JobFaults()} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(l.JobFault("stuck"), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	out := jobOK(t, addr, "get", "stuck")
	if want := "the master cannot fire it: zk: not authenticated (3 tries since 2026-05-01T10:00:00Z; next 2026-05-01T10:01:00Z"; !strings.Contains(out, want) {
		t.Errorf("get does not say %q:\n%s", want, out)
	}
	if out := jobOK(t, addr, "list"); !regexp.MustCompile(`(?m)^stuck +yes +@every 1m \(UTC\) +in error `).MatchString(out) {
		t.Errorf("list does not show stuck in error:\n%s", out)
	}
}
