package web

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

// Secrets of the jobs the page tests make, none of which a page may show.
const (
	envSecret   = "hunter2-env"
	argSecret   = "s3cret-arg"
	dsnSecret   = "dsn-pw-77"
	shardSecret = "shard-pw-42"
)

// putNode creates p holding v as JSON, failing the test if it cannot.
func putNode(t *testing.T, f *fixture, p string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if _, err := f.conn.Create(p, b, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
}

// location returns the path and query of a redirect.
func location(t *testing.T, r response) (string, url.Values) {
	t.Helper()
	loc := r.header.Get("Location")
	path, rawQuery, _ := strings.Cut(loc, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		t.Fatalf("redirect to %q: %v", loc, err)
	}
	return path, q
}

// noSecrets fails the test if body holds one of the test jobs' secrets.
func noSecrets(t *testing.T, what, body string) {
	t.Helper()
	for _, s := range []string{envSecret, argSecret, dsnSecret, shardSecret} {
		if strings.Contains(body, s) {
			t.Errorf("%s shows the secret %q", what, s)
		}
	}
}

// TestJobPages: viewers see the jobs with their next fire times, last fire and active
// runs, a job's definition masked, its run history with its tasks' states, and a
// sharded job's placement, and no write controls; operators see and use them.
func TestJobPages(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	tc := task.NewClient(f.session, task.DefaultLayout)
	l := task.DefaultLayout

	nightly := task.Job{Name: "nightly", Schedule: "0 3 * * *", TimeZone: "Europe/Paris", Enabled: true,
		Concurrency: task.ConcurrencyQueue, Task: task.Spec{Command: "/usr/bin/backup",
			Args: []string{"--password", argSecret, "mysql://u:" + dsnSecret + "@db/x"},
			Env:  map[string]string{"DB_PASSWORD": envSecret, "MODE": "full"}}}
	split := task.Job{Name: "split", Task: task.Spec{Command: "/bin/echo"}, Shards: 3,
		ShardParams: []string{"east", "u:" + shardSecret + "@tcp(h:1)/db"}}
	for _, j := range []task.Job{nightly, split} {
		if err := tc.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	// Two fires of nightly: one started a task that ended done, one skipped; and a fire
	// of split that started its three items.
	ran, err := tc.Submit(ctx, task.Spec{Command: "/usr/bin/backup", Job: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	endTask(t, f, ran, task.Status{State: task.Done, Worker: "w1", Attempts: 1, Finished: time.Now()})
	first := time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC) // 03:00 in Paris
	putNode(t, f, l.Fire("nightly", task.FireName(first)), task.Fire{Scheduled: first, Outcome: task.FireStarted, Task: ran})
	second := first.Add(24 * time.Hour)
	putNode(t, f, l.Fire("nightly", task.FireName(second)), task.Fire{Scheduled: second, Outcome: task.FireSkipped,
		Reason: task.ReasonRunning})
	var items []string
	for i := range 3 {
		id, err := tc.Submit(ctx, task.Spec{Command: "/bin/echo", Job: "split", Shard: &task.Shard{Item: i, Total: 3,
			Param: split.ShardParams[min(i, 1)]}})
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, id)
	}
	putNode(t, f, l.Fire("split", task.FireName(first)), task.Fire{Scheduled: first, Outcome: task.FireStarted, Tasks: items})
	putNode(t, f, l.Shards("split"), task.ShardPlan{"w2": {"1"}, "w1": {"0"}})

	viewer := f.login(t, "vic")
	list := viewer.do("GET", "/jobs", nil)
	expect(t, list, http.StatusOK, "the jobs page")
	noSecrets(t, "the jobs page", list.body)
	for _, want := range []string{
		`<a href="/jobs/nightly">nightly</a>`, "<code>0 3 * * *</code> <small>Europe/Paris</small>",
		"misfire run_once, concurrency queue", "misfire run_once, concurrency skip, 3 shards",
		"2025-03-02 03:00:00+01:00 <span class=\"state state-skipped\">skipped</span>", // nightly's last fire, in Paris
		`<td class="active">3</td>`, // split's items have not ended
		"run now only", `<span class="state state-disabled">disabled</span>`,
	} {
		if !strings.Contains(html.UnescapeString(list.body), want) {
			t.Errorf("the jobs page lacks %q", want)
		}
	}
	if !regexp.MustCompile(`<td class="next">\d{4}-\d\d-\d\d 03:00:00\+0[12]:00<br>`).MatchString(html.UnescapeString(list.body)) {
		t.Error("the jobs page does not give nightly's next fire times at 03:00 Paris time")
	}
	for _, ctl := range []string{`action="/jobs"`, `action="/jobs/nightly/run"`, `action="/jobs/nightly/disable"`} {
		if strings.Contains(list.body, ctl) {
			t.Errorf("the viewer's jobs page has %s", ctl)
		}
	}
	if !strings.Contains(list.body, `<a href="/jobs">Jobs</a>`) {
		t.Error("the layout has no link to /jobs")
	}

	page := viewer.do("GET", "/jobs/nightly", nil)
	expect(t, page, http.StatusOK, "the job page")
	noSecrets(t, "the job page", page.body)
	for _, want := range []string{"DB_PASSWORD=****\nMODE=full", "--password\n****\nmysql://u:****@db/x",
		`<a href="/tasks/` + ran + `">` + ran + `</a> <span class="state state-done">done</span>`,
		"2025-03-01 03:00:00+01:00", task.ReasonRunning, "The newest 2 of 2 fire records"} {
		if !strings.Contains(html.UnescapeString(page.body), want) {
			t.Errorf("the job page lacks %q", want)
		}
	}
	if n := strings.Count(page.body, "<li>"); n != task.JobViewNext {
		t.Errorf("the job page lists %d next fire times, want %d", n, task.JobViewNext)
	}
	if i, j := strings.Index(page.body, "2025-03-02 03:00"), strings.Index(page.body, "2025-03-01 03:00"); i < 0 || j < i {
		t.Error("the run history is not newest first")
	}
	if strings.Contains(page.body, "<form") && strings.Contains(page.body, "/jobs/nightly/") {
		t.Error("the viewer's job page has write controls")
	}
	if strings.Contains(page.body, "Shard placement") {
		t.Error("a job that is not sharded shows a shard placement")
	}

	sp := viewer.do("GET", "/jobs/split", nil)
	expect(t, sp, http.StatusOK, "the sharded job's page")
	noSecrets(t, "the sharded job's page", sp.body)
	for _, want := range []string{"<tr><td>w1</td><td>0 <code>east</code></td></tr>",
		"<tr><td>w2</td><td>1 <code>u:****@tcp(h:1)/db</code></td></tr>", "Not placed: items 2.",
		"item 0: <a href=\"/tasks/" + items[0] + "\">", "item 2: <a href=\"/tasks/" + items[2] + "\">" + items[2] + "</a> <span class=\"state state-pending\">pending</span>",
		"None: the job is disabled."} {
		if !strings.Contains(sp.body, want) {
			t.Errorf("the sharded job's page lacks %q", want)
		}
	}
	item := viewer.do("GET", "/tasks/"+items[1], nil)
	noSecrets(t, "the item's task page", item.body)
	if !strings.Contains(item.body, `<a href="/jobs/split">split</a>`) || !strings.Contains(item.body, "<code>u:****@tcp(h:1)/db</code>") {
		t.Error("an item's task page does not link its job, or does not show its parameter masked")
	}
	expect(t, viewer.do("GET", "/jobs/missing", nil), http.StatusNotFound, "the page of a missing job")
	expect(t, viewer.do("GET", "/jobs/-bad", nil), http.StatusBadRequest, "the page of a bad name")

	// The viewer's posts are refused, and so are the operator's without the CSRF token.
	for _, p := range []string{"/jobs/nightly/disable", "/jobs/nightly/run", "/jobs/nightly/delete"} {
		expect(t, viewer.form(p, url.Values{csrfField: {viewer.csrf}, "confirm": {"nightly"}}), http.StatusForbidden, "viewer posts "+p)
	}
	op := f.login(t, "olga")
	for _, p := range []string{"/jobs/nightly/disable", "/jobs/nightly/run", "/jobs/nightly/delete"} {
		expect(t, op.form(p, url.Values{"confirm": {"nightly"}}), http.StatusForbidden, "operator posts "+p+" without CSRF")
	}
	expect(t, op.form("/jobs", url.Values{"name": {"nocsrf"}, "command": {"x"}}), http.StatusForbidden, "create without CSRF")
	expect(t, viewer.form("/jobs", url.Values{csrfField: {viewer.csrf}, "name": {"byviewer"}, "command": {"x"}}),
		http.StatusForbidden, "viewer creates")
	if v, err := tc.GetJob(ctx, "nightly"); err != nil || !v.Job.Enabled {
		t.Fatalf("nightly after refused posts: %+v, %v", v, err)
	}
	if n := taskCount(t, f); n != 4 {
		t.Fatalf("%d tasks after refused posts, want 4", n)
	}

	// The operator's controls.
	list = op.do("GET", "/jobs", nil)
	for _, ctl := range []string{`action="/jobs"`, `action="/jobs/nightly/run"`, `action="/jobs/nightly/disable"`, `action="/jobs/split/enable"`} {
		if !strings.Contains(list.body, ctl) {
			t.Errorf("the operator's jobs page lacks %s", ctl)
		}
	}
	if page := op.do("GET", "/jobs/nightly", nil); !strings.Contains(page.body, `action="/jobs/nightly/delete"`) {
		t.Error("the operator's job page has no delete form")
	}

	// Bad input is named and creates nothing.
	form := func(change map[string]string) url.Values {
		v := url.Values{csrfField: {op.csrf}, "name": {"made"}, "schedule": {"@every 1h"}, "command": {"/bin/echo"}}
		for k, x := range change {
			v.Set(k, x)
		}
		return v
	}
	for _, bad := range []struct {
		change map[string]string
		want   string
	}{
		{map[string]string{"schedule": "0 3 * *"}, `job: schedule: schedule "0 3 * *"`},
		{map[string]string{"time_zone": "Mars/Olympus"}, `time_zone "Mars/Olympus"`},
		{map[string]string{"name": "a b"}, `job: name: job name "a b"`},
		{map[string]string{"command": " "}, "command: empty"},
		{map[string]string{"shards": "two"}, `shards "two": want a whole number`},
		{map[string]string{"shards": "1", "shard_params": "a\nb"}, "shard_params: 2 parameters for 1 shards"},
		{map[string]string{"env": "NOVALUE"}, `env line 1 "NOVALUE"`},
		{map[string]string{"misfire": "sometimes"}, `misfire: "sometimes"`},
		{map[string]string{"env": "DB_PASSWORD=****"}, "env DB_PASSWORD holds a masked secret"},
		{map[string]string{"name": "nightly"}, "create job nightly: already exists"},
	} {
		r := op.form("/jobs", form(bad.change))
		expect(t, r, http.StatusSeeOther, "bad form "+bad.want)
		if path, q := location(t, r); path != "/jobs" || !strings.Contains(q.Get("error"), bad.want) {
			t.Errorf("bad form: redirect to %s error %q, want /jobs with an error naming %q", path, q.Get("error"), bad.want)
		}
	}
	if _, err := tc.GetJob(ctx, "made"); err == nil {
		t.Fatal("a bad form created the job")
	}
	r := op.do("GET", "/jobs?error="+url.QueryEscape("job: schedule: bad"), nil)
	if !strings.Contains(r.body, `<p class="error">job: schedule: bad</p>`) {
		t.Error("the jobs page does not show the form's error")
	}

	r = op.form("/jobs", form(map[string]string{"time_zone": "Asia/Tokyo", "args": "hi\r\nthere", "env": "A=1\nB=x=y",
		"selector": "os=linux", "shards": "3", "shard_params": "p0\n\np2\n\n", "misfire": "skip", "concurrency": "allow",
		"timeout": "90s", "retries": "2", "enabled": "true"}))
	expect(t, r, http.StatusSeeOther, "create form")
	if path, q := location(t, r); path != "/jobs/made" || q.Get("flash") != "created made" {
		t.Errorf("create form goes to %s %v", path, q)
	}
	v, err := tc.GetJob(ctx, "made")
	if err != nil {
		t.Fatal(err)
	}
	j := v.Job
	if j.Schedule != "@every 1h" || j.TimeZone != "Asia/Tokyo" || !slices.Equal(j.Task.Args, []string{"hi", "there"}) ||
		j.Task.Env["B"] != "x=y" || j.Task.Selector.String() != "os=linux" || j.Shards != 3 ||
		!slices.Equal(j.ShardParams, []string{"p0", "", "p2"}) || j.Misfire != "skip" || j.Concurrency != "allow" ||
		time.Duration(j.Task.Timeout) != 90*time.Second || j.Task.Retries != 2 || !j.Enabled {
		t.Errorf("the job from the form: %+v", j)
	}

	// Disable from the list, enable from the page, run now, delete.
	r = op.form("/jobs/made/disable", url.Values{csrfField: {op.csrf}, "from": {"list"}})
	if path, q := location(t, r); r.status != http.StatusSeeOther || path != "/jobs" || q.Get("flash") != "disabled made" {
		t.Errorf("disable from the list: %d to %s %v", r.status, path, q)
	}
	if v, _ := tc.GetJob(ctx, "made"); v.Job.Enabled {
		t.Error("made is enabled after its disable")
	}
	r = op.form("/jobs/made/enable", url.Values{csrfField: {op.csrf}})
	if path, q := location(t, r); path != "/jobs/made" || q.Get("flash") != "enabled made" {
		t.Errorf("enable from the page goes to %s %v", path, q)
	}
	if v, _ := tc.GetJob(ctx, "made"); !v.Job.Enabled {
		t.Error("made is disabled after its enable")
	}
	r = op.form("/jobs/nightly/run", url.Values{csrfField: {op.csrf}})
	path, q := location(t, r)
	id, ok := strings.CutPrefix(q.Get("flash"), "ran nightly now: ")
	if path != "/jobs/nightly" || !ok {
		t.Fatalf("run now goes to %s %v", path, q)
	}
	if got, err := tc.Get(ctx, id); err != nil || got.Spec.Job != "nightly" || got.Spec.Env["DB_PASSWORD"] != envSecret {
		t.Errorf("the run now's task %s: %+v, %v; want a run of nightly with its secret", id, got, err)
	}
	r = op.form("/jobs/missing/run", url.Values{csrfField: {op.csrf}})
	if path, q := location(t, r); path != "/jobs/missing" || !strings.Contains(q.Get("error"), "no such job") {
		t.Errorf("run of a missing job goes to %s %v", path, q)
	}
	r = op.form("/jobs/made/delete", url.Values{csrfField: {op.csrf}, "confirm": {"mad"}})
	if path, q := location(t, r); path != "/jobs/made" || !strings.Contains(q.Get("error"), "confirm: type the job's name, made") {
		t.Errorf("delete with a wrong confirm goes to %s %v", path, q)
	}
	if _, err := tc.GetJob(ctx, "made"); err != nil {
		t.Fatalf("made after a delete with a wrong confirm: %v", err)
	}
	r = op.form("/jobs/made/delete", url.Values{csrfField: {op.csrf}, "confirm": {"made"}})
	if path, q := location(t, r); path != "/jobs" || !strings.HasPrefix(q.Get("flash"), "deleted made") {
		t.Errorf("delete goes to %s %v", path, q)
	}
	if _, err := tc.GetJob(ctx, "made"); err == nil {
		t.Error("made is there after its delete")
	}

	recs, _ := auditRecords(t, op)
	for _, action := range []string{"job.create", "job.disable", "job.enable", "job.delete"} {
		if rec := findAudit(t, recs, action, "made"); rec.User != "olga" {
			t.Errorf("%s record by %s", action, rec.User)
		}
	}
	if rec := findAudit(t, recs, "job.run", "nightly"); !strings.Contains(rec.Note, id) || strings.Contains(rec.After.Data, envSecret) {
		t.Errorf("run record %+v", rec)
	}
}

// TestJobFormBodyLimits: the job pages' button forms take a small body, the create form
// as much as the API's job.
func TestJobFormBodyLimits(t *testing.T) {
	f := startConsole(t)
	op := f.login(t, "olga")
	if err := task.NewClient(f.session, task.DefaultLayout).CreateJob(testCtx(t), task.Job{Name: "j", Task: task.Spec{Command: "x"}}); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", jobActionBodyLimit)
	for _, p := range []string{"/jobs/j/enable", "/jobs/j/disable", "/jobs/j/run", "/jobs/j/delete"} {
		r := op.form(p, url.Values{csrfField: {op.csrf}, "confirm": {"j"}, "pad": {pad}})
		if expect(t, r, http.StatusRequestEntityTooLarge, p); !strings.Contains(r.body, "at most 2048 bytes") {
			t.Errorf("%s: 413 without the cap: %s", p, r.body)
		}
	}
	if _, err := task.NewClient(f.session, task.DefaultLayout).GetJob(testCtx(t), "j"); err != nil {
		t.Fatalf("j after refused deletes: %v", err)
	}
	r := op.form("/jobs", url.Values{csrfField: {op.csrf}, "name": {"big"}, "command": {"x"}, "args": {strings.Repeat("a", jobFormBodyLimit)}})
	expect(t, r, http.StatusRequestEntityTooLarge, "a create form over the cap")
	r = op.form("/jobs", url.Values{csrfField: {op.csrf}, "name": {"big"}, "command": {"x"}, "args": {strings.Repeat("a", jobFormBodyLimit-1024)}})
	if path, _ := location(t, r); r.status != http.StatusSeeOther || path != "/jobs/big" {
		t.Errorf("a create form under the cap: %d to %s", r.status, path)
	}
}
