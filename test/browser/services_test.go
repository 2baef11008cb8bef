package browser

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/logcollector"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/replicator/apply"
)

// Selectors of the tasks, replication and logs pages.
const (
	submitForm  = `form[action="/tasks"]`
	taskState   = `main h1 span.state`
	taskOutput  = `pre.output` // the status's output tail comes before the history's
	pollEvery   = 250 * time.Millisecond
	taskTimeout = 45 * time.Second // a submitted echo, from pending to done, on a busy machine
)

// rows returns the text of the body cells of the first table.list after the h2 whose
// text begins with heading, or of the page's first table.list if heading is empty; nil
// if there is no such table.
func (h *harness) rows(heading string) [][]string {
	h.t.Helper()
	return run[[][]string](h, `(() => {
	  const heading = `+strconv.Quote(heading)+`;
	  let t = null;
	  if (heading === "") {
	    t = document.querySelector('main table.list');
	  } else {
	    const h2 = Array.from(document.querySelectorAll('main h2')).find(e => e.textContent.trim().startsWith(heading));
	    for (let e = h2 && h2.nextElementSibling; e && !t; e = e.nextElementSibling) {
	      if (e.matches('table.list')) t = e;
	    }
	  }
	  if (!t) return null;
	  return Array.from(t.tBodies[0].rows, r => Array.from(r.cells, c => c.innerText.trim()));
	})()`)
}

// row returns the row of rows whose first cell is first, or nil.
func row(rows [][]string, first string) []string {
	i := slices.IndexFunc(rows, func(r []string) bool { return len(r) > 0 && r[0] == first })
	if i < 0 {
		return nil
	}
	return rows[i]
}

// pageHas reports which of secrets the page's HTML or visible text contains.
func (h *harness) pageHas(secrets ...string) []string {
	h.t.Helper()
	html := run[string](h, `document.documentElement.outerHTML`)
	text := run[string](h, `document.body.innerText`)
	var found []string
	for _, s := range secrets {
		if strings.Contains(html, s) || strings.Contains(text, s) {
			found = append(found, s)
		}
	}
	return found
}

func TestSubmittedTaskRunsToDone(t *testing.T) {
	h := start(t)
	h.startCluster()
	h.login("operator")

	const marker = "hello-from-browser"
	h.open("/tasks", submitForm)
	h.do("fill the submit form",
		chromedp.SendKeys(chromedp.CSS(submitForm+` input[name=command]`), "sh"),
		chromedp.SendKeys(chromedp.CSS(submitForm+` textarea[name=args]`), "-c\necho "+marker))
	if resp := h.navigate("submit", chromedp.Click(chromedp.CSS(submitForm+` button[type=submit]`))); resp.Status != 200 {
		t.Fatalf("submit: status %d, want 200 (the task's page after the redirect)", resp.Status)
	}
	loc := run[string](h, `location.pathname`)
	id, ok := strings.CutPrefix(loc, "/tasks/")
	if !ok || id == "" || strings.Contains(id, "/") {
		t.Fatalf("after submitting the page is %s, want /tasks/<id>", loc)
	}
	if got := h.text(flash); got != "submitted "+id {
		t.Errorf("flash %q, want %q", got, "submitted "+id)
	}
	if got := h.text(`main table.kv pre.data`); got != "-c\necho "+marker {
		t.Errorf("args shown %q, want %q", got, "-c\necho "+marker)
	}

	// The master assigns, the worker runs; the page is reloaded until it shows the end.
	deadline := time.Now().Add(taskTimeout)
	for {
		state := h.text(taskState)
		out := run[string](h, `(document.querySelector('`+taskOutput+`') || {}).textContent || ""`)
		if state == "done" && strings.Contains(out, marker) {
			break
		}
		if state == "failed" || state == "cancelled" {
			t.Fatalf("task %s ended %s; output tail %q", id, state, out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s after %v; output tail %q", id, state, taskTimeout, out)
		}
		time.Sleep(pollEvery)
		h.navigate("reload "+loc, chromedp.Reload())
	}
	status := h.rows("") // the runs that did not end it: none
	if len(status) != 1 || !strings.Contains(status[0][0], "None") {
		t.Errorf("runs that did not end the task: %q, want none", status)
	}

	h.open("/tasks", submitForm)
	r := row(h.rows(""), id)
	if r == nil || r[1] != "done" || r[2] != "sh" || r[3] != "w1" || r[4] != "0" {
		t.Errorf("/tasks row of %s: %q, want done, sh, w1, exit code 0", id, r)
	}
	h.open("/workers", `main table.list`)
	if r := row(h.rows("Workers"), "w1"); r == nil || r[2] != "2" {
		t.Errorf("/workers row of w1: %q, want capacity 2", r)
	}
	if got := h.text(`main table.kv td`); got != "m1" {
		t.Errorf("/workers master id %q, want m1", got)
	}
}

func TestReplicationShowsInstances(t *testing.T) {
	h := start(t)
	const (
		name      = "orders"
		sourcePW  = "src-Secret-4711"
		targetPW  = "tgt-Secret-0815"
		sourceDSN = "repl:" + sourcePW + "@tcp(127.0.0.1:1)/"
		targetDSN = "apply:" + targetPW + "@tcp(127.0.0.1:2)/"
	)
	layout, _ := replicator.NewLayout("/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := replicator.NewAdmin(h.session, layout).Create(ctx, name, replicator.TaskDef{
		Source: sourceDSN, Target: targetDSN, Include: []string{"shop.*"}, ServerID: 4101, Enabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Two instances stand, as replicator instances would register: the lower node runs.
	now := time.Now().UTC()
	var nodes []string
	for _, in := range []replicator.InstanceInfo{
		{Host: "r1", PID: 101, State: "running", Since: now},
		{Host: "r2", PID: 202, State: "standby", Since: now},
	} {
		data, _ := json.Marshal(in)
		p, err := h.conn.Create(layout.Instances(name)+"/"+in.Host+"_", data,
			zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatalf("create the instance node of %s: %v", in.Host, err)
		}
		nodes = append(nodes, p[strings.LastIndexByte(p, '/')+1:])
	}
	status, _ := json.Marshal(replicator.Status{State: "running", Instance: nodes[0], LagSeconds: 1.5, Updated: now,
		Position: apply.Position{File: "bin.000001", Pos: 4, Time: now.Add(-1500 * time.Millisecond)}})
	h.create(layout.Status(name), status)

	h.login("viewer")
	h.open("/replication", `main table.list`)
	r := row(h.rows(""), name)
	// The lag is judged as the page is read: the reported 1.5 s plus the report's age.
	if r == nil || r[1] != "ok" || r[2] != "running" || r[3] != nodes[0] || r[4] != "1" || !judgedLag(r[5]) {
		t.Errorf("/replication row of %s: %q, want health ok, state running, running %s, 1 standby, lag 1.5 s and more", name, r, nodes[0])
	}
	if found := h.pageHas(sourcePW, targetPW); found != nil {
		t.Errorf("/replication shows the passwords %q", found)
	}

	if resp := h.navigate("click "+name, chromedp.Click(chromedp.CSS(`main table.list a[href="/replication/`+name+`"]`))); resp.Status != 200 {
		t.Fatalf("the link to /replication/%s: status %d", name, resp.Status)
	}
	h.do("wait for the instances", chromedp.WaitVisible(chromedp.CSS(`main table.list`)))
	instances := h.rows("Instances")
	want := [][]string{{nodes[0], "runs", "r1", "101", "running"}, {nodes[1], "standby", "r2", "202", "standby"}}
	if len(instances) != len(want) {
		t.Fatalf("instances %q, want r1 running then r2 standby", instances)
	}
	for i, w := range want {
		if got := instances[i]; len(got) < len(w) || !slices.Equal(got[:len(w)], w) {
			t.Errorf("instance row %d: %q, want %q", i, got, w)
		}
	}
	page := run[string](h, `document.querySelector('main').innerText`)
	for _, w := range []string{"running on " + nodes[0], "reported ", "127.0.0.1:1", "127.0.0.1:2"} {
		if !strings.Contains(page, w) {
			t.Errorf("/replication/%s lacks %q", name, w)
		}
	}
	if found := h.pageHas(sourcePW, targetPW); found != nil {
		t.Errorf("/replication/%s shows the passwords %q", name, found)
	}
}

// judgedLag says the lag cell s reads "N.N s" with N.N from 1.5 (the reported lag) to
// 1.5 s plus a minute (the report's age while the test ran).
func judgedLag(s string) bool {
	v, ok := strings.CutSuffix(s, " s")
	lag, err := strconv.ParseFloat(v, 64)
	return ok && err == nil && lag >= 1.5 && lag < 61.5
}

func TestLogsShowCollectorAssignments(t *testing.T) {
	h := start(t)
	layout, _ := logcollector.NewLayout("/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := logcollector.NewAdmin(h.session, layout)
	for _, s := range []struct{ id, host, path string }{
		{"nginx", "web1", "/var/log/nginx/*.log"},
		{"app", "web2", "/var/log/app/app.log"},
		{"spare", "web3", "/var/log/spare.log"}, // assigned to nobody
	} {
		if err := admin.AddSource(ctx, s.id, s.host, s.path); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.session.MakeDirs(ctx, layout.Collectors()); err != nil {
		t.Fatal(err)
	}
	asg, _ := json.Marshal(logcollector.Assignment{Epoch: 3, Sources: []string{"app", "nginx"}})
	h.create(layout.Collector("c1"), asg)
	holder, _ := json.Marshal(map[string]any{"host": "web1", "pid": 42, "since": time.Now().UTC()})
	if _, err := h.conn.Create(layout.Session("c1"), holder, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	st, _ := json.Marshal(logcollector.Status{State: "running", Host: "web1", Updated: time.Now().UTC(), Epoch: 3,
		Sources: map[string]logcollector.SourceStatus{
			"app":   {Epoch: 3, LagBytes: 0},
			"nginx": {Epoch: 3, LagBytes: 4096},
		}})
	h.create(layout.Status("c1"), st)

	h.login("viewer")
	h.open("/logs", `main table.list`)
	sources := h.rows("Sources")
	for _, w := range [][]string{
		{"app", "web2", "/var/log/app/app.log", "c1", "0"},
		{"nginx", "web1", "/var/log/nginx/*.log", "c1", "4096"},
		{"spare", "web3", "/var/log/spare.log", "unassigned", "unplaced: no collector on host web3"},
	} {
		if r := row(sources, w[0]); len(r) < len(w) || !slices.Equal(r[:len(w)], w) {
			t.Errorf("source row of %s: %q, want %q", w[0], r, w)
		}
	}
	c := row(h.rows("Collectors"), "c1")
	if want := []string{"c1", "web1", "running", "3", "app nginx", "3"}; len(c) < len(want) || !slices.Equal(c[:len(want)], want) {
		t.Errorf("collector row of c1: %q, want %q", c, want)
	}
}
