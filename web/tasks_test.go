package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// auditRecords returns the newest audit records (up to 100), read through the API.
func auditRecords(t *testing.T, cl *client) ([]AuditRecord, string) {
	t.Helper()
	r := cl.do("GET", "/api/v1/audit?limit=100", nil)
	expect(t, r, http.StatusOK, "audit")
	var got struct{ Records []AuditRecord }
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatalf("audit answer %s: %v", r.body, err)
	}
	return got.Records, r.body
}

// findAudit returns the newest record of action on target, failing the test if none.
func findAudit(t *testing.T, recs []AuditRecord, action, target string) AuditRecord {
	t.Helper()
	for _, rec := range recs {
		if rec.Action == action && rec.Target == target {
			return rec
		}
	}
	t.Fatalf("no audit record %s %s among %d", action, target, len(recs))
	return AuditRecord{}
}

func taskCount(t *testing.T, f *fixture) int {
	t.Helper()
	ids, _, err := f.conn.Children(task.DefaultLayout.Tasks())
	if err == zk.ErrNoNode {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

// endTask writes the status a worker would, so the task counts as ended.
func endTask(t *testing.T, f *fixture, id string, st task.Status) {
	t.Helper()
	b, _ := json.Marshal(st)
	if _, err := f.conn.Create(task.DefaultLayout.Status(id), b, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

func TestTasksAPI(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	tc := task.NewClient(f.session, task.DefaultLayout)
	var ids []string
	for _, cmd := range []string{"/bin/true", "/bin/false", "/bin/echo"} {
		id, err := tc.Submit(ctx, task.Spec{Command: cmd, Args: []string{"a"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}

	viewer := f.login(t, "vic")
	r := viewer.do("GET", "/api/v1/tasks?limit=2", nil)
	expect(t, r, http.StatusOK, "list")
	var page TaskPage
	if err := json.Unmarshal([]byte(r.body), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Tasks) != 2 || page.Tasks[0].ID != ids[2] || page.Tasks[1].ID != ids[1] || page.Total != 3 ||
		page.Next == nil || *page.Next != 2 {
		t.Fatalf("first page: %s", r.body)
	}
	if page.Tasks[0].State != task.Pending || page.Tasks[0].Spec.Command != "/bin/echo" {
		t.Errorf("newest task: %+v", page.Tasks[0])
	}
	r = viewer.do("GET", "/api/v1/tasks?offset=2&limit=2", nil)
	if !strings.Contains(r.body, ids[0]) || strings.Contains(r.body, `"next"`) {
		t.Errorf("last page: %s", r.body)
	}
	expect(t, viewer.do("GET", "/api/v1/tasks/"+ids[0], nil), http.StatusOK, "get")
	expect(t, viewer.do("GET", "/api/v1/tasks/task-0000009999", nil), http.StatusNotFound, "get missing")
	expect(t, viewer.do("GET", "/api/v1/tasks/nonsense", nil), http.StatusBadRequest, "get bad id")
	expect(t, viewer.do("GET", "/api/v1/tasks?limit=0", nil), http.StatusBadRequest, "bad limit")

	// Changes: the viewer may not, nor anyone without the CSRF token.
	spec := map[string]any{"command": "/bin/sleep", "args": []string{"1"}, "timeout": "1m", "retries": 2}
	expect(t, viewer.do("POST", "/api/v1/tasks", spec), http.StatusForbidden, "viewer submits")
	expect(t, viewer.do("POST", "/api/v1/tasks/"+ids[0]+"/cancel", nil), http.StatusForbidden, "viewer cancels")
	expect(t, viewer.do("POST", "/api/v1/tasks/"+ids[0]+"/retry", nil), http.StatusForbidden, "viewer retries")
	op := f.login(t, "olga")
	token := op.csrf
	op.csrf = ""
	expect(t, op.do("POST", "/api/v1/tasks", spec), http.StatusForbidden, "submit without CSRF")
	expect(t, op.do("POST", "/api/v1/tasks/"+ids[0]+"/cancel", nil), http.StatusForbidden, "cancel without CSRF")
	op.csrf = token
	if n := taskCount(t, f); n != 3 {
		t.Fatalf("%d tasks after refused submits, want 3", n)
	}

	// A bad spec is 400 naming the field, and creates nothing.
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"command": " "}, "command"},
		{map[string]any{"command": "x", "retries": -1}, "retries"},
		{map[string]any{"command": "x", "priority": 2_000_000}, "priority"},
		{map[string]any{"command": "x", "timeout": "soon"}, "timeout"},
		{map[string]any{"command": "x", "retires": 1}, "retires"},
		{map[string]any{"command": "x", "selector": map[string]string{"-gpu": "true"}}, "selector"},
	} {
		r := op.do("POST", "/api/v1/tasks", bad.body)
		expect(t, r, http.StatusBadRequest, "bad spec "+bad.field)
		if e, _ := r.json["error"].(string); !strings.Contains(e, bad.field) {
			t.Errorf("bad %s: error %q does not name the field", bad.field, e)
		}
	}
	if n := taskCount(t, f); n != 3 {
		t.Fatalf("%d tasks after bad specs, want 3", n)
	}

	r = op.do("POST", "/api/v1/tasks", spec)
	expect(t, r, http.StatusCreated, "submit")
	newID, _ := r.json["id"].(string)
	got, err := tc.Get(ctx, newID)
	if err != nil || got.Spec.Command != "/bin/sleep" || got.Spec.Retries != 2 || time.Duration(got.Spec.Timeout) != time.Minute {
		t.Fatalf("submitted task %s: %+v, %v", newID, got, err)
	}

	expect(t, op.do("POST", "/api/v1/tasks/"+newID+"/retry", nil), http.StatusConflict, "retry of a pending task")
	expect(t, op.do("POST", "/api/v1/tasks/"+newID+"/cancel", nil), http.StatusOK, "cancel")
	if got, _ := tc.Get(ctx, newID); !got.CancelRequested {
		t.Errorf("after cancel: %+v, want cancel requested", got)
	}
	expect(t, op.do("POST", "/api/v1/tasks/task-0000009999/cancel", nil), http.StatusNotFound, "cancel missing")

	endTask(t, f, ids[1], task.Status{State: task.Failed, ExitCode: 1, Worker: "w1", Attempts: 1, Finished: time.Now()})
	expect(t, op.do("POST", "/api/v1/tasks/"+ids[1]+"/cancel", nil), http.StatusConflict, "cancel of an ended task")
	r = op.do("POST", "/api/v1/tasks/"+ids[1]+"/retry", nil)
	expect(t, r, http.StatusCreated, "retry")
	retryID, _ := r.json["id"].(string)
	if got, err := tc.Get(ctx, retryID); err != nil || retryID == ids[1] || got.Spec.Command != "/bin/false" || got.State != task.Pending {
		t.Fatalf("retry %s: %+v, %v", retryID, got, err)
	}

	recs, _ := auditRecords(t, op)
	if rec := findAudit(t, recs, "task.submit", newID); rec.User != "olga" || rec.Before.Exists || !rec.After.Exists ||
		!strings.Contains(rec.After.Data, "/bin/sleep") {
		t.Errorf("submit record %+v", rec)
	}
	if rec := findAudit(t, recs, "task.cancel", newID); !strings.Contains(rec.After.Data, `"cancel_requested":true`) ||
		strings.Contains(rec.Before.Data, "cancel_requested") {
		t.Errorf("cancel record before %+v after %+v", rec.Before, rec.After)
	}
	if rec := findAudit(t, recs, "task.submit", retryID); !strings.Contains(rec.Note, ids[1]) {
		t.Errorf("retry record %+v: want a note naming %s", rec, ids[1])
	}
}

func TestTaskPages(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	tc := task.NewClient(f.session, task.DefaultLayout)
	const evil = `<script>alert(1)</script>`
	id, err := tc.Submit(ctx, task.Spec{Command: "/bin/sh" + evil, Args: []string{"-c", evil}})
	if err != nil {
		t.Fatal(err)
	}
	endTask(t, f, id, task.Status{State: task.Failed, ExitCode: 7, OutputTail: "out " + evil, Worker: "w1", Finished: time.Now()})

	viewer := f.login(t, "vic")
	list := viewer.do("GET", "/tasks", nil)
	expect(t, list, http.StatusOK, "list page")
	if !strings.Contains(list.body, id) || !strings.Contains(list.body, ">failed<") || strings.Contains(list.body, `action="/tasks"`) {
		t.Error("the list page does not show the task failed, or shows the viewer the submit form")
	}
	detail := viewer.do("GET", "/tasks/"+id, nil)
	expect(t, detail, http.StatusOK, "task page")
	for _, page := range []response{list, detail} {
		if strings.Contains(page.body, evil) {
			t.Error("a page has the task's HTML unescaped")
		}
	}
	if !strings.Contains(detail.body, "out &lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the task page does not show the output tail escaped")
	}
	expect(t, viewer.do("GET", "/tasks/task-0000009999", nil), http.StatusNotFound, "missing task page")

	// The submit form, and the retry button, of an operator.
	op := f.login(t, "olga")
	if page := op.do("GET", "/tasks", nil); !strings.Contains(page.body, `action="/tasks"`) {
		t.Error("the operator's page has no submit form")
	}
	r := op.form("/tasks", url.Values{"command": {"/bin/env"}, "args": {"-i\r\nx"}, "env": {"A=1\nB=x=y"},
		"timeout": {"90s"}, "retries": {"1"}, "priority": {"5"}})
	expect(t, r, http.StatusForbidden, "form without CSRF")
	r = op.form("/tasks", url.Values{csrfField: {op.csrf}, "command": {"/bin/env"}, "args": {"-i\r\nx"},
		"env": {"A=1\nB=x=y"}, "timeout": {"90s"}, "retries": {"1"}, "priority": {"5"}})
	expect(t, r, http.StatusSeeOther, "submit form")
	loc := r.header.Get("Location")
	newID := strings.TrimPrefix(strings.SplitN(loc, "?", 2)[0], "/tasks/")
	got, err := tc.Get(ctx, newID)
	if err != nil || strings.Join(got.Spec.Args, ",") != "-i,x" || got.Spec.Env["B"] != "x=y" ||
		time.Duration(got.Spec.Timeout) != 90*time.Second || got.Spec.Priority != 5 {
		t.Fatalf("task from the form (%s): %+v, %v", loc, got, err)
	}
	r = op.form("/tasks", url.Values{csrfField: {op.csrf}, "command": {""}})
	if expect(t, r, http.StatusSeeOther, "bad form"); !strings.Contains(r.header.Get("Location"), "error=") {
		t.Errorf("bad form goes to %s, want an error", r.header.Get("Location"))
	}
	r = op.form("/tasks/"+id+"/retry", url.Values{csrfField: {op.csrf}})
	if expect(t, r, http.StatusSeeOther, "retry form"); !strings.Contains(r.header.Get("Location"), "flash=") {
		t.Errorf("retry form goes to %s", r.header.Get("Location"))
	}
}

// TestTaskSelector: the submit form and the API take a selector; the list, the task
// page and the API say why a task no live worker matches waits, naming the live
// workers' labels.
func TestTaskSelector(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	tc := task.NewClient(f.session, task.DefaultLayout)
	op := f.login(t, "olga")
	r := op.form("/tasks", url.Values{csrfField: {op.csrf}, "command": {"/bin/true"}, "selector": {"gpu"}})
	if expect(t, r, http.StatusSeeOther, "bad selector form"); !strings.Contains(r.header.Get("Location"), "error=selector") {
		t.Errorf("a bad selector goes to %s, want an error naming the selector", r.header.Get("Location"))
	}
	r = op.form("/tasks", url.Values{csrfField: {op.csrf}, "command": {"/bin/true"}, "selector": {"gpu=true, os=linux"}})
	expect(t, r, http.StatusSeeOther, "submit form")
	formID := strings.TrimPrefix(strings.SplitN(r.header.Get("Location"), "?", 2)[0], "/tasks/")
	if got, err := tc.Get(ctx, formID); err != nil || got.Spec.Selector.String() != "gpu=true,os=linux" {
		t.Fatalf("task from the form: %+v, %v; want selector gpu=true,os=linux", got, err)
	}
	r = op.do("POST", "/api/v1/tasks", map[string]any{"command": "/bin/true", "selector": map[string]string{"gpu": "true"}})
	expect(t, r, http.StatusCreated, "submit")
	apiID, _ := r.json["id"].(string)

	l := task.DefaultLayout
	for _, dir := range []string{l.Root(), l.Workers()} {
		if _, err := f.conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	info, _ := json.Marshal(task.WorkerInfo{Capacity: 1, State: task.WorkerActive, Labels: map[string]string{"os": "linux"}})
	if _, err := f.conn.Create(l.Worker("w1"), info, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	r = op.do("GET", "/api/v1/tasks", nil)
	var page TaskPage
	if err := json.Unmarshal([]byte(r.body), &page); err != nil || len(page.Tasks) != 2 {
		t.Fatalf("list %s: %v", r.body, err)
	}
	want := map[string]string{
		formID: "no live worker has labels gpu=true,os=linux (live: w1 os=linux)",
		apiID:  "no live worker has labels gpu=true (live: w1 os=linux)",
	}
	for _, tk := range page.Tasks {
		if tk.State != task.Pending || tk.Waiting != want[tk.ID] {
			t.Errorf("%s: %s, waiting %q; want pending, waiting %q", tk.ID, tk.State, tk.Waiting, want[tk.ID])
		}
	}
	if list := op.do("GET", "/tasks", nil); !strings.Contains(list.body, want[apiID]) {
		t.Errorf("the list page does not say why %s waits", apiID)
	}
	detail := op.do("GET", "/tasks/"+formID, nil)
	if !strings.Contains(detail.body, "Waiting: "+want[formID]) || !strings.Contains(detail.body, "<code>gpu=true,os=linux</code>") {
		t.Errorf("the task page does not show the selector and why it waits:\n%s", detail.body)
	}
}

func TestWorkers(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	l := task.DefaultLayout
	viewer := f.login(t, "vic")
	r := viewer.do("GET", "/api/v1/workers", nil)
	expect(t, r, http.StatusOK, "workers, none")
	if r.json["master"] != nil || len(r.json["workers"].([]any)) != 0 {
		t.Errorf("empty cluster: %s", r.body)
	}
	if page := viewer.do("GET", "/workers", nil); !strings.Contains(page.body, "No master is elected") {
		t.Error("the workers page does not say there is no master")
	}

	acl := zk.WorldACL(zk.PermAll)
	put := func(p string, v any, flags int32) {
		t.Helper()
		if err := f.session.MakeDirs(ctx, parentOf(p)); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		if _, err := f.conn.Create(p, b, flags, acl); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	put(l.Master(), task.MasterInfo{ID: "m1", Addr: "10.0.0.1:9000", Since: now, Epoch: 4}, zk.FlagEphemeral)
	put(l.Worker("w1"), task.WorkerInfo{Addr: "10.0.0.2:1", Capacity: 4, Labels: map[string]string{"zone": "<a>"}, Started: now}, zk.FlagEphemeral)
	put(l.Worker("w2"), task.WorkerInfo{Capacity: 1, Started: now}, zk.FlagEphemeral)
	put(l.Assignment("w1", "task-0000000001"), task.Assignment{Attempt: 1, Assigned: now, Started: now}, 0)
	put(l.Assignment("w1", "task-0000000002"), task.Assignment{Attempt: 1, Assigned: now}, 0)

	r = viewer.do("GET", "/api/v1/workers", nil)
	var v ClusterView
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatal(err)
	}
	if v.Master == nil || v.Master.ID != "m1" || v.Master.Epoch != 4 || len(v.Workers) != 2 {
		t.Fatalf("cluster: %s", r.body)
	}
	if w := v.Workers[0]; w.ID != "w1" || w.Info.Capacity != 4 || w.Assigned != 2 || w.Running != 1 {
		t.Errorf("w1: %+v", w)
	}
	if w := v.Workers[1]; w.ID != "w2" || w.Assigned != 0 || w.Running != 0 {
		t.Errorf("w2: %+v", w)
	}
	page := viewer.do("GET", "/workers", nil)
	if !strings.Contains(page.body, "10.0.0.1:9000") || !strings.Contains(page.body, "zone=&lt;a&gt;") {
		t.Error("the workers page does not show the master and w1's labels escaped")
	}
}

// TestDrainAPI: operators drain and undrain a worker, audited; viewers may not; the
// workers view shows the drain and the state the worker says.
func TestDrainAPI(t *testing.T) {
	f := startConsole(t)
	l := task.DefaultLayout
	for _, dir := range []string{l.Root(), l.Workers()} {
		if _, err := f.conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	info, _ := json.Marshal(task.WorkerInfo{Capacity: 2, State: task.WorkerActive, Host: "h1", PID: 42})
	if _, err := f.conn.Create(l.Worker("w1"), info, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	viewer := f.login(t, "vic")
	expect(t, viewer.do("POST", "/api/v1/workers/w1/drain", nil), http.StatusForbidden, "viewer drains")
	op := f.login(t, "olga")
	expect(t, op.do("POST", "/api/v1/workers/w1/drain?deadline=soon", nil), http.StatusBadRequest, "bad deadline")
	expect(t, op.do("POST", "/api/v1/workers/bad%20id/drain", nil), http.StatusBadRequest, "bad id")
	expect(t, op.do("POST", "/api/v1/workers/w1/drain?deadline=10m", nil), http.StatusOK, "drain")
	r := viewer.do("GET", "/api/v1/workers", nil)
	var v ClusterView
	if err := json.Unmarshal([]byte(r.body), &v); err != nil || len(v.Workers) != 1 {
		t.Fatalf("workers %s: %v", r.body, err)
	}
	if w := v.Workers[0]; w.Drain == nil || w.Drain.Deadline.IsZero() || w.Drain.By != "console:olga" || w.State != task.WorkerActive {
		t.Errorf("drained worker seen as %+v", w)
	}
	expect(t, op.do("POST", "/api/v1/workers/gone/drain", nil), http.StatusOK, "drain of a worker not running")
	r = op.do("GET", "/workers", nil)
	if !strings.Contains(r.body, "Drained, not running") || !strings.Contains(r.body, `action="/workers/gone/undrain"`) {
		t.Errorf("the workers page does not list gone as drained, not running:\n%s", r.body)
	}
	expect(t, op.do("POST", "/api/v1/workers/gone/undrain", nil), http.StatusOK, "undrain of a worker not running")
	expect(t, op.do("POST", "/api/v1/workers/w1/undrain", nil), http.StatusOK, "undrain")
	expect(t, op.do("POST", "/api/v1/workers/w1/undrain", nil), http.StatusBadRequest, "undrain of an undrained worker")
	if ok, _, _ := f.conn.Exists(l.Drain("w1")); ok {
		t.Error("drain request left after undrain")
	}
	recs, _ := auditRecords(t, op)
	if rec := findAudit(t, recs, "worker.drain", "w1"); rec.User != "olga" || rec.Before.Exists || !strings.Contains(rec.After.Data, `"deadline"`) {
		t.Errorf("drain audit record %+v", rec)
	}
	if rec := findAudit(t, recs, "worker.undrain", "w1"); !rec.Before.Exists || rec.After.Exists {
		t.Errorf("undrain audit record %+v", rec)
	}
}

// TestKilledRunShown: a run killed by a signal shows as killed with the signal on the
// task's page and in the list, not as exit code 0; a lost run shows no exit code.
func TestKilledRunShown(t *testing.T) {
	f := startConsole(t)
	tc := task.NewClient(f.session, task.DefaultLayout)
	id, err := tc.Submit(testCtx(t), task.Spec{Command: "/bin/sleep", Args: []string{"9"}})
	if err != nil {
		t.Fatal(err)
	}
	lost, _ := json.Marshal(task.Attempt{N: 1, Worker: "w1", ExitCode: -1, Lost: true, Error: "worker lost"})
	if _, err := f.conn.Create(task.DefaultLayout.Lost(id, 1), lost, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	endTask(t, f, id, task.Status{State: task.Failed, ExitCode: -1, Signal: "SIGKILL", Error: "timed out after 1s", Attempts: 2})
	viewer := f.login(t, "vic")
	for _, page := range []string{"/tasks/" + id, "/tasks"} {
		r := viewer.do("GET", page, nil)
		expect(t, r, http.StatusOK, page)
		if !strings.Contains(r.body, "killed (SIGKILL)") {
			t.Errorf("%s does not say killed (SIGKILL)", page)
		}
	}
	r := viewer.do("GET", "/tasks/"+id, nil)
	if !strings.Contains(r.body, "(lost)") || !strings.Contains(r.body, "<td>&mdash;</td><td>worker lost</td>") {
		t.Errorf("the lost run's row shows an exit code:\n%s", r.body)
	}
}

// TestWorkersStale: a worker whose registration has not been written for longer than
// its heartbeat bound, by the servers' clock, is stale in the API and on the page; one
// that beats is not.
func TestWorkersStale(t *testing.T) {
	f := startConsole(t)
	l := task.DefaultLayout
	for _, dir := range []string{l.Root(), l.Workers()} {
		if _, err := f.conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	info, _ := json.Marshal(task.WorkerInfo{Capacity: 1, State: task.WorkerActive, Heartbeat: task.Duration(time.Second)})
	for _, id := range []string{"stuck", "live"} {
		if _, err := f.conn.Create(l.Worker(id), info, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(task.WorkerInfo{Heartbeat: task.Duration(time.Second)}.StaleAfter() + time.Second)
	for time.Now().Before(deadline) {
		if _, err := f.conn.Set(l.Worker("live"), info, -1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	viewer := f.login(t, "vic")
	r := viewer.do("GET", "/api/v1/workers", nil)
	var v ClusterView
	if err := json.Unmarshal([]byte(r.body), &v); err != nil || len(v.Workers) != 2 {
		t.Fatalf("workers %s: %v", r.body, err)
	}
	for _, w := range v.Workers {
		if w.Stale != (w.ID == "stuck") || w.Beat.IsZero() {
			t.Errorf("worker %s: stale %v, beat %v", w.ID, w.Stale, w.Beat)
		}
	}
	if r := viewer.do("GET", "/workers", nil); !strings.Contains(r.body, "state-stale") {
		t.Errorf("the workers page does not mark stuck stale:\n%s", r.body)
	}
}

// TestRetryOnlySigned: the console signs what it submits with its own key, so it
// retries only a task whose spec a trusted key signed: retrying a task written
// without a signature (or changed since it was signed) is refused, 400 naming why, and
// creates nothing; a task the console submits carries the console's signature.
func TestRetryOnlySigned(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	l := task.DefaultLayout
	if err := f.session.MakeDirs(ctx, l.Tasks()); err != nil {
		t.Fatal(err)
	}
	forged, err := f.conn.Create(l.Task("task-"), []byte(`{"command":"sh","args":["-c","touch /tmp/pwned"]}`), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	id := path.Base(forged)
	endTask(t, f, id, task.Status{State: task.Failed, ExitCode: -1, Finished: time.Now()})
	op := f.login(t, "olga")
	r := op.do("POST", "/api/v1/tasks/"+id+"/retry", nil)
	expect(t, r, http.StatusBadRequest, "retry of a forged task")
	if e, _ := r.json["error"].(string); !strings.Contains(e, "not signed by a trusted submitter") {
		t.Errorf("refusal %q does not say why", e)
	}
	if n := taskCount(t, f); n != 1 {
		t.Errorf("%d tasks after the refused retry, want 1", n)
	}
	r = op.do("POST", "/api/v1/tasks", map[string]any{"command": "/bin/true"})
	expect(t, r, http.StatusCreated, "submit")
	newID, _ := r.json["id"].(string)
	data, st, err := f.conn.Get(l.Task(newID))
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := task.ReadSig(f.conn, l.TaskSig(newID))
	if signed, err := task.VerifySpec(f.keys.Trust(), st.Czxid, data, sig); err != nil || signed.Role != "console" {
		t.Errorf("the console's task: %+v, %v; want the console's signature", signed, err)
	}
}
