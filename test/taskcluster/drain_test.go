package taskcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// paddockCmd runs `paddock ARGS` and returns its stdout, stderr and exit code.
func (c *cluster) paddockCmd(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	cmd := exec.Command(paddock.Path(c.t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		c.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// workerCmd runs `paddock worker SUB --zk ADDR ARGS`, failing the test unless it exits 0.
func (c *cluster) workerCmd(sub string, args ...string) string {
	c.t.Helper()
	out, errOut, code := c.paddockCmd(append([]string{"worker", sub, "--zk", c.addr}, args...)...)
	if code != 0 {
		c.t.Fatalf("paddock worker %s %v: exit %d, stdout %q, stderr %q", sub, args, code, out, errOut)
	}
	return out
}

// workerState reads what worker id says of itself; "" if it is not registered.
func (c *cluster) workerState(id string) task.WorkerState {
	data, _, err := c.s.Conn().Get(c.layout.Worker(id))
	var info task.WorkerInfo
	if err != nil || json.Unmarshal(data, &info) != nil {
		return ""
	}
	return info.State
}

func (c *cluster) waitState(id string, want task.WorkerState) {
	c.t.Helper()
	testutil.Eventually(c.t, 20*time.Second, 20*time.Millisecond, func() bool { return c.workerState(id) == want },
		"worker %s never %s (is %q)\n%s", id, want, c.workerState(id), c.logTails())
}

func (c *cluster) get(id string) *task.Task {
	c.t.Helper()
	tk, err := c.client.Get(context.Background(), id)
	if err != nil {
		c.t.Fatal(err)
	}
	return tk
}

// waitRunning waits for task id to run and returns its worker.
func (c *cluster) waitRunning(id string) string {
	c.t.Helper()
	var w string
	testutil.Eventually(c.t, 20*time.Second, 20*time.Millisecond, func() bool {
		tk := c.get(id)
		w = tk.Worker
		return tk.State == task.Running
	}, "%s never ran\n%s", id, c.logTails())
	return w
}

// TestDrainWorker: a worker drained (paddock worker drain) mid-run finishes its task,
// gets nothing new while drained — the new tasks wait — and says drained; undrained,
// it runs them.
func TestDrainWorker(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	c.startWorker("w1", 2)
	c.waitState("w1", task.WorkerActive)
	gate := filepath.Join(c.dir, "gate")
	spec := c.runOnce(`; while [ ! -e "$GATE" ]; do sleep 0.05; done`)
	spec.Env["GATE"] = gate
	first := c.submit(spec)
	c.waitRunning(first)
	c.workerCmd("drain", "w1")
	c.waitState("w1", task.WorkerDraining)
	var later []string
	for range 3 {
		later = append(later, c.submit(c.runOnce("")))
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tk := c.waitAll([]string{first}, 30*time.Second)[first]
	if tk.State != task.Done || tk.Worker != "w1" || len(tk.History) != 0 {
		t.Errorf("the task running when w1 was drained: %s on %s, history %+v; want done on w1 at once", tk.State, tk.Worker, tk.History)
	}
	c.waitState("w1", task.WorkerDrained)
	out := c.workerCmd("list")
	if !strings.Contains(out, "w1") || !strings.Contains(out, "drained") || !strings.Contains(out, "requested") {
		t.Errorf("paddock worker list:\n%s", out)
	}
	time.Sleep(time.Second) // ample for the master to dispatch, were it to
	for _, id := range later {
		if tk := c.get(id); tk.State != task.Pending {
			t.Errorf("%s is %s on %s while the only worker is drained; want pending", id, tk.State, tk.Worker)
		}
	}
	c.workerCmd("undrain", "w1")
	c.waitState("w1", task.WorkerActive)
	for id, tk := range c.waitAll(later, 30*time.Second) {
		if tk.State != task.Done || tk.Worker != "w1" {
			t.Errorf("%s after undrain: %s on %s, want done on w1", id, tk.State, tk.Worker)
		}
	}
	if _, errOut, code := c.paddockCmd("worker", "undrain", "--zk", c.addr, "w1"); code != 1 || !strings.Contains(errOut, "w1 is not drained") {
		t.Errorf("undrain of an active worker: exit %d, %q", code, errOut)
	}
}

// TestDrainDeadline: a drain with a deadline hands what still runs back as a lost run;
// it runs again elsewhere, and the lost run does not count against its retries.
func TestDrainDeadline(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	c.startWorker("w1", 1)
	c.waitState("w1", task.WorkerActive)
	id := c.submit(c.runOnce(`; [ "$PADDOCK_TASK_ATTEMPT" = 1 ] && sleep 60; true`))
	c.waitRunning(id)
	c.workerCmd("drain", "w1", "--deadline", "1s")
	c.startWorker("w2", 1)
	tk := c.waitAll([]string{id}, 40*time.Second)[id]
	if tk.State != task.Done || tk.Worker != "w2" || tk.Status.Attempts != 2 {
		t.Errorf("%s: %s on %s after %d runs; want done on w2 at the second", id, tk.State, tk.Worker, tk.Status.Attempts)
	}
	if len(tk.History) != 1 || !tk.History[0].HandedBack || tk.History[0].Worker != "w1" || tk.History[0].Signal == "" {
		t.Errorf("history %+v: want one run handed back by w1, with the signal that ended it", tk.History)
	}
	c.waitState("w1", task.WorkerDrained)
}

// TestSIGTERMWorker: SIGTERM stops a worker gracefully: a task that ends within the
// stop grace ends done there; with a short grace, the task still running is killed and
// handed back as a lost run, and runs again elsewhere without using a retry.
func TestSIGTERMWorker(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	w1 := c.startWorker("w1", 1, "--stop-grace", "30s")
	c.waitState("w1", task.WorkerActive)
	id := c.submit(c.runOnce("; sleep 2; echo finished"))
	c.waitRunning(id)
	if err := w1.Stop(30 * time.Second); err != nil {
		t.Fatalf("w1 stopped with %v\n%s", err, w1.LogTail(20))
	}
	tk := c.get(id)
	if tk.State != task.Done || tk.Worker != "w1" || len(tk.History) != 0 || !strings.Contains(tk.Status.OutputTail, "finished") {
		t.Errorf("%s when w1 stopped: %s on %s, history %+v; want done on w1", id, tk.State, tk.Worker, tk.History)
	}

	w2 := c.startWorker("w2", 1, "--stop-grace", "500ms")
	c.waitState("w2", task.WorkerActive)
	long := c.submit(c.runOnce(`; [ "$PADDOCK_TASK_ATTEMPT" = 1 ] && sleep 60; true`))
	if w := c.waitRunning(long); w != "w2" {
		t.Fatalf("%s runs on %s, want w2", long, w)
	}
	if err := w2.Stop(30 * time.Second); err != nil {
		t.Fatalf("w2 stopped with %v\n%s", err, w2.LogTail(20))
	}
	tk = c.get(long)
	if len(tk.History) != 1 || !tk.History[0].HandedBack || tk.History[0].Signal != "SIGTERM" || tk.History[0].Worker != "w2" {
		t.Fatalf("%s after w2 stopped: %s, history %+v; want a run handed back by w2, killed by SIGTERM", long, tk.State, tk.History)
	}
	c.startWorker("w3", 1)
	tk = c.waitAll([]string{long}, 30*time.Second)[long]
	if tk.State != task.Done || tk.Worker != "w3" || tk.Status.Attempts != 2 {
		t.Errorf("%s: %s on %s after %d runs (retries 0); want done on w3: the handed back run uses no retry",
			long, tk.State, tk.Worker, tk.Status.Attempts)
	}
}

// TestKilledRunShowsSignal: a task whose process is killed by a signal ends failed,
// killed by that signal, and paddock task list says so.
func TestKilledRunShowsSignal(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	c.startWorker("w1", 1)
	id := c.submit(task.Spec{Command: "sh", Args: []string{"-c", "kill -TERM $$"}})
	tk := c.waitAll([]string{id}, 30*time.Second)[id]
	if tk.State != task.Failed || tk.Status.Signal != "SIGTERM" || tk.Status.ExitCode != -1 {
		t.Errorf("status %+v: want failed, killed by SIGTERM, exit code -1", tk.Status)
	}
	out, _, _ := c.taskCmd("list")
	if !strings.Contains(out, "killed (SIGTERM)") {
		t.Errorf("paddock task list does not say killed (SIGTERM):\n%s", out)
	}
	if _, errOut, code := c.taskCmd("wait", id); code != 1 || !strings.Contains(errOut, "killed by SIGTERM") {
		t.Errorf("paddock task wait: exit %d, %q; want 1, killed by SIGTERM", code, errOut)
	}
}

// TestDuplicateWorkerID: a second worker started with the id of a live one is refused,
// naming the holder's session, host and pid, instead of waiting for ever.
func TestDuplicateWorkerID(t *testing.T) {
	c := newCluster(t)
	first := c.startWorker("w1", 1)
	c.waitState("w1", task.WorkerActive)
	_, st, err := c.s.Conn().Get(c.layout.Worker("w1"))
	if err != nil {
		t.Fatal(err)
	}
	second := c.start("worker-w1-again", "worker", "--id", "w1", "--output-dir", filepath.Join(c.dir, "again"), "--allow-root")
	select {
	case <-second.Exited():
	case <-time.After(30 * time.Second):
		t.Fatalf("the second w1 still waits 30s later\n%s", second.LogTail(10))
	}
	log := second.LogTail(5)
	want := fmt.Sprintf("held by session 0x%x", st.EphemeralOwner)
	if second.ExitErr() == nil || !strings.Contains(log, want) || !strings.Contains(log, fmt.Sprintf("pid %d", first.PID())) {
		t.Errorf("second w1 exited with %v; want a failure naming %s and pid %d:\n%s", second.ExitErr(), want, first.PID(), log)
	}
	if c.workerState("w1") != task.WorkerActive {
		t.Error("the first w1 lost its registration")
	}
}
