package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// workerRow is w1's row of the workers page: 0 id, 1 address, 2 capacity, 3 assigned,
// 4 running, 5 state.
const workerState = 5

// waitWorkerState reloads /workers until w1's state cell begins with want.
func (h *harness) waitWorkerState(want string) []string {
	h.t.Helper()
	deadline := time.Now().Add(taskTimeout)
	for {
		h.open("/workers", `main table.list`)
		r := row(h.rows("Workers"), "w1")
		if len(r) > workerState && strings.HasPrefix(r[workerState], want) {
			return r
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("w1 never %s on /workers: row %q", want, r)
		}
		time.Sleep(pollEvery)
	}
}

func (h *harness) waitTask(c *task.Client, id string, want task.State) *task.Task {
	h.t.Helper()
	var tk *task.Task
	ok := testutil.WaitFor(taskTimeout, pollEvery, func() bool {
		var err error
		tk, err = c.Get(context.Background(), id)
		return err == nil && tk.State == want
	})
	if !ok {
		h.t.Fatalf("%s never %s: %+v", id, want, tk)
	}
	return tk
}

// TestDrainFromWorkersPage: an operator drains w1 from the workers page while it runs
// a task: the task ends done, a task submitted meanwhile waits, the page says
// draining then drained; undrained, w1 runs the waiting task. Both are in the audit log.
func TestDrainFromWorkersPage(t *testing.T) {
	h := start(t)
	h.startCluster()
	h.login("operator")
	c := task.NewClient(h.session, task.DefaultLayout)
	// The first task runs until the test opens its gate, so that w1 is seen draining.
	gate := filepath.Join(t.TempDir(), "gate")
	first, err := c.Submit(context.Background(), task.Spec{Command: "sh",
		Args: []string{"-c", `while [ ! -e "$GATE" ]; do sleep 0.05; done`}, Env: map[string]string{"GATE": gate}})
	if err != nil {
		t.Fatal(err)
	}
	h.waitTask(c, first, task.Running)
	h.waitWorkerState("active")
	h.screenshot("1_active")

	if resp := h.navigate("drain w1", chromedp.Click(chromedp.CSS(`tr#worker-w1 form.drain button`))); resp.Status != 200 {
		t.Fatalf("drain: status %d, want 200 (the workers page after the redirect)", resp.Status)
	}
	if got := h.text(flash); got != "w1 drained: it takes no new tasks" {
		t.Errorf("flash %q after drain", got)
	}
	h.screenshot("2_drain_requested")
	second, err := c.Submit(context.Background(), task.Spec{Command: "echo", Args: []string{"after"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := h.waitWorkerState("draining"); r[4] != "1" {
		t.Errorf("draining w1's row %q: want 1 running", r)
	}
	h.screenshot("3_draining")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	if tk := h.waitTask(c, first, task.Done); tk.Worker != "w1" || len(tk.History) != 0 {
		t.Errorf("the task w1 ran when drained: on %s, history %+v", tk.Worker, tk.History)
	}
	h.waitWorkerState("drained")
	if tk, err := c.Get(context.Background(), second); err != nil || tk.State != task.Pending {
		t.Errorf("the task submitted while w1 was drained: %+v, %v; want pending", tk, err)
	}
	if n := len(h.pageHasButton(`tr#worker-w1 form.undrain button`)); n != 1 {
		t.Errorf("drained w1 shows %d undrain buttons, want 1", n)
	}
	h.screenshot("4_drained")

	if resp := h.navigate("undrain w1", chromedp.Click(chromedp.CSS(`tr#worker-w1 form.undrain button`))); resp.Status != 200 {
		t.Fatalf("undrain: status %d", resp.Status)
	}
	if got := h.text(flash); got != "w1 undrained: it takes tasks again" {
		t.Errorf("flash %q after undrain", got)
	}
	if tk := h.waitTask(c, second, task.Done); tk.Worker != "w1" {
		t.Errorf("after undrain, %s ended on %s", second, tk.Worker)
	}
	h.waitWorkerState("active")
	h.screenshot("5_undrained")

	h.open("/audit", `main`)
	page := run[string](h, `document.querySelector('main').innerText`)
	for _, want := range []string{"worker.drain", "worker.undrain"} {
		if !strings.Contains(page, want) {
			t.Errorf("the audit log lacks %s", want)
		}
	}
}

// pageHasButton returns the texts of the elements sel matches.
func (h *harness) pageHasButton(sel string) []string {
	h.t.Helper()
	return run[[]string](h, `Array.from(document.querySelectorAll('`+sel+`'), e => e.textContent)`)
}
