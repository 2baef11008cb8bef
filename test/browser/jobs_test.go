package browser

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/paddock/paddock/task"
)

// Selectors of the job pages and the DAG view.
const (
	createJobForm = `form.create-job`
	jobTitle      = `main h1`
	nextFires     = `ol.next-fires li`
	dagLink       = `td.dag a.dag-link`
	dagTable      = `table.dag`
)

// waitReload loads path (waiting for sel) again and again until ok accepts the page,
// failing the test with what after taskTimeout.
func (h *harness) waitReload(what, path, sel string, ok func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(taskTimeout)
	for {
		h.open(path, sel)
		if ok() {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within %v", what, taskTimeout)
		}
		time.Sleep(pollEvery)
	}
}

// fillJobForm types a job into the create form of /jobs and submits it; fields maps
// the form's field names to what is typed (textareas take "\n" as a new line).
func (h *harness) fillJobForm(fields map[string]string, disabled bool) {
	h.t.Helper()
	h.open("/jobs", createJobForm)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		sel := createJobForm + ` [name=` + name + `]`
		if run[string](h, `document.querySelector('`+sel+`').value`) != "" { // shards, say: 0
			h.do("clear "+name, chromedp.Clear(chromedp.CSS(sel)))
		}
		h.do("type "+name, chromedp.SendKeys(chromedp.CSS(sel), fields[name]))
	}
	if disabled {
		h.do("untick enabled", chromedp.Click(chromedp.CSS(createJobForm+` input[name=enabled]`)))
	}
	if resp := h.navigate("create "+fields["name"], chromedp.Click(chromedp.CSS(createJobForm+` button[type=submit]`))); resp.Status != 200 {
		h.t.Fatalf("create %s: status %d, want 200 (the job's page after the redirect)", fields["name"], resp.Status)
	}
	if got := h.text(flash); got != "created "+fields["name"] {
		h.t.Fatalf("after the create form: flash %q, error %q", got, run[string](h, `(document.querySelector('main p.error') || {}).textContent || ""`))
	}
}

// historyLinks returns the task ids each row of the run history links to.
func (h *harness) historyLinks() [][]string {
	h.t.Helper()
	return run[[][]string](h, `Array.from(document.querySelectorAll('table.fires tbody tr'),
	  r => Array.from(r.querySelectorAll('td.runs a'), a => a.getAttribute('href').replace('/tasks/', '')))`)
}

// TestJobPagesInBrowser: an operator creates a job that fires every second from the
// /jobs form, sees its next fire times, sees its fires appear in the run history with
// links to tasks that end done, disables it and runs it now; a sharded job shows where
// its items are placed and its fires' items; a DAG's view shows its tasks by depth with
// their states.
func TestJobPagesInBrowser(t *testing.T) {
	h := start(t)
	h.startCluster()
	h.login("operator")
	c := task.NewClient(h.session, task.DefaultLayout)
	ctx := context.Background()

	const secret = "tok-9f8e7d6c"
	h.fillJobForm(map[string]string{"name": "tick", "schedule": "@every 1s", "command": "echo", "args": "tick",
		"env": "API_TOKEN=" + secret}, false)
	if got := h.text(jobTitle); got != "tick enabled" {
		t.Errorf("job page title %q", got)
	}
	if found := h.pageHas(secret); len(found) > 0 {
		t.Errorf("the job page shows the task's secret")
	}
	if got := h.text(`table.definition pre.data`); got != "tick" {
		t.Errorf("args shown %q", got)
	}
	next := run[[]string](h, `Array.from(document.querySelectorAll('`+nextFires+`'), e => e.textContent)`)
	if len(next) != task.JobViewNext {
		t.Fatalf("next fire times %q, want %d", next, task.JobViewNext)
	}
	for i := 1; i < len(next); i++ {
		a, err1 := time.Parse("2006-01-02 15:04:05Z07:00", next[i-1])
		b, err2 := time.Parse("2006-01-02 15:04:05Z07:00", next[i])
		if err1 != nil || err2 != nil || b.Sub(a) != time.Second {
			t.Fatalf("next fire times %q: want times a second apart", next)
		}
	}
	h.screenshot("1_created")

	// Fires appear, each with a task that ends done.
	var started [][]string
	h.waitReload("two of tick's fires with tasks done", "/jobs/tick", jobTitle, func() bool {
		started = nil
		for _, r := range h.rows("Run history") {
			if len(r) == 4 && r[1] == "started" && strings.HasSuffix(r[3], " done") {
				started = append(started, r)
			}
		}
		return len(started) >= 2
	})
	h.screenshot("2_history")
	first := h.historyLinks()[0]
	if len(first) != 1 {
		t.Fatalf("the newest fire links %q, want one task", first)
	}
	sel := `td.runs a[href="/tasks/` + first[0] + `"]`
	if resp := h.navigate("follow the fire's task", chromedp.Click(chromedp.CSS(sel))); resp.Status != 200 {
		t.Fatalf("the fire's task page: status %d", resp.Status)
	}
	h.waitReload("the newest fire's task done", "/tasks/"+first[0], taskState, func() bool { return h.text(taskState) == "done" })
	if got := h.text(`td.job`); !strings.HasPrefix(got, "tick (fired for ") {
		t.Errorf("the fire's task page says job %q", got)
	}
	if found := h.pageHas(secret); len(found) > 0 {
		t.Errorf("the fire's task page shows the task's secret")
	}
	if tk := h.waitTask(c, first[0], task.Done); tk.Spec.Env["API_TOKEN"] != secret {
		t.Errorf("the fire's task ran without the secret typed into the form: %v", tk.Spec.Env)
	}

	// Disable it, then run it now.
	h.open("/jobs/tick", jobTitle)
	if resp := h.navigate("disable", chromedp.Click(chromedp.CSS(`form.disable button`))); resp.Status != 200 {
		t.Fatalf("disable: status %d", resp.Status)
	}
	if got := h.text(flash); got != "disabled tick" {
		t.Errorf("flash %q after disable", got)
	}
	if got := h.text(jobTitle); got != "tick disabled" {
		t.Errorf("job page title %q after disable", got)
	}
	if got := h.text(nextFires); got != "None: the job is disabled." {
		t.Errorf("next fire times %q after disable", got)
	}
	if v, err := c.GetJob(ctx, "tick"); err != nil || v.Job.Enabled {
		t.Fatalf("tick after disable: %+v, %v", v, err)
	}
	if resp := h.navigate("run now", chromedp.Click(chromedp.CSS(`form.run button`))); resp.Status != 200 {
		t.Fatalf("run now: status %d", resp.Status)
	}
	id, ok := strings.CutPrefix(h.text(flash), "ran tick now: ")
	if !ok {
		t.Fatalf("flash %q after run now", h.text(flash))
	}
	if tk := h.waitTask(c, id, task.Done); tk.Spec.Job != "tick" || !tk.Spec.Scheduled.IsZero() {
		t.Errorf("the run now's task: %+v", tk.Spec)
	}
	h.screenshot("3_disabled_ran")

	// A sharded job: its placement, and fires of both items.
	h.fillJobForm(map[string]string{"name": "split", "schedule": "@every 1s", "command": "sh",
		"args": "-c\necho item $PADDOCK_SHARD_ITEM $PADDOCK_SHARD_PARAM", "shards": "2", "shard_params": "east\nwest"}, false)
	h.waitReload("split's placement and a fire of both items done", "/jobs/split", jobTitle, func() bool {
		place := h.rows("Shard placement")
		if len(place) != 1 || !slices.Equal(place[0], []string{"w1", "0 east, 1 west"}) {
			return false
		}
		for _, r := range h.rows("Run history") {
			if len(r) == 4 && r[1] == "started" && strings.Count(r[3], " done") == 2 &&
				strings.HasPrefix(r[3], "item 0: ") && strings.Contains(r[3], "\nitem 1: ") {
				return true
			}
		}
		return false
	})
	h.screenshot("4_sharded")
	// The items of the newest fire whose items both ended done ran with their parameters.
	checked := false
	for _, links := range h.historyLinks() {
		tks, err := c.GetEach(ctx, links)
		if err != nil || len(tks) != 2 || tks[0].State != task.Done || tks[1].State != task.Done {
			continue
		}
		for i, want := range []string{"item 0 east", "item 1 west"} {
			if tks[i].Status == nil || !strings.Contains(tks[i].Status.OutputTail, want) {
				t.Errorf("item %d's task %s: output %+v, want %q", i, links[i], tks[i].Status, want)
			}
		}
		checked = true
		break
	}
	if !checked {
		t.Error("no fire of split whose items both ended done links them")
	}
	// Disabled from the list.
	h.open("/jobs", `tr#job-split`)
	if resp := h.navigate("disable split from the list", chromedp.Click(chromedp.CSS(`tr#job-split form.disable button`))); resp.Status != 200 {
		t.Fatalf("disable from the list: status %d", resp.Status)
	}
	if got := h.text(flash); got != "disabled split" {
		t.Errorf("flash %q after disabling split from the list", got)
	}
	if r := row(h.rows(""), "split"); len(r) < 7 || r[2] != "disabled" || r[3] != "misfire run_once, concurrency skip, 2 shards" {
		t.Errorf("split's row after disable: %q", r)
	}
	h.screenshot("5_list")

	// A DAG: extract, then clean and count, then report (skipped, since count fails).
	ids, err := c.SubmitDAG(ctx, []task.DAGNode{
		{Name: "extract", Spec: task.Spec{Command: "true"}},
		{Name: "clean", Spec: task.Spec{Command: "true"}, After: []string{"extract"}},
		{Name: "count", Spec: task.Spec{Command: "false"}, After: []string{"extract"}},
		{Name: "report", Spec: task.Spec{Command: "true"}, After: []string{"clean", "count"}, OnParentFailure: task.OnParentFailureSkip},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.open("/tasks/"+ids["clean"], dagLink)
	if resp := h.navigate("open the DAG view", chromedp.Click(chromedp.CSS(dagLink))); resp.Status != 200 {
		t.Fatalf("the DAG view: status %d", resp.Status)
	}
	dagURL := run[string](h, `location.pathname + location.search`)
	want := map[string]string{"extract": "done", "clean": "done", "count": "failed", "report": "skipped"}
	var states map[string]string
	h.waitReload("the DAG's tasks ended", dagURL, dagTable, func() bool {
		states = run[map[string]string](h, `Object.fromEntries(Array.from(document.querySelectorAll('.dag-node'),
		  n => [n.id.replace('dag-', ''), n.querySelector('span.state').textContent]))`)
		for name, s := range want {
			if states[name] != s {
				return false
			}
		}
		return true
	})
	cols := run[[][]string](h, `Array.from(document.querySelectorAll('table.dag tbody td'),
	  td => Array.from(td.querySelectorAll('.dag-node'), n => n.id.replace('dag-', '')))`)
	if !slices.EqualFunc(cols, [][]string{{"extract"}, {"clean", "count"}, {"report"}}, slices.Equal) {
		t.Errorf("the DAG's columns %q, want [extract] [clean count] [report]", cols)
	}
	if got := h.text(`.dag-node.current a`); got != "clean" {
		t.Errorf("the task the view was opened from: %q, want clean", got)
	}
	if got := h.text(`#dag-report .after`); got != "after clean, count; skipped if one fails" {
		t.Errorf("report's parents shown as %q", got)
	}
	h.screenshot("6_dag")

	// A viewer sees the jobs, without a button or a form but the logout.
	h.login("viewer")
	h.open("/jobs", `table.jobs`)
	if r := row(h.rows(""), "tick"); len(r) != 7 {
		t.Errorf("the viewer's row of tick: %q, want 7 cells and no buttons", r)
	}
	for _, p := range []string{"/jobs", "/jobs/split"} {
		h.open(p, jobTitle)
		if forms := run[[]string](h, `Array.from(document.querySelectorAll('main form'), f => f.getAttribute('action'))`); len(forms) > 0 {
			t.Errorf("the viewer's %s has forms %q", p, forms)
		}
	}
}
