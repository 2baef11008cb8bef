package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

func jobBody(name string) map[string]any {
	return map[string]any{"name": name, "schedule": "0 3 * * *", "time_zone": "Europe/Paris", "enabled": true,
		"concurrency": "queue", "task": map[string]any{"command": "/usr/bin/backup", "args": []string{"--all"}, "timeout": "1h"}}
}

func decodeView(t *testing.T, r response) task.JobView {
	t.Helper()
	var v task.JobView
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("a job view: %v: %s", err, r.body)
	}
	return v
}

// TestJobsAPI: viewers read jobs; operators, with the CSRF token, create, update,
// enable, disable, run and delete them, each change audited; bad input is 400 naming
// the field and changes nothing.
func TestJobsAPI(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	tc := task.NewClient(f.session, task.DefaultLayout)
	viewer, op := f.login(t, "vic"), f.login(t, "olga")

	r := viewer.do("GET", "/api/v1/jobs", nil)
	expect(t, r, http.StatusOK, "list of none")
	if strings.TrimSpace(r.body) != `{"jobs":[]}` {
		t.Errorf("list of none: %s", r.body)
	}

	// Changes: the viewer may not, nor anyone without the CSRF token.
	expect(t, viewer.do("POST", "/api/v1/jobs", jobBody("nightly")), http.StatusForbidden, "viewer creates")
	token := op.csrf
	op.csrf = ""
	expect(t, op.do("POST", "/api/v1/jobs", jobBody("nightly")), http.StatusForbidden, "create without CSRF")
	op.csrf = token
	if ok, _, _ := f.conn.Exists(task.DefaultLayout.Job("nightly")); ok {
		t.Fatal("a refused create made the job")
	}

	// Bad input is 400 naming the field, and creates nothing.
	for _, bad := range []struct {
		change func(b map[string]any)
		field  string
	}{
		{func(b map[string]any) { b["schedule"] = "0 3 * *" }, `schedule: schedule "0 3 * *"`},
		{func(b map[string]any) { b["time_zone"] = "Mars/Olympus" }, `time_zone "Mars/Olympus"`},
		{func(b map[string]any) { b["misfire"] = "sometimes" }, `misfire: "sometimes"`},
		{func(b map[string]any) { b["history"] = -1 }, "history: -1"},
		{func(b map[string]any) { b["misfire_threshold"] = "soon" }, "misfire_threshold: "},
		{func(b map[string]any) { b["shedule"] = "@daily" }, "shedule"},
		{func(b map[string]any) { b["name"] = "a b" }, `name: job name "a b"`},
		{func(b map[string]any) { b["task"] = map[string]any{"command": " "} }, "command: empty"},
		{func(b map[string]any) { b["task"] = map[string]any{"command": "x", "token": "t"} }, "task: token: set for each run"},
		{func(b map[string]any) { b["task"] = map[string]any{"command": "x", "retries": -1} }, "retries: -1"},
		{func(b map[string]any) { b["task"] = map[string]any{"command": "x", "timeout": "soon"} }, "task.timeout: "},
		{func(b map[string]any) { b["start"] = "tomorrow" }, `start: parsing time`},
	} {
		b := jobBody("bad")
		bad.change(b)
		r := op.do("POST", "/api/v1/jobs", b)
		expect(t, r, http.StatusBadRequest, "bad "+bad.field)
		if e, _ := r.json["error"].(string); !strings.Contains(e, bad.field) {
			t.Errorf("bad %s: error %q does not name the field", bad.field, e)
		}
	}
	if ok, _, _ := f.conn.Exists(task.DefaultLayout.Jobs()); ok {
		if names, _, _ := f.conn.Children(task.DefaultLayout.Jobs()); len(names) > 0 {
			t.Fatalf("jobs after bad input: %v", names)
		}
	}

	r = op.do("POST", "/api/v1/jobs", jobBody("nightly"))
	expect(t, r, http.StatusCreated, "create")
	v := decodeView(t, r)
	if v.Job.Name != "nightly" || v.Job.Concurrency != "queue" || v.Job.Task.Command != "/usr/bin/backup" || !v.Job.Enabled ||
		v.Job.EnabledSince.IsZero() || len(v.Next) != task.JobViewNext {
		t.Fatalf("created: %s", r.body)
	}
	r = op.do("POST", "/api/v1/jobs", jobBody("nightly"))
	expect(t, r, http.StatusConflict, "create again")
	if e, _ := r.json["error"].(string); e != "create job nightly: already exists" {
		t.Errorf("create again: %q", e)
	}

	// Reads.
	r = viewer.do("GET", "/api/v1/jobs", nil)
	expect(t, r, http.StatusOK, "list")
	var list struct{ Jobs []task.JobView }
	if err := json.Unmarshal([]byte(r.body), &list); err != nil || len(list.Jobs) != 1 || list.Jobs[0].Job.Name != "nightly" {
		t.Fatalf("list: %v: %s", err, r.body)
	}
	expect(t, viewer.do("GET", "/api/v1/jobs/nightly", nil), http.StatusOK, "get")
	r = viewer.do("GET", "/api/v1/jobs/missing", nil)
	expect(t, r, http.StatusNotFound, "get missing")
	if e, _ := r.json["error"].(string); e != "get job missing: no such job" {
		t.Errorf("get missing: %q", e)
	}
	expect(t, viewer.do("GET", "/api/v1/jobs/-bad", nil), http.StatusBadRequest, "get a bad name")

	// Update: the whole definition, at the version read (given or not).
	b := jobBody("")
	b["schedule"] = "*/10 * * * *"
	expect(t, viewer.do("PUT", "/api/v1/jobs/nightly", b), http.StatusForbidden, "viewer updates")
	expect(t, op.do("PUT", "/api/v1/jobs/other", jobBody("nightly")), http.StatusBadRequest, "rename")
	expect(t, op.do("PUT", "/api/v1/jobs/missing", b), http.StatusNotFound, "update missing")
	expect(t, op.do("PUT", "/api/v1/jobs/nightly?version=x", b), http.StatusBadRequest, "bad version")
	bb := jobBody("nightly")
	bb["concurrency"] = "sometimes"
	if r := op.do("PUT", "/api/v1/jobs/nightly", bb); r.status != http.StatusBadRequest || !strings.Contains(r.body, "concurrency") {
		t.Errorf("bad update: %d %s", r.status, r.body)
	}
	r = op.do("PUT", fmt.Sprintf("/api/v1/jobs/nightly?version=%d", v.Version), b)
	expect(t, r, http.StatusOK, "update at the version read")
	u := decodeView(t, r)
	if u.Job.Schedule != "*/10 * * * *" || !u.Job.Created.Equal(v.Job.Created) || u.Version != v.Version+1 {
		t.Fatalf("updated: %s", r.body)
	}
	b["schedule"] = "@hourly"
	r = op.do("PUT", fmt.Sprintf("/api/v1/jobs/nightly?version=%d", v.Version), b)
	expect(t, r, http.StatusConflict, "update at a stale version")
	if e, _ := r.json["error"].(string); !strings.Contains(e, "changed since it was read") {
		t.Errorf("stale update: %q", e)
	}
	expect(t, op.do("PUT", "/api/v1/jobs/nightly", b), http.StatusOK, "update at the version it reads")
	if got, _ := tc.GetJob(ctx, "nightly"); got.Job.Schedule != "@hourly" {
		t.Errorf("after the updates the schedule is %q", got.Job.Schedule)
	}

	// Enable, disable, run.
	expect(t, viewer.do("POST", "/api/v1/jobs/nightly/disable", nil), http.StatusForbidden, "viewer disables")
	expect(t, op.do("POST", "/api/v1/jobs/nightly/disable", nil), http.StatusOK, "disable")
	if got, _ := tc.GetJob(ctx, "nightly"); got.Job.Enabled {
		t.Error("still enabled after disable")
	}
	expect(t, op.do("POST", "/api/v1/jobs/nightly/enable", nil), http.StatusOK, "enable")
	if got, _ := tc.GetJob(ctx, "nightly"); !got.Job.Enabled || !got.Job.EnabledSince.After(v.Job.EnabledSince) {
		t.Errorf("after enable: %+v", got.Job)
	}
	expect(t, op.do("POST", "/api/v1/jobs/missing/enable", nil), http.StatusNotFound, "enable missing")
	expect(t, viewer.do("POST", "/api/v1/jobs/nightly/run", nil), http.StatusForbidden, "viewer runs")
	r = op.do("POST", "/api/v1/jobs/nightly/run", nil)
	expect(t, r, http.StatusCreated, "run")
	id, _ := r.json["id"].(string)
	if tk, err := tc.Get(ctx, id); err != nil || tk.Spec.Job != "nightly" || tk.Spec.Command != "/usr/bin/backup" {
		t.Fatalf("run-now task %s: %+v, %v", id, tk, err)
	}
	expect(t, op.do("POST", "/api/v1/jobs/missing/run", nil), http.StatusNotFound, "run missing")

	// Delete, with fire records the master wrote.
	for i := range 3 {
		at := time.Date(2026, 1, 1, 3, i, 0, 0, time.UTC)
		rec, _ := json.Marshal(task.Fire{Scheduled: at, Outcome: task.FireSkipped})
		if _, err := f.conn.Create(task.DefaultLayout.Fire("nightly", task.FireName(at)), rec, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if r := viewer.do("GET", "/api/v1/jobs/nightly", nil); decodeView(t, r).FireCount != 3 {
		t.Errorf("the job's fire records: %s", r.body)
	}
	expect(t, viewer.do("DELETE", "/api/v1/jobs/nightly", nil), http.StatusForbidden, "viewer deletes")
	expect(t, op.do("DELETE", "/api/v1/jobs/nightly", nil), http.StatusOK, "delete")
	if ok, _, _ := f.conn.Exists(task.DefaultLayout.Job("nightly")); ok {
		t.Error("the job is still there")
	}
	if _, err := tc.Get(ctx, id); err != nil {
		t.Errorf("the job's task after the delete: %v", err)
	}
	expect(t, op.do("DELETE", "/api/v1/jobs/nightly", nil), http.StatusNotFound, "delete again")

	recs, _ := auditRecords(t, op)
	if rec := findAudit(t, recs, "job.create", "nightly"); rec.User != "olga" || rec.Before.Exists || !strings.Contains(rec.After.Data, "/usr/bin/backup") {
		t.Errorf("create record %+v", rec)
	}
	if rec := findAudit(t, recs, "job.update", "nightly"); !strings.Contains(rec.After.Data, "@hourly") || strings.Contains(rec.Before.Data, "@hourly") {
		t.Errorf("update record before %+v after %+v", rec.Before, rec.After)
	}
	if rec := findAudit(t, recs, "job.disable", "nightly"); !strings.Contains(rec.After.Data, `"enabled":false`) {
		t.Errorf("disable record %+v", rec.After)
	}
	findAudit(t, recs, "job.enable", "nightly")
	if rec := findAudit(t, recs, "job.run", "nightly"); !strings.Contains(rec.Note, id) || !rec.After.Exists {
		t.Errorf("run record %+v", rec)
	}
	if rec := findAudit(t, recs, "job.delete", "nightly"); !rec.Before.Exists || rec.After.Exists {
		t.Errorf("delete record %+v", rec)
	}
}

// TestJobBodyLimit: a job body over the console's cap is refused with 413 and creates
// nothing.
func TestJobBodyLimit(t *testing.T) {
	f := startConsole(t)
	op := f.login(t, "olga")
	b := jobBody("big")
	b["task"] = map[string]any{"command": "x", "args": []string{strings.Repeat("a", defaultBodyLimit)}}
	r := op.do("POST", "/api/v1/jobs", b)
	expect(t, r, http.StatusRequestEntityTooLarge, "a job over the body cap")
	if !strings.Contains(r.body, fmt.Sprintf("at most %d bytes", defaultBodyLimit)) {
		t.Errorf("413 without the cap: %s", r.body)
	}
	if ok, _, _ := f.conn.Exists(task.DefaultLayout.Job("big")); ok {
		t.Error("a refused job was created")
	}
	b["task"] = map[string]any{"command": "x", "args": []string{strings.Repeat("a", defaultBodyLimit-1024)}}
	expect(t, op.do("POST", "/api/v1/jobs", b), http.StatusCreated, "a job just under the cap")
}

// TestJobSecretsMasked: a job's task secrets are masked in the jobs API and the audit
// log; an update that sends them back masked keeps the stored ones, and a mask the
// console cannot explain is refused.
func TestJobSecretsMasked(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	op, viewer := f.login(t, "olga"), f.login(t, "vic")
	b := jobBody("dump")
	b["task"] = map[string]any{"command": "/usr/bin/mysqldump",
		"args": []string{"--password", "T4rgetPw", "--dsn=repl:S3cretSrcPw@tcp(127.0.0.1:3306)/", "orders"},
		"env":  map[string]string{"MYSQL_PASSWORD": "S3cretSrcPw", "TZ": "UTC"}}
	r := op.do("POST", "/api/v1/jobs", b)
	expect(t, r, http.StatusCreated, "create")
	noSecret(t, "the create's answer", r.body)
	for _, p := range []string{"/api/v1/jobs", "/api/v1/jobs/dump"} {
		r := viewer.do("GET", p, nil)
		expect(t, r, http.StatusOK, p)
		noSecret(t, p, r.body)
	}
	got := decodeView(t, viewer.do("GET", "/api/v1/jobs/dump", nil))
	if got.Job.Task.Env["TZ"] != "UTC" || got.Job.Task.Env["MYSQL_PASSWORD"] != secretMask || got.Job.Task.Args[3] != "orders" {
		t.Errorf("masking took more, or less, than the secrets: %+v", got.Job.Task)
	}

	// The masked definition sent back, with a change, keeps the secrets and applies the change.
	got.Job.Schedule = "@daily"
	got.Job.Task.Args = append([]string{"--verbose"}, got.Job.Task.Args...)
	r = op.do("PUT", "/api/v1/jobs/dump", got.Job)
	expect(t, r, http.StatusOK, "update with the masked secrets")
	noSecret(t, "the update's answer", r.body)
	stored, err := task.NewClient(f.session, task.DefaultLayout).GetJob(ctx, "dump")
	if err != nil {
		t.Fatal(err)
	}
	s := stored.Job.Task
	if stored.Job.Schedule != "@daily" || s.Env["MYSQL_PASSWORD"] != "S3cretSrcPw" || s.Args[0] != "--verbose" || s.Args[2] != "T4rgetPw" ||
		s.Args[3] != "--dsn=repl:S3cretSrcPw@tcp(127.0.0.1:3306)/" {
		t.Fatalf("stored after the update: %+v", stored.Job)
	}
	// A mask under a new name, or a masked argument that is not one of the stored
	// ones, is refused: the console does not store the mask as a secret.
	bad := got.Job
	bad.Task.Env = map[string]string{"NEW_PASSWORD": secretMask}
	r = op.do("PUT", "/api/v1/jobs/dump", bad)
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "env NEW_PASSWORD") {
		t.Errorf("an unexplained masked env value: %d %s", r.status, r.body)
	}
	bad = got.Job
	bad.Task.Env = nil
	bad.Task.Args = []string{"--dsn=other:****@tcp(127.0.0.1:3306)/"}
	r = op.do("PUT", "/api/v1/jobs/dump", bad)
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "args[0]") {
		t.Errorf("an unexplained masked argument: %d %s", r.status, r.body)
	}
	c := jobBody("masked")
	c["task"] = map[string]any{"command": "x", "env": map[string]string{"API_TOKEN": secretMask}}
	if r := op.do("POST", "/api/v1/jobs", c); r.status != http.StatusBadRequest || !strings.Contains(r.body, "env API_TOKEN") {
		t.Errorf("a create with a masked secret: %d %s", r.status, r.body)
	}
	// Run-now and the audit log show no secret either.
	expect(t, op.do("POST", "/api/v1/jobs/dump/run", nil), http.StatusCreated, "run")
	_, body := auditRecords(t, viewer)
	noSecret(t, "the audit log", body)
	if !strings.Contains(body, "job.update") || !strings.Contains(body, "job.run") {
		t.Errorf("the audit log lacks the job's changes")
	}
}

// TestDAGJobSecretsMasked: a DAG job's tasks are masked as a job's task is — in the API,
// on the job page and in the audit log — and a definition sent back masked keeps them.
func TestDAGJobSecretsMasked(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	op, viewer := f.login(t, "olga"), f.login(t, "vic")
	b := jobBody("etl")
	delete(b, "task")
	b["dag"] = []map[string]any{
		{"name": "extract", "spec": map[string]any{"command": "dump", "env": map[string]string{"DB_PASSWORD": "S3cretSrcPw"}}},
		{"name": "load", "spec": map[string]any{"command": "load"}, "after": []string{"extract"}},
	}
	r := op.do("POST", "/api/v1/jobs", b)
	expect(t, r, http.StatusCreated, "create a DAG job")
	for _, p := range []string{"/api/v1/jobs", "/api/v1/jobs/etl", "/jobs/etl"} {
		r := viewer.do("GET", p, nil)
		expect(t, r, http.StatusOK, p)
		noSecret(t, p, r.body)
	}
	if page := viewer.do("GET", "/jobs/etl", nil).body; !strings.Contains(page, "a DAG of 2 tasks") || !strings.Contains(page, "<code>extract</code>") {
		t.Errorf("the job page does not show the DAG:\n%s", page)
	}
	got := decodeView(t, viewer.do("GET", "/api/v1/jobs/etl", nil))
	if got.Job.DAG[0].Spec.Env["DB_PASSWORD"] != secretMask {
		t.Fatalf("DAG task env as shown: %+v", got.Job.DAG[0].Spec.Env)
	}
	got.Job.Schedule = "@daily"
	expect(t, op.do("PUT", "/api/v1/jobs/etl", got.Job), http.StatusOK, "update with the masked secrets")
	stored, err := task.NewClient(f.session, task.DefaultLayout).GetJob(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	if stored.Job.Schedule != "@daily" || stored.Job.DAG[0].Spec.Env["DB_PASSWORD"] != "S3cretSrcPw" {
		t.Fatalf("stored after the update: %+v", stored.Job)
	}
	_, body := auditRecords(t, viewer)
	noSecret(t, "the audit log", body)
}
