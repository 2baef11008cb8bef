package taskcluster

import (
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/task"
)

// TestSelectorWaitsForWorker: a task submitted with paddock task submit --selector that
// no live worker matches stays pending, and paddock task get and list say why; when a
// worker started with those labels joins, it runs there.
func TestSelectorWaitsForWorker(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	c.startWorker("w1", 2, "--labels", "os=linux")
	c.waitState("w1", task.WorkerActive)
	id := c.submitCLI("--selector", "os=linux,gpu=true", "--", "sh", "-c", "echo gpu")
	const why = "no live worker has labels gpu=true,os=linux (live: w1 os=linux)"
	time.Sleep(time.Second) // the master has had its chance (the test can pass too early, never fail wrongly)
	if tk := c.getCLI(id); tk.State != task.Pending || tk.Waiting != why {
		t.Fatalf("paddock task get %s: %s, waiting %q; want pending, waiting %q\n%s", id, tk.State, tk.Waiting, why, c.logTails())
	}
	if out, _, code := c.taskCmd("list"); code != 0 || !strings.Contains(out, why) {
		t.Errorf("paddock task list: exit %d:\n%s\nwant the reason %s waits", code, out, id)
	}

	c.startWorker("g1", 1, "--labels", "gpu=true, os=linux,zone=a")
	tk := c.waitAll([]string{id}, 30*time.Second)[id]
	if tk.State != task.Done || tk.Status.Worker != "g1" || tk.Status.OutputTail != "gpu\n" || tk.Waiting != "" {
		t.Fatalf("%s: %s on %q, output %q, waiting %q; want done on g1, waiting for nothing\n%s",
			id, tk.State, tk.Status.Worker, tk.Status.OutputTail, tk.Waiting, c.logTails())
	}
}
