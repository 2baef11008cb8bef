package taskcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// TestShardedJob: a job of six items, fired every two seconds, runs each item as a task
// with its parameter, spread over the workers three and three; a third worker that
// joins takes two of each run, and when one is killed its items go to the two left.
// Every item of every run ends done.
func TestShardedJob(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	w1 := c.startWorker("w1", 4)
	c.startWorker("w2", 4)
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		ws, err := c.client.Workers(context.Background())
		return err == nil && len(ws) == 2
	}, "two workers")

	spec := task.Spec{Command: "sh", Args: []string{"-c",
		`echo "item $PADDOCK_SHARD_ITEM of $PADDOCK_SHARD_TOTAL: $PADDOCK_SHARD_PARAM"; echo "$PADDOCK_TASK_ID" >> "$RUN_LOG"`},
		Env: map[string]string{"RUN_LOG": c.runLog}}
	job := task.Job{Name: "shards", Task: spec, Schedule: "*/2 * * * * *", Concurrency: task.ConcurrencySkip,
		Shards: 6, ShardParams: []string{"p0", "p1", "p2", "p3", "p4", "p5"}, Enabled: true, EnabledSince: time.Now().UTC()}
	if err := c.client.CreateJob(context.Background(), job); err != nil {
		t.Fatal(err)
	}

	// spread waits for a run fired after since whose items all ended done, and returns how
	// many each worker ran.
	spread := func(since time.Time, what string) map[string]int {
		t.Helper()
		var counts map[string]int
		testutil.Eventually(t, 60*time.Second, 100*time.Millisecond, func() bool {
			for _, f := range c.jobFires(job.Name) {
				if f.Outcome != task.FireStarted || f.Scheduled.Before(since) || len(f.Tasks) != 6 {
					continue
				}
				counts = c.itemsByWorker(t, f.Tasks)
				if counts != nil {
					return true
				}
			}
			return false
		}, what)
		return counts
	}
	check := func(counts map[string]int, want map[string]int, what string) {
		t.Helper()
		for w, n := range want {
			if counts[w] != n {
				t.Fatalf("%s: items per worker %v, want %v", what, counts, want)
			}
		}
	}
	check(spread(time.Now(), "a run with two workers"), map[string]int{"w1": 3, "w2": 3}, "two workers")

	c.startWorker("w3", 4)
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		ws, err := c.client.Workers(context.Background())
		return err == nil && len(ws) == 3
	}, "three workers")
	check(spread(time.Now().Add(time.Second), "a run with three workers"), map[string]int{"w1": 2, "w2": 2, "w3": 2}, "three workers")

	w1.Kill()
	killed := time.Now()
	check(spread(killed.Add(sessionTimeout+time.Second), "a run after w1's kill"), map[string]int{"w2": 3, "w3": 3}, "w1 killed")

	// Every run fired so far ends done, items of runs w1 held included (run again
	// elsewhere as lost runs).
	for _, f := range c.jobFires(job.Name) {
		if f.Outcome != task.FireStarted {
			continue
		}
		ended := c.waitAll(f.Tasks, 30*time.Second)
		items := map[int]bool{}
		for id, tk := range ended {
			sh := tk.Spec.Shard
			if tk.State != task.Done || sh == nil || sh.Total != 6 ||
				!strings.Contains(tk.Status.OutputTail, fmt.Sprintf("item %d of 6: p%d", sh.Item, sh.Item)) {
				t.Errorf("run %v: %s: %s, shard %+v, output %q", f.Scheduled, id, tk.State, sh, tk.Status.OutputTail)
				continue
			}
			items[sh.Item] = true
		}
		if len(items) != 6 {
			t.Errorf("run %v ran items %v, want all six", f.Scheduled, items)
		}
	}
}

// jobFires reads a job's fire records, oldest first.
func (c *cluster) jobFires(job string) []task.Fire {
	conn := c.s.Conn()
	names, _, err := conn.Children(c.layout.Fires(job))
	if err != nil {
		return nil
	}
	slices.Sort(names)
	var out []task.Fire
	for _, n := range names {
		data, _, err := conn.Get(c.layout.Fire(job, n))
		var f task.Fire
		if err == nil && json.Unmarshal(data, &f) == nil {
			out = append(out, f)
		}
	}
	return out
}

// itemsByWorker counts, by the worker that ran them, the tasks of ids, if all ended
// done; nil otherwise.
func (c *cluster) itemsByWorker(t *testing.T, ids []string) map[string]int {
	counts := map[string]int{}
	for _, id := range ids {
		tk, err := c.client.Get(context.Background(), id)
		if err != nil || tk.State != task.Done {
			return nil
		}
		counts[tk.Status.Worker]++
	}
	return counts
}
