package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/task"
)

// TestDAGPage: the DAG view lays a DAG's tasks out by depth with their states and
// parents, only that DAG's, found from one of its tasks or from the newest; a DAG
// task's page links to it.
func TestDAGPage(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	tc := task.NewClient(f.session, task.DefaultLayout)
	submit := func() string {
		t.Helper()
		id, err := tc.Submit(ctx, task.Spec{Command: "/bin/true"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	dag := func(nodes []task.DAGNode) map[string]string {
		t.Helper()
		ids, err := tc.SubmitDAG(ctx, nodes)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	submit()
	ids := dag([]task.DAGNode{
		{Name: "extract", Spec: task.Spec{Command: "/bin/extract", Env: map[string]string{"API_TOKEN": envSecret}}},
		{Name: "clean", Spec: task.Spec{Command: "/bin/clean"}, After: []string{"extract"}},
		{Name: "count", Spec: task.Spec{Command: "/bin/count"}, After: []string{"extract"}},
		{Name: "report", Spec: task.Spec{Command: "/bin/report"}, After: []string{"clean", "count"}, OnParentFailure: "skip"},
	})
	submit()
	other := dag([]task.DAGNode{{Name: "extract", Spec: task.Spec{Command: "/bin/elsewhere"}}})
	endTask(t, f, ids["extract"], task.Status{State: task.Done, Finished: time.Now()})
	endTask(t, f, ids["count"], task.Status{State: task.Failed, ExitCode: 1, Finished: time.Now()})
	clean, err := tc.Get(ctx, ids["clean"])
	if err != nil {
		t.Fatal(err)
	}
	id := clean.Spec.DAG

	viewer := f.login(t, "vic")
	taskPage := viewer.do("GET", "/tasks/"+ids["clean"], nil)
	link := `href="/dags/` + id + `?task=` + ids["clean"] + `"`
	if !strings.Contains(taskPage.body, link) {
		t.Fatalf("the DAG task's page has no link %s", link)
	}
	for _, p := range []string{"/dags/" + id + "?task=" + ids["clean"], "/dags/" + id} {
		r := viewer.do("GET", p, nil)
		expect(t, r, http.StatusOK, p)
		noSecrets(t, p, r.body)
		if !strings.Contains(r.body, "4 tasks:") || strings.Contains(r.body, "/bin/elsewhere") || strings.Contains(r.body, "/bin/true") {
			t.Errorf("%s: not DAG %s's 4 tasks alone", p, id)
		}
		// One column per level: extract; clean and count; report.
		body := r.body[strings.Index(r.body, "<tbody>"):]
		cols := strings.Split(body, "<td>")[1:]
		want := [][]string{{"extract"}, {"clean", "count"}, {"report"}}
		if len(cols) != len(want) {
			t.Fatalf("%s: %d columns, want %d:\n%s", p, len(cols), len(want), body)
		}
		for i, names := range want {
			for _, n := range names {
				if !strings.Contains(cols[i], `id="dag-`+n+`"`) {
					t.Errorf("%s: column %d lacks %s", p, i, n)
				}
			}
			if got := strings.Count(cols[i], `class="dag-node`); got != len(names) {
				t.Errorf("%s: column %d holds %d tasks, want %d", p, i, got, len(names))
			}
		}
		for name, state := range map[string]task.State{"extract": task.Done, "count": task.Failed, "clean": task.Pending} {
			if !strings.Contains(r.body, `id="dag-`+name+`" data-state="`+string(state)+`"`) {
				t.Errorf("%s: %s is not shown %s", p, name, state)
			}
		}
		if !strings.Contains(r.body, `after <a href="#dag-clean">clean</a>, <a href="#dag-count">count</a>; skipped if one fails`) {
			t.Errorf("%s: report's parents are not shown", p)
		}
	}
	if r := viewer.do("GET", "/dags/"+id+"?task="+ids["clean"], nil); !strings.Contains(r.body, `dag-node current" id="dag-clean"`) {
		t.Error("the task the DAG view was opened from is not marked")
	}
	expect(t, viewer.do("GET", "/dags/nosuchdag", nil), http.StatusNotFound, "a missing DAG")
	expect(t, viewer.do("GET", "/dags/"+id+"?task=nonsense", nil), http.StatusBadRequest, "a bad task id")
	// The other DAG, submitted after: its one task alone.
	o, err := tc.Get(ctx, other["extract"])
	if err != nil {
		t.Fatal(err)
	}
	r := viewer.do("GET", "/dags/"+o.Spec.DAG, nil)
	if expect(t, r, http.StatusOK, "the other DAG"); !strings.Contains(r.body, "1 tasks:") || !strings.Contains(r.body, "/bin/elsewhere") {
		t.Errorf("the other DAG's view:\n%s", r.body)
	}
}
