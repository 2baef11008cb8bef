package taskcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/task"
)

// paddock is the binary under test: masters and workers run as its processes, so
// that they can be killed with SIGKILL.
var paddock testutil.Binary

func TestMain(m *testing.M) { paddock.Main(m) }

// sessionTimeout is the masters' and workers' session timeout: how long a killed one
// takes to be noticed.
const sessionTimeout = 2 * time.Second

// cluster is a coordination server (in the test process), and masters and workers as
// child processes.
type cluster struct {
	t       testing.TB
	addr    string
	dir     string
	s       *coordinator.Session
	client  *task.Client
	layout  task.Layout
	runLog  string // tasks made by runOnce append their id here
	masters map[string]*testutil.Child
	workers map[string]*testutil.Child
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	c := &cluster{
		t:       t,
		addr:    testutil.StartPaddock(t, func(cfg *server.Config) { cfg.TickTime = 100 * time.Millisecond }),
		dir:     t.TempDir(),
		layout:  task.DefaultLayout,
		masters: map[string]*testutil.Child{},
		workers: map[string]*testutil.Child{},
	}
	c.runLog = filepath.Join(c.dir, "runs.log")
	s, err := coordinator.Connect(context.Background(), coordinator.Config{Servers: []string{c.addr}, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c.s, c.client = s, task.NewClient(s, c.layout)
	t.Cleanup(c.checkLogs)
	return c
}

func (c *cluster) start(name string, args ...string) *testutil.Child {
	c.t.Helper()
	args = append(args, "--zk", c.addr, "--session-timeout", sessionTimeout.String(), "--log-level", "debug")
	p, err := testutil.StartChild(c.t, filepath.Join(c.dir, name+".log"), nil, paddock.Path(c.t), args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// startMaster starts master id; extra are more flags.
func (c *cluster) startMaster(id string, extra ...string) *testutil.Child {
	c.t.Helper()
	p := c.start("master-"+id, append([]string{"master", "--id", id}, extra...)...)
	c.masters[id] = p
	return p
}

// startWorker starts worker id; extra are more flags.
func (c *cluster) startWorker(id string, capacity int, extra ...string) *testutil.Child {
	c.t.Helper()
	p := c.start("worker-"+id, append([]string{"worker", "--id", id, "--capacity", strconv.Itoa(capacity),
		"--output-dir", filepath.Join(c.dir, "output-"+id), "--kill-grace", "1s"}, extra...)...)
	c.workers[id] = p
	return p
}

// checkLogs fails the test on a race report, a panic or an error-level record in any
// child's log.
func (c *cluster) checkLogs() {
	for name, p := range c.all() {
		problems, err := p.LogProblems()
		if err != nil {
			c.t.Errorf("%s: %v", name, err)
		}
		if len(problems) > 0 {
			c.t.Errorf("%s's log:\n%s", name, strings.Join(problems, "\n"))
		}
	}
}

func (c *cluster) all() map[string]*testutil.Child {
	out := map[string]*testutil.Child{}
	for id, p := range c.masters {
		out["master "+id] = p
	}
	for id, p := range c.workers {
		out["worker "+id] = p
	}
	return out
}

// runOnce is a task that records each run in the run log.
func (c *cluster) runOnce(extra string) task.Spec {
	return task.Spec{Command: "sh", Args: []string{"-c", `echo "$PADDOCK_TASK_ID" >> "$RUN_LOG"` + extra},
		Env: map[string]string{"RUN_LOG": c.runLog}}
}

func (c *cluster) submit(spec task.Spec) string {
	c.t.Helper()
	id, err := c.client.Submit(context.Background(), spec)
	if err != nil {
		c.t.Fatal(err)
	}
	return id
}

// waitAll waits for every task to end and returns them.
func (c *cluster) waitAll(ids []string, timeout time.Duration) map[string]*task.Task {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out := make(map[string]*task.Task, len(ids))
	for _, id := range ids {
		tk, err := c.client.Wait(ctx, id)
		if err != nil {
			c.t.Fatalf("waiting for %s: %v (%d of %d ended)\n%s", id, err, len(out), len(ids), c.logTails())
		}
		out[id] = tk
	}
	return out
}

func (c *cluster) logTails() string {
	var b strings.Builder
	for name, p := range c.all() {
		fmt.Fprintf(&b, "--- %s:\n%s\n", name, p.LogTail(15))
	}
	return b.String()
}

// runs counts the runs of each task in the run log.
func (c *cluster) runs() map[string]int {
	c.t.Helper()
	b, err := os.ReadFile(c.runLog)
	if err != nil && !os.IsNotExist(err) {
		c.t.Fatal(err)
	}
	out := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		if line != "" {
			out[line]++
		}
	}
	return out
}

// activeMaster returns the id in /master, or "".
func (c *cluster) activeMaster() string {
	data, _, err := c.s.Conn().Get(c.layout.Master())
	var info task.MasterInfo
	if err != nil || json.Unmarshal(data, &info) != nil || info.Epoch == 0 {
		return ""
	}
	return info.ID
}

// assignments maps each assigned task to the workers whose directories hold it.
func (c *cluster) assignments() (map[string][]string, error) {
	conn := c.s.Conn()
	dirs, _, err := conn.Children(c.layout.Assign())
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, w := range dirs {
		ids, _, err := conn.Children(c.layout.AssignDir(w))
		if err != nil && err != zk.ErrNoNode {
			return nil, err
		}
		for _, id := range ids {
			out[id] = append(out[id], w)
		}
	}
	return out, nil
}
