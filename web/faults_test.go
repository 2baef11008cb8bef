package web

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

// TestJobFaultShownAndCleared: a job the master has in error shows so in the jobs list
// (an error badge with its reason), on its page (the step, the reason, the tries and
// the next try) and in the API; an operator clears it from the page or the API, audited,
// and a viewer cannot.
func TestJobFaultShownAndCleared(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	tc := task.NewClient(f.session, task.DefaultLayout)
	l := task.DefaultLayout
	if err := tc.CreateJob(ctx, task.Job{Name: "stuck", Task: task.Spec{Command: "true"}, Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	if err := f.session.MakeDirs(ctx, l.JobFaults()); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	fault := task.Fault{Kind: task.FaultJob, Name: "stuck", Step: "fire", Error: "/jobs/stuck/fires/x: zk: not authenticated",
		Since: since, Last: since.Add(time.Minute), Tries: 7, Next: since.Add(2 * time.Minute), Master: "m1"}
	putNode(t, f, l.JobFault("stuck"), fault)

	viewer := f.login(t, "vic")
	list := viewer.do("GET", "/jobs", nil)
	expect(t, list, http.StatusOK, "the jobs page")
	if !strings.Contains(html.UnescapeString(list.body), `<span class="state state-failed job-error" title="fire: /jobs/stuck/fires/x: zk: not authenticated">error</span>`) {
		t.Errorf("the jobs page shows no error badge for stuck:\n%s", list.body)
	}
	page := viewer.do("GET", "/jobs/stuck", nil)
	expect(t, page, http.StatusOK, "the job page")
	body := html.UnescapeString(page.body)
	for _, want := range []string{"In error: not fired", "The master could not fire this job: ",
		`<span class="fault-reason">/jobs/stuck/fires/x: zk: not authenticated</span>`,
		"<tr><th>tries</th><td>7, the last 2026-05-01 10:01:00Z</td></tr>", "2026-05-01 10:02:00Z, or at once when the job is changed",
		"<tr><th>master</th><td>m1</td></tr>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the job page lacks %q", want)
		}
	}
	if strings.Contains(page.body, "clear-error") {
		t.Error("the viewer's job page has the clear form")
	}
	var v task.JobView
	if r := viewer.do("GET", "/api/v1/jobs/stuck", nil); r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &v) != nil ||
		v.Fault == nil || v.Fault.Tries != 7 {
		t.Errorf("the API's view: %d, %+v", r.status, v.Fault)
	}
	expect(t, viewer.form("/jobs/stuck/clear-error", url.Values{csrfField: {viewer.csrf}}), http.StatusForbidden, "viewer clears")
	expect(t, viewer.do("POST", "/api/v1/jobs/stuck/clear-error", nil), http.StatusForbidden, "viewer clears by the API")

	op := f.login(t, "olga")
	if page := op.do("GET", "/jobs/stuck", nil); !strings.Contains(page.body, `action="/jobs/stuck/clear-error"`) {
		t.Error("the operator's job page has no clear form")
	}
	r := op.form("/jobs/stuck/clear-error", url.Values{csrfField: {op.csrf}})
	if path, q := location(t, r); r.status != http.StatusSeeOther || path != "/jobs/stuck" ||
		q.Get("flash") != "cleared the error of stuck: the master tries it again now" {
		t.Errorf("clear form: %d to %s %v", r.status, path, q)
	}
	if ok, _, _ := f.conn.Exists(l.JobFault("stuck")); ok {
		t.Fatal("the record is still there after the clear")
	}
	recs, _ := auditRecords(t, op)
	if !slices.ContainsFunc(recs, func(a AuditRecord) bool {
		return a.Action == "job.clear_error" && a.Target == "stuck" && a.Before.Exists && !a.After.Exists
	}) {
		t.Errorf("no audit record of the clear: %+v", recs)
	}
	// Cleared again (nothing on record) is no error; a bad name is.
	expect(t, op.do("POST", "/api/v1/jobs/stuck/clear-error", nil), http.StatusOK, "clear by the API")
	expect(t, op.do("POST", "/api/v1/jobs/-bad/clear-error", nil), http.StatusBadRequest, "clear a bad name")
	if page := op.do("GET", "/jobs/stuck", nil); strings.Contains(page.body, "In error") {
		t.Error("the job page still shows the error once cleared")
	}
}

// TestJobUnreadableListed: a job whose node the console cannot read (its writer's ACL
// leaves it out) is listed by name, marked unreadable, and does not break the list.
func TestJobUnreadableListed(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	tc := task.NewClient(f.session, task.DefaultLayout)
	l := task.DefaultLayout
	if err := tc.CreateJob(ctx, task.Job{Name: "fine", Task: task.Spec{Command: "true"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.conn.Create(l.Job("hidden"), []byte(`{}`), 0,
		[]zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "someone:NSmgsYq/Vr5BMSRhJbq3Q6ULo3A="}}); err != nil {
		t.Fatal(err)
	}
	list := f.login(t, "vic").do("GET", "/jobs", nil)
	expect(t, list, http.StatusOK, "the jobs page")
	for _, want := range []string{`<a href="/jobs/fine">fine</a>`, `<a href="/jobs/hidden">hidden</a>`, ">unreadable</span>"} {
		if !strings.Contains(list.body, want) {
			t.Errorf("the jobs page lacks %q", want)
		}
	}
}

// TestWorkersShowRefusals: the workers page and API show the tasks a worker refused,
// with why, and count only assignments as assigned.
func TestWorkersShowRefusals(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	l := task.DefaultLayout
	for _, dir := range []string{l.AssignDir("w1"), l.Workers()} {
		if err := f.session.MakeDirs(ctx, dir); err != nil {
			t.Fatal(err)
		}
	}
	putNode(t, f, l.Worker("w1"), task.WorkerInfo{Capacity: 2, Started: time.Now()})
	putNode(t, f, l.Assignment("w1", "task-0000000001"), task.Assignment{Attempt: 1})
	putNode(t, f, l.Refusal("w1", "task-0000000002"), task.Refusal{Task: "task-0000000002", Worker: "w1", Attempt: 1,
		Ran: true, Error: "record the outcome: zk: not authenticated", At: time.Now()})
	viewer := f.login(t, "vic")
	var cv ClusterView
	if r := viewer.do("GET", "/api/v1/workers", nil); r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &cv) != nil || len(cv.Workers) != 1 {
		t.Fatalf("workers API: %d %s", r.status, r.body)
	}
	if w := cv.Workers[0]; w.Assigned != 1 || len(w.Refused) != 1 || w.Refused[0].Task != "task-0000000002" || !w.Refused[0].Ran {
		t.Errorf("w1: assigned %d, refused %+v; want 1 and task-0000000002, ran", w.Assigned, w.Refused)
	}
	page := viewer.do("GET", "/workers", nil)
	expect(t, page, http.StatusOK, "the workers page")
	for _, want := range []string{`<td class="refused">1</td>`, "<h2>Refused tasks</h2>",
		`<a href="/tasks/task-0000000002">task-0000000002</a></td><td>yes, its outcome is lost</td><td>record the outcome: zk: not authenticated</td>`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the workers page lacks %q", want)
		}
	}
}
