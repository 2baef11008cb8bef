package taskcluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// TestTwoHundredTasks: 200 tasks over 3 workers all end done, each run exactly once,
// spread over every worker, and no assignment is left behind.
func TestTwoHundredTasks(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	for _, w := range []string{"w1", "w2", "w3"} {
		c.startWorker(w, 4)
	}
	var ids []string
	for range 200 {
		ids = append(ids, c.submit(c.runOnce("")))
	}
	ended := c.waitAll(ids, 90*time.Second)
	perWorker := map[string]int{}
	for id, tk := range ended {
		if tk.State != task.Done || tk.Status.Attempts != 1 || len(tk.History) != 0 {
			t.Errorf("%s: %s after %d runs, history %+v; want done at the first", id, tk.State, tk.Status.Attempts, tk.History)
		}
		perWorker[tk.Worker]++
	}
	runs := c.runs()
	for _, id := range ids {
		if runs[id] != 1 {
			t.Errorf("%s ran %d times, want once", id, runs[id])
		}
	}
	if len(runs) != len(ids) {
		t.Errorf("%d tasks ran, want %d", len(runs), len(ids))
	}
	for _, w := range []string{"w1", "w2", "w3"} {
		if perWorker[w] == 0 {
			t.Errorf("worker %s ran nothing: %v", w, perWorker)
		}
	}
	if a, err := c.assignments(); err != nil || len(a) != 0 {
		t.Errorf("assignments left: %v, %v", a, err)
	}
}

// TestWorkerKilled: a worker killed with SIGKILL while its tasks run: once its session
// expires they run elsewhere, as a lost run that does not count as a failure, and
// every task ends done.
func TestWorkerKilled(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	victim := c.startWorker("w1", 3)
	var ids []string
	for range 12 {
		ids = append(ids, c.submit(c.runOnce("; sleep 1")))
	}
	// Only w1 is there at first: it takes three.
	var onVictim []string
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		onVictim = onVictim[:0]
		for _, id := range ids {
			if tk, err := c.client.Get(context.Background(), id); err == nil && tk.State == task.Running {
				onVictim = append(onVictim, id)
			}
		}
		return len(onVictim) == 3
	}, "w1 runs three tasks")
	c.startWorker("w2", 3)
	c.startWorker("w3", 3)
	victim.Kill()
	ended := c.waitAll(ids, 60*time.Second)
	for id, tk := range ended {
		if tk.State != task.Done {
			t.Errorf("%s: %s (%s), want done", id, tk.State, tk.Status.Error)
		}
	}
	for _, id := range onVictim {
		tk := ended[id]
		if tk.Worker == "w1" || len(tk.History) != 1 || !tk.History[0].Lost || tk.History[0].Worker != "w1" {
			t.Errorf("%s ran on w1 when it was killed: ended on %s with history %+v; want a lost run on w1, then done elsewhere",
				id, tk.Worker, tk.History)
		}
	}
}

// TestMasterKilled: the active master is killed with SIGKILL while tasks keep coming;
// the backup takes over within the session timeout (plus the server's tick), every
// task ends done and runs exactly once, and no task is ever assigned to two workers.
func TestMasterKilled(t *testing.T) {
	c := newCluster(t)
	m1 := c.startMaster("m1")
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() bool { return c.activeMaster() == "m1" }, "m1 active")
	c.startMaster("m2")
	for _, w := range []string{"w1", "w2", "w3"} {
		c.startWorker(w, 4)
	}

	// Watch the assignments all along: a task in two directories at once is the
	// double assignment the fencing must prevent (no worker dies here, so no task
	// may move at all).
	stop := make(chan struct{})
	var watcher sync.WaitGroup
	var doubled atomic.Value
	watcher.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			a, err := c.assignments()
			if err != nil {
				continue
			}
			for id, ws := range a {
				if len(ws) > 1 {
					doubled.Store(id + " in " + ws[0] + " and " + ws[1])
				}
			}
		}
	})

	var ids []string
	takeover := make(chan time.Duration, 1)
	for i := range 200 {
		ids = append(ids, c.submit(c.runOnce("")))
		if i == 60 {
			m1.Kill()
			go func(killed time.Time) {
				if testutil.WaitFor(3*sessionTimeout, 5*time.Millisecond, func() bool { return c.activeMaster() == "m2" }) {
					takeover <- time.Since(killed)
				}
				close(takeover)
			}(time.Now())
		}
		time.Sleep(5 * time.Millisecond) // a steady stream, so the kill lands mid-dispatch
	}
	took, ok := <-takeover
	if !ok {
		t.Fatalf("m2 did not take over within %v of the kill\n%s", 3*sessionTimeout, c.logTails())
	}
	ended := c.waitAll(ids, 90*time.Second)
	close(stop)
	watcher.Wait()

	if limit := sessionTimeout + time.Second; took > limit {
		t.Errorf("m2 took over %v after the kill, want within the session timeout (%v) and a little", took, sessionTimeout)
	}
	t.Logf("m2 took over %v after m1 was killed", took.Round(time.Millisecond))
	if d := doubled.Load(); d != nil {
		t.Errorf("a task was assigned to two workers at once: %s", d)
	}
	runs := c.runs()
	for _, id := range ids {
		if tk := ended[id]; tk.State != task.Done || runs[id] != 1 {
			t.Errorf("%s: %s, ran %d times; want done, once", id, tk.State, runs[id])
		}
	}
}
