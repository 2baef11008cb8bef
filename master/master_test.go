package master

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// The tests here play the workers by hand, with plain ZooKeeper calls, to check the
// master's side of the protocol exactly; package worker and the end-to-end tests run
// real workers.

const wait = 10 * time.Second

type cluster struct {
	t      *testing.T
	addr   string
	layout task.Layout
	client *task.Client
	s      *coordinator.Session // the test's own session, signing as a submitter (the console under newRoleCluster)
	keys   *testutil.Keys
	roles  bool // role ACLs: masters run as the master role (newRoleCluster)
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	addr := testutil.StartPaddock(t, nil)
	c := &cluster{t: t, addr: addr, layout: task.DefaultLayout, keys: testutil.NewKeys(t)}
	c.s = c.session()
	c.client = task.NewClient(c.s, c.layout)
	return c
}

func (c *cluster) session() *coordinator.Session {
	c.t.Helper()
	s, err := coordinator.Connect(context.Background(), coordinator.Config{Servers: []string{c.addr}, SessionTimeout: 2 * time.Second,
		Signer: c.keys.Signer(coordinator.RoleSubmitter), Trust: c.keys.Trust()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { s.Close() })
	return s
}

// startMaster runs a master, its config changed by opts, until the test ends or stop
// is called.
func (c *cluster) startMaster(id string, opts ...func(*Config)) (m *Master, stop func()) {
	c.t.Helper()
	cfg := DefaultConfig()
	cfg.Servers, cfg.ID, cfg.SessionTimeout, cfg.Resync = []string{c.addr}, id, 2*time.Second, time.Second
	cfg.MetricsAddr = "127.0.0.1:0"
	if c.roles {
		cfg.Access = roleAccess(coordinator.RoleMaster)
	}
	cfg.SigningKey, cfg.SignersFile = c.keys.KeyFile(coordinator.RoleMaster), c.keys.SignersFile
	for _, o := range opts {
		o(&cfg)
	}
	m, err := New(cfg, testutil.TestLogger())
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				c.t.Errorf("master %s: %v", id, err)
			}
		})
	}
	c.t.Cleanup(stop)
	return m, stop
}

// fakeWorker registers a worker by hand on its own session.
type fakeWorker struct {
	c  *cluster
	id string
	s  *coordinator.Session
}

func (c *cluster) worker(id string, capacity int) *fakeWorker {
	c.t.Helper()
	return c.labeledWorker(id, capacity, nil)
}

// labeledWorker registers a worker with labels by hand on its own session.
func (c *cluster) labeledWorker(id string, capacity int, labels map[string]string) *fakeWorker {
	c.t.Helper()
	w := &fakeWorker{c: c, id: id, s: c.session()}
	ctx := context.Background()
	if err := w.s.MakeDirs(ctx, c.layout.AssignDir(id)); err != nil {
		c.t.Fatal(err)
	}
	if err := w.s.MakeDirs(ctx, c.layout.Workers()); err != nil {
		c.t.Fatal(err)
	}
	info, _ := json.Marshal(task.WorkerInfo{Capacity: capacity, Labels: labels, Started: time.Now()})
	if _, err := w.s.Conn().Create(c.layout.Worker(id), info, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		c.t.Fatal(err)
	}
	return w
}

// assignments returns the worker's assignments, by task.
func (w *fakeWorker) assignments() map[string]task.Assignment {
	w.c.t.Helper()
	conn := w.s.Conn()
	ids, _, err := conn.Children(w.c.layout.AssignDir(w.id))
	if err != nil {
		w.c.t.Fatal(err)
	}
	out := map[string]task.Assignment{}
	for _, id := range ids {
		data, _, err := conn.Get(w.c.layout.Assignment(w.id, id))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		var a task.Assignment
		if err != nil || json.Unmarshal(data, &a) != nil {
			w.c.t.Fatalf("assignment %s: %v", id, err)
		}
		out[id] = a
	}
	return out
}

// finish ends the run of an assigned task as a worker does: one multi that deletes
// the assignment and creates the status, or an attempt record when retry is set.
func (w *fakeWorker) finish(id string, exit int, retry bool) error {
	a := w.assignments()[id]
	ops := []any{&zk.DeleteRequest{Path: w.c.layout.Assignment(w.id, id), Version: -1}}
	if retry {
		data, _ := json.Marshal(task.Attempt{N: a.Attempt, Worker: w.id, ExitCode: exit, Finished: time.Now()})
		ops = append(ops, &zk.CreateRequest{Path: w.c.layout.Attempt(id, a.Attempt), Data: data, Acl: zk.WorldACL(zk.PermAll)})
	} else {
		st := task.Status{State: task.Done, ExitCode: exit, Worker: w.id, Attempts: a.Attempt, Finished: time.Now()}
		if exit != 0 {
			st.State = task.Failed
		}
		data, _ := json.Marshal(st)
		ops = append(ops, &zk.CreateRequest{Path: w.c.layout.Status(id), Data: data, Acl: zk.WorldACL(zk.PermAll)})
	}
	res, err := w.s.Conn().Multi(ops...)
	for _, r := range res {
		if r.Error != nil {
			return r.Error
		}
	}
	return err
}

func (c *cluster) submit(spec task.Spec) string {
	c.t.Helper()
	id, err := c.client.Submit(context.Background(), spec)
	if err != nil {
		c.t.Fatal(err)
	}
	return id
}

func (c *cluster) state(id string) task.State {
	c.t.Helper()
	tk, err := c.client.Get(context.Background(), id)
	if err != nil {
		c.t.Fatal(err)
	}
	return tk.State
}

func keys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestAssignsByCapacityAndPriority: assignments fill the workers' free slots, the
// highest priority first, each carrying the worker's session and the master's epoch.
func TestAssignsByCapacityAndPriority(t *testing.T) {
	c := newCluster(t)
	low := c.submit(task.Spec{Command: "true"})
	high := c.submit(task.Spec{Command: "true", Priority: 5})
	mid := c.submit(task.Spec{Command: "true", Priority: 1})
	m, _ := c.startMaster("m1")
	w := c.worker("w1", 2)
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { return len(w.assignments()) == 2 }, "two assignments")
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		text := metricsText(t, m)
		return strings.Contains(text, `paddock_master_tasks{state="running"} 2`) &&
			strings.Contains(text, `paddock_master_tasks{state="pending"} 1`) &&
			strings.Contains(text, "paddock_master_assignment_latency_seconds_count 2") &&
			strings.Contains(text, "paddock_master_leader 1") && strings.Contains(text, "paddock_master_workers 1")
	}, "metrics: 2 running, 1 pending, 2 assignment latencies, leader, 1 worker:\n%s", metricsText(t, m))
	got := w.assignments()
	if !slices.Equal(keys(got), []string{high, mid}) {
		t.Fatalf("assigned %v, want the two of highest priority %v", keys(got), []string{high, mid})
	}
	for id, a := range got {
		if a.Session != w.s.SessionID() || a.Attempt != 1 || a.MasterEpoch < 1 {
			t.Errorf("assignment of %s: %+v, want session %#x, attempt 1, an epoch", id, a, w.s.SessionID())
		}
	}
	if st := c.state(low); st != task.Pending {
		t.Fatalf("%s is %s, want pending (no free slot)", low, st)
	}
	if err := w.finish(high, 0, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w.assignments()[low]; return ok },
		"the freed slot goes to the last task")
	if st := c.state(high); st != task.Done {
		t.Fatalf("%s is %s, want done", high, st)
	}
}

// TestLostWorker: a worker whose session ends loses its assignments; they are on
// record as lost runs and go to another worker, without counting as failures.
func TestLostWorker(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	w1 := c.worker("w1", 4)
	c.submit(task.Spec{Command: "true"})
	c.submit(task.Spec{Command: "true"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { return len(w1.assignments()) == 2 }, "assigned to w1")
	w1.s.Close()
	w2 := c.worker("w2", 4)
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { return len(w2.assignments()) == 2 }, "moved to w2")
	for id, a := range w2.assignments() {
		if a.Attempt != 2 || a.Failures != 0 {
			t.Errorf("%s: attempt %d, failures %d; want attempt 2, no failure", id, a.Attempt, a.Failures)
		}
		tk, err := c.client.Get(context.Background(), id)
		if err != nil || len(tk.History) != 1 || !tk.History[0].Lost || tk.History[0].Worker != "w1" {
			t.Errorf("%s: history %+v, %v; want one lost run on w1", id, tk.History, err)
		}
	}
}

// TestRetryAfterDelay: a failed run with retries left is assigned again after the
// retry delay, as attempt 2 with one failure.
func TestRetryAfterDelay(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	w := c.worker("w1", 1)
	id := c.submit(task.Spec{Command: "false", Retries: 1, RetryDelay: task.Duration(300 * time.Millisecond)})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { return len(w.assignments()) == 1 }, "assigned")
	failed := time.Now()
	if err := w.finish(id, 3, true); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, 5*time.Millisecond, func() bool { return len(w.assignments()) == 1 }, "assigned again")
	if d := time.Since(failed); d < 250*time.Millisecond {
		t.Errorf("assigned again after %v, before the retry delay of 300ms", d)
	}
	if a := w.assignments()[id]; a.Attempt != 2 || a.Failures != 1 {
		t.Errorf("second assignment %+v, want attempt 2 with 1 failure", a)
	}
}

// TestCancelPending: a pending task that is cancelled ends at once, by the master,
// and is never assigned.
func TestCancelPending(t *testing.T) {
	c := newCluster(t)
	id := c.submit(task.Spec{Command: "true"})
	if err := c.client.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	c.startMaster("m1")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tk, err := c.client.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != task.Cancelled || tk.Status.Attempts != 0 {
		t.Fatalf("%s: %s after %d runs, want cancelled before any", id, tk.State, tk.Status.Attempts)
	}
	if err := c.client.Cancel(context.Background(), id); !errors.Is(err, task.ErrEnded) {
		t.Fatalf("cancel of an ended task: %v, want ErrEnded", err)
	}
}

// TestInvalidSpecFails: a task node someone wrote by hand with a bad spec is failed
// with the reason, not retried for ever.
func TestInvalidSpecFails(t *testing.T) {
	c := newCluster(t)
	if err := c.s.MakeDirs(context.Background(), c.layout.Tasks()); err != nil {
		t.Fatal(err)
	}
	p, err := c.s.Conn().Create(c.layout.Task("task-"), []byte(`{"command":"","retries":-1}`), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	c.startMaster("m1")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tk, err := c.client.Wait(ctx, p[len("/tasks/"):])
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != task.Failed || tk.Status.Error == "" {
		t.Fatalf("state %s, error %q; want failed with the reason", tk.State, tk.Status.Error)
	}
}

// TestFencingAndFailover: a change made with an old epoch is refused; the active
// master takes its epoch back while it still holds /master; when it stops, the backup
// takes over and goes on assigning.
func TestFencingAndFailover(t *testing.T) {
	c := newCluster(t)
	_, stop1 := c.startMaster("m1")
	var info task.MasterInfo
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		data, _, err := c.s.Conn().Get(c.layout.Master())
		return err == nil && json.Unmarshal(data, &info) == nil && info.ID == "m1" && info.Epoch > 0
	}, "m1 active")
	c.startMaster("m2")
	// Another master's bump: m1's next change fails its check, and m1 takes a new epoch.
	if _, err := c.s.Conn().Set(c.layout.Assign(), nil, -1); err != nil {
		t.Fatal(err)
	}
	w := c.worker("w1", 10)
	c.submit(task.Spec{Command: "true"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { return len(w.assignments()) == 1 }, "assigned by m1 after re-taking its epoch")
	for _, a := range w.assignments() {
		if a.MasterEpoch <= info.Epoch+1 {
			t.Fatalf("assignment epoch %d, want past %d (m1's first) + 1 (the foreign bump)", a.MasterEpoch, info.Epoch)
		}
	}
	stop1()
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool {
		data, _, err := c.s.Conn().Get(c.layout.Master())
		return err == nil && json.Unmarshal(data, &info) == nil && info.ID == "m2"
	}, "m2 takes over")
	c.submit(task.Spec{Command: "true"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { return len(w.assignments()) == 2 }, "m2 assigns")
}

func metricsText(t *testing.T, m *Master) string {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSkipsDrainedAndStoppingWorkers: the master gives nothing to a worker with a drain
// request in /drain, nor to one whose registration says it is stopping; undrained, or
// active again, it gets work.
func TestSkipsDrainedAndStoppingWorkers(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	w1 := c.worker("w1", 4)
	if err := c.client.Drain(context.Background(), "w1", task.DrainRequest{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the master sees the drain (the test can pass too early, never fail wrongly)
	id := c.submit(task.Spec{Command: "true"})
	time.Sleep(500 * time.Millisecond)
	if n := len(w1.assignments()); n != 0 {
		t.Fatalf("a drained worker got %d assignments", n)
	}
	if err := c.client.Undrain(context.Background(), "w1"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w1.assignments()[id]; return ok }, "assigned after undrain")
	if err := w1.finish(id, 0, false); err != nil {
		t.Fatal(err)
	}

	info, _ := json.Marshal(task.WorkerInfo{Capacity: 4, State: task.WorkerStopping})
	if _, err := w1.s.Conn().Set(c.layout.Worker("w1"), info, -1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	next := c.submit(task.Spec{Command: "true"})
	time.Sleep(500 * time.Millisecond)
	if _, ok := w1.assignments()[next]; ok {
		t.Fatal("a stopping worker got an assignment")
	}
	info, _ = json.Marshal(task.WorkerInfo{Capacity: 4, State: task.WorkerActive})
	if _, err := w1.s.Conn().Set(c.layout.Worker("w1"), info, -1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := w1.assignments()[next]; return ok },
		"assigned once active again")
}

// TestSkipsStaleWorkers: a worker whose heartbeat stopped (its registration unwritten
// past the bound, by the servers' clock) gets nothing new; one that beats does, and
// the stale one gets work again once it beats. task.Client.Workers says stale too.
func TestSkipsStaleWorkers(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	beat := func(w *fakeWorker, capacity int) {
		t.Helper()
		info, _ := json.Marshal(task.WorkerInfo{Capacity: capacity, Heartbeat: task.Duration(time.Second)})
		if _, err := w.s.Conn().Set(c.layout.Worker(w.id), info, -1); err != nil {
			t.Fatal(err)
		}
	}
	stuck, live := c.worker("stuck", 4), c.worker("live", 1)
	beat(stuck, 4)
	bound := task.WorkerInfo{Heartbeat: task.Duration(time.Second)}.StaleAfter()
	deadline := time.Now().Add(bound + time.Second)
	for time.Now().Before(deadline) { // live beats, stuck does not
		beat(live, 1)
		time.Sleep(500 * time.Millisecond)
	}
	views, err := c.client.Workers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stale := map[string]bool{}
	for _, v := range views {
		stale[v.ID] = v.Stale
	}
	if !stale["stuck"] || stale["live"] {
		t.Fatalf("stale by Workers: %v, want stuck only", stale)
	}
	first := c.submit(task.Spec{Command: "true"})
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := live.assignments()[first]; return ok }, "assigned to the live worker")
	second := c.submit(task.Spec{Command: "true"}) // live is full: only stuck has room
	time.Sleep(500 * time.Millisecond)
	if n := len(stuck.assignments()); n != 0 {
		t.Fatalf("a stale worker got %d assignments", n)
	}
	beat(stuck, 4)
	testutil.Eventually(t, wait, 10*time.Millisecond, func() bool { _, ok := stuck.assignments()[second]; return ok },
		"assigned once the stale worker beats again")
}
