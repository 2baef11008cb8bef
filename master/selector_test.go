package master

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// TestSelectorWaitsForMatchingWorker: a task goes only to a worker with every label of
// its selector. One that no live worker matches stays pending, saying why, without
// holding up the tasks after it (here of lower priority) that fit elsewhere, and runs
// once a matching worker registers.
func TestSelectorWaitsForMatchingWorker(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	// Pending together before any worker registers, so that the master places them in
	// one round, the unplaceable one first.
	gpu := c.submit(task.Spec{Command: "true", Priority: 5, Selector: task.Selector{"gpu": "true"}})
	linux := c.submit(task.Spec{Command: "true", Priority: 1, Selector: task.Selector{"os": "linux"}})
	any := c.submit(task.Spec{Command: "true"})
	time.Sleep(300 * time.Millisecond) // the master has read them (the test can pass too early, never fail wrongly)
	if tk, err := c.client.Get(context.Background(), gpu); err != nil || tk.Waiting != "no live worker (it needs labels gpu=true)" {
		t.Fatalf("with no worker: %+v, %v; want it waiting for a worker", tk, err)
	}

	w1 := c.labeledWorker("w1", 3, map[string]string{"os": "linux", "gpu": "false"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { return len(w1.assignments()) == 2 }, "two assignments on w1")
	time.Sleep(300 * time.Millisecond) // more rounds: w1 still has a free slot
	if got := keys(w1.assignments()); !slices.Equal(got, []string{linux, any}) {
		t.Fatalf("w1 was given %v; want %v (not %s, whose selector it does not match)", got, []string{linux, any}, gpu)
	}
	tk, err := c.client.Get(context.Background(), gpu)
	if err != nil {
		t.Fatal(err)
	}
	if want := "no live worker has labels gpu=true (live: w1 gpu=false,os=linux)"; tk.State != task.Pending || tk.Waiting != want {
		t.Fatalf("%s: %s, waiting %q; want pending, waiting %q", gpu, tk.State, tk.Waiting, want)
	}
	list, err := c.client.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, lt := range list {
		if want := lt.ID == gpu; (lt.Waiting != "") != want {
			t.Errorf("List: %s %s waiting %q; want a reason only for %s", lt.ID, lt.State, lt.Waiting, gpu)
		}
	}

	g1 := c.labeledWorker("g1", 1, map[string]string{"gpu": "true"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := g1.assignments()[gpu]; return ok },
		"%s assigned once a worker with gpu=true registers", gpu)
	if tk, err := c.client.Get(context.Background(), gpu); err != nil || tk.State != task.Assigned || tk.Waiting != "" {
		t.Fatalf("%s once assigned: %+v, %v; want assigned, not waiting", gpu, tk, err)
	}
	if err := g1.finish(gpu, 0, false); err != nil {
		t.Fatal(err)
	}
	if st := c.state(gpu); st != task.Done {
		t.Fatalf("%s: %s, want done", gpu, st)
	}
}

// TestSelectorKeepsPriorityOrder: among the tasks a worker matches, the highest
// priority still goes first; a task of higher priority that it does not match takes
// none of its slots.
func TestSelectorKeepsPriorityOrder(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	arm := task.Selector{"arch": "arm64"}
	low := c.submit(task.Spec{Command: "true", Selector: task.Selector{"arch": "amd64"}})
	high := c.submit(task.Spec{Command: "true", Priority: 3})
	top := c.submit(task.Spec{Command: "true", Priority: 9, Selector: arm})
	time.Sleep(300 * time.Millisecond)
	w := c.labeledWorker("x86", 1, map[string]string{"arch": "amd64"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { return len(w.assignments()) == 1 }, "one assignment")
	if got := keys(w.assignments()); !slices.Equal(got, []string{high}) {
		t.Fatalf("x86's one slot went to %v; want %s, the highest priority it matches", got, high)
	}
	if err := w.finish(high, 0, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w.assignments()[low]; return ok }, "%s assigned next", low)
	if st := c.state(top); st != task.Pending {
		t.Fatalf("%s: %s; want pending, no arm64 worker being live", top, st)
	}
}
