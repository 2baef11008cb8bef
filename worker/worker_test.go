package worker

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/provenance"
	"github.com/paddock/paddock/task"
)

func TestTaskDone(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.MetricsAddr = "127.0.0.1:0"
	cfg.Labels = []string{"zone=eu"}
	cfg.Addr = "10.0.0.7:7000"
	r := c.start(cfg)
	var info task.WorkerInfo
	c.session("w1")
	if !c.read(c.layout.Worker("w1"), &info) || info.Capacity != 1 || info.Labels["zone"] != "eu" ||
		info.Addr != "10.0.0.7:7000" || info.Started.IsZero() {
		t.Fatalf("registration %+v", info)
	}

	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spec := shell(`echo "$PADDOCK_TASK_ID $PADDOCK_TASK_ATTEMPT $FOO"; pwd; echo oops >&2`, "FOO=bar")
	spec.Dir = dir
	id := c.runTask("w1", spec)
	st := c.status(id)

	want := id + " 1 bar\n" + dir + "\noops\n"
	if st.State != task.Done || st.ExitCode != 0 || st.Error != "" || st.Worker != "w1" || st.Attempts != 1 {
		t.Errorf("status %+v; want done, exit code 0, by w1, 1 attempt", st)
	}
	if st.OutputTail != want {
		t.Errorf("output tail %q; want %q", st.OutputTail, want)
	}
	if st.Started.IsZero() || st.Finished.Before(st.Started) {
		t.Errorf("started %v, finished %v", st.Started, st.Finished)
	}
	if got := outputOf(t, st.OutputFile); got != want {
		t.Errorf("output file %s holds %q; want %q", st.OutputFile, got, want)
	}
	if c.exists(c.layout.Assignment("w1", id)) {
		t.Error("assignment still there")
	}
	metrics := scrape(t, r)
	for _, line := range []string{
		`paddock_worker_tasks_finished_total{state="done"} 1`,
		`paddock_worker_tasks_finished_total{state="failed"} 0`,
		`paddock_worker_capacity 1`,
		`paddock_worker_tasks_running 0`,
		`paddock_worker_task_duration_seconds_count 1`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("metrics lack %q:\n%s", line, metrics)
		}
	}
}

// scrape returns the worker's /metrics.
func scrape(t *testing.T, r *running) string {
	t.Helper()
	testutil.Eventually(t, waitLong, poll, func() bool { return r.w.Addr() != nil }, "no metrics listener")
	resp, err := http.Get("http://" + r.w.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	return string(body)
}

func TestFailureWithRetriesLeavesAttempt(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.start(c.config("w1"))
	s := c.session("w1")
	spec := shell(`echo "bad $PADDOCK_TASK_ATTEMPT"; exit 3`)
	spec.Retries = 1
	id := c.submit(spec)

	c.assign("w1", id, task.Assignment{Attempt: 1, Failures: 0, Session: s})
	var a task.Attempt
	testutil.Eventually(t, waitLong, poll, func() bool { return c.read(c.layout.Attempt(id, 1), &a) },
		"no attempt record")
	if a.N != 1 || a.Worker != "w1" || a.ExitCode != 3 || a.Error != "exit status 3" || a.OutputTail != "bad 1\n" || a.Lost {
		t.Errorf("attempt %+v", a)
	}
	if c.exists(c.layout.Assignment("w1", id)) || c.exists(c.layout.Status(id)) {
		t.Fatal("the failed run left its assignment, or ended the task")
	}

	// The master retries it: the failure is final now.
	c.assign("w1", id, task.Assignment{Attempt: 2, Failures: 1, Session: s})
	st := c.status(id)
	if st.State != task.Failed || st.ExitCode != 3 || st.Error != "exit status 3" || st.Attempts != 2 ||
		st.OutputTail != "bad 2\n" {
		t.Errorf("status %+v; want failed with exit code 3 after 2 attempts", st)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.KillGrace = 300 * time.Millisecond
	c.start(cfg)
	dir := t.TempDir()
	// Both the shell and its child ignore SIGTERM: only the SIGKILL after the grace
	// period ends them.
	spec := shell(`trap "" TERM; sleep 60 & echo $! > "$D/pid"; wait`, "D="+dir)
	spec.Timeout = task.Duration(200 * time.Millisecond)
	id := c.runTask("w1", spec)
	st := c.status(id)
	if st.State != task.Failed || st.Error != "timed out after 200ms" || st.ExitCode != -1 {
		t.Errorf("status %+v; want failed, timed out after 200ms, exit code -1", st)
	}
	if d := st.Finished.Sub(st.Started); d < 500*time.Millisecond {
		t.Errorf("ended %v after its start; want the timeout and the kill grace, 500ms", d)
	}
	waitGone(t, readPID(t, filepath.Join(dir, "pid")))
}

func TestCancelKillsRunningTask(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.start(c.config("w1"))
	dir := t.TempDir()
	id := c.runTask("w1", sleeper(dir))
	pid := readPID(t, filepath.Join(dir, "pid"))
	var a task.Assignment
	if !c.read(c.layout.Assignment("w1", id), &a) || a.Started.IsZero() {
		t.Fatalf("running task's assignment %+v not marked started", a)
	}
	if err := c.client.Cancel(ctxT(t), id); err != nil {
		t.Fatal(err)
	}
	st := c.status(id)
	if st.State != task.Cancelled || st.Error != "cancelled" || st.Attempts != 1 || st.Started.IsZero() {
		t.Errorf("status %+v; want cancelled after 1 attempt", st)
	}
	waitGone(t, pid)
}

func TestCancelBeforeStart(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.start(c.config("w1"))
	dir := t.TempDir()
	id := c.submit(shell(`touch "$D/ran"`, "D="+dir))
	if err := c.client.Cancel(ctxT(t), id); err != nil {
		t.Fatal(err)
	}
	c.assign("w1", id, task.Assignment{Session: c.session("w1")})
	st := c.status(id)
	if st.State != task.Cancelled || st.Attempts != 0 || !st.Started.IsZero() {
		t.Errorf("status %+v; want cancelled, no attempt", st)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the cancelled task ran")
	}
}

func TestAssignmentOfAnotherSessionNotRun(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.start(c.config("w1"))
	s := c.session("w1")
	dir := t.TempDir()
	stale := c.submit(shell(`touch "$D/ran"`, "D="+dir))
	c.assign("w1", stale, task.Assignment{Session: s + 1})
	// The worker lists assignments oldest first: once the later one has ended, it has
	// seen the stale one.
	st := c.status(c.runTask("w1", shell("true")))
	if st.State != task.Done {
		t.Fatalf("status %+v", st)
	}
	var a task.Assignment
	if !c.read(c.layout.Assignment("w1", stale), &a) || !a.Started.IsZero() {
		t.Errorf("stale assignment %+v was claimed", a)
	}
	if c.exists(c.layout.Status(stale)) {
		t.Error("stale assignment ended its task")
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the stale assignment ran")
	}
}

func TestCapacity(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.Capacity = 2
	c.start(cfg)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	spec := shell(`echo "start $PADDOCK_TASK_ID" >> "$D/log"
while [ ! -e "$D/release-$PADDOCK_TASK_ID" ]; do sleep 0.02; done
echo "end $PADDOCK_TASK_ID" >> "$D/log"`, "D="+dir)
	var ids []string
	for range 4 {
		ids = append(ids, c.runTask("w1", spec))
	}
	started := func() []string {
		data, _ := os.ReadFile(log)
		var out []string
		for _, line := range strings.Split(string(data), "\n") {
			if id, ok := strings.CutPrefix(line, "start "); ok {
				out = append(out, id)
			}
		}
		return out
	}
	testutil.Eventually(t, waitLong, poll, func() bool { return len(started()) >= 2 }, "two tasks never ran at once")
	// Release the started tasks one at a time; the others start as slots free.
	for released := 0; released < len(ids); released++ {
		testutil.Eventually(t, waitLong, poll, func() bool { return len(started()) > released },
			"task %d never started", released+1)
		if err := os.WriteFile(filepath.Join(dir, "release-"+started()[released]), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if st := c.status(id); st.State != task.Done {
			t.Errorf("%s: status %+v", id, st)
		}
	}
	data, _ := os.ReadFile(log)
	if most := maxConcurrent(strings.Split(strings.TrimSpace(string(data)), "\n")); most != 2 {
		t.Errorf("at most %d tasks ran at once; want 2 (capacity)\n%s", most, data)
	}
}

// maxConcurrent returns how many "start" lines were open at once at most.
func maxConcurrent(lines []string) int {
	n, most := 0, 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "start "):
			n++
		case strings.HasPrefix(l, "end "):
			n--
		}
		most = max(most, n)
	}
	return most
}

func TestCommandThatCannotStart(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.Capacity = 2
	c.start(cfg)
	tests := []struct {
		name string
		spec task.Spec
		want string
	}{
		{"not found", task.Spec{Command: "paddock-no-such-command"}, `exec: "paddock-no-such-command": executable file not found`},
		{"no such dir", task.Spec{Command: "true", Dir: "/paddock-no-such-dir"}, "dir /paddock-no-such-dir: no such file or directory"},
	}
	ids := make([]string, len(tests))
	for i, tt := range tests {
		ids[i] = c.runTask("w1", tt.spec)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := c.status(ids[i])
			if st.State != task.Failed || st.ExitCode != -1 || st.Attempts != 1 || !strings.Contains(st.Error, tt.want) {
				t.Errorf("status %+v; want failed, exit code -1, error with %q", st, tt.want)
			}
		})
	}
}

// TestStopHandsBackRunningTasks: with no stop grace, a stopping worker kills its
// running task and records it as a lost run handed back, killed by SIGTERM.
func TestStopHandsBackRunningTasks(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	r := c.start(c.config("w1"))
	dir := t.TempDir()
	id := c.runTask("w1", sleeper(dir))
	pid := readPID(t, filepath.Join(dir, "pid"))
	if err := r.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	waitGone(t, pid)
	if c.exists(c.layout.Worker("w1")) {
		t.Error("registration still there")
	}
	var lost task.Attempt
	if !c.read(c.layout.Lost(id, 1), &lost) {
		t.Fatalf("no lost run recorded: children %v", c.children(id))
	}
	if !lost.Lost || !lost.HandedBack || lost.Signal != "SIGTERM" || lost.ExitCode != -1 || lost.Worker != "w1" {
		t.Errorf("lost run %+v: want lost, handed back by w1, killed by SIGTERM, exit code -1", lost)
	}
	if c.exists(c.layout.Assignment("w1", id)) {
		t.Error("the assignment of the handed back run is still there")
	}
	if c.exists(c.layout.Status(id)) {
		t.Error("a handed back run ended the task")
	}
}

// TestStopGraceLetsTasksFinish: a stopping worker lets a running task end within its
// stop grace, records it done, and takes nothing new meanwhile.
func TestStopGraceLetsTasksFinish(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.StopGrace = 30 * time.Second
	cfg.Capacity = 2
	r := c.start(cfg)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	id := c.runTask("w1", shell(`touch "$D/started"; while [ ! -e "$D/gate" ]; do sleep 0.05; done; echo finished`, "D="+dir))
	testutil.Eventually(t, waitLong, poll, func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	}, "task never started")
	session := c.session("w1")
	stopped := make(chan error, 1)
	go func() { stopped <- r.stop() }()
	testutil.Eventually(t, waitLong, poll, func() bool {
		var info task.WorkerInfo
		return c.read(c.layout.Worker("w1"), &info) && info.State == task.WorkerStopping
	}, "the worker never said it was stopping")
	late := c.submit(shell("true"))
	c.assign("w1", late, task.Assignment{Session: session})
	testutil.Eventually(t, waitLong, poll, func() bool { return !c.exists(c.layout.Assignment("w1", late)) },
		"the assignment given while stopping was not handed back")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := c.status(id); st.State != task.Done || !strings.Contains(st.OutputTail, "finished") {
		t.Errorf("status %+v: want done with its output", st)
	}
	if c.exists(c.layout.Status(late)) {
		t.Errorf("the task given while stopping was run: children %v", c.children(late))
	}
}

// TestDrain: a drained worker finishes what runs, hands back what it is given, says
// drained; at its deadline it hands back what still runs; undrained, it works again.
func TestDrain(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.Capacity = 2
	c.start(cfg)
	session := c.session("w1")
	state := func() task.WorkerState {
		var info task.WorkerInfo
		c.read(c.layout.Worker("w1"), &info)
		return info.State
	}
	dir := t.TempDir()
	running := c.runTask("w1", sleeper(dir))
	pid := readPID(t, filepath.Join(dir, "pid"))
	if err := c.client.Drain(ctxT(t), "w1", task.DrainRequest{By: "test"}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, waitLong, poll, func() bool { return state() == task.WorkerDraining }, "never draining: %s", state())
	late := c.submit(shell("true"))
	c.assign("w1", late, task.Assignment{Session: session})
	testutil.Eventually(t, waitLong, poll, func() bool { return !c.exists(c.layout.Assignment("w1", late)) },
		"the assignment given while drained was not handed back")
	if c.exists(c.layout.Status(late)) {
		t.Error("a drained worker ran a new task")
	}
	if processGone(pid) {
		t.Error("draining killed the running task")
	}

	// A deadline hands the running task back.
	if err := c.client.Drain(ctxT(t), "w1", task.DrainRequest{Deadline: time.Now().Add(200 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	var lost task.Attempt
	testutil.Eventually(t, waitLong, poll, func() bool { return c.read(c.layout.Lost(running, 1), &lost) }, "no lost run")
	if !lost.HandedBack || lost.Signal == "" {
		t.Errorf("lost run %+v: want handed back with the signal", lost)
	}
	testutil.Eventually(t, waitLong, poll, func() bool { return state() == task.WorkerDrained }, "never drained: %s", state())

	if err := c.client.Undrain(ctxT(t), "w1"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, waitLong, poll, func() bool { return state() == task.WorkerActive }, "never active again: %s", state())
	if st := c.status(c.runTask("w1", shell("true"))); st.State != task.Done {
		t.Errorf("after undrain: %+v", st)
	}
	if err := c.client.Undrain(ctxT(t), "w1"); !errors.Is(err, task.ErrNotDrained) {
		t.Errorf("second undrain = %v, want ErrNotDrained", err)
	}
}

// TestKilledRunRecordsSignal: a task whose process is killed by a signal is recorded
// with it, not with exit code 0.
func TestKilledRunRecordsSignal(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.start(c.config("w1"))
	st := c.status(c.runTask("w1", shell(`kill -KILL $$`)))
	if st.State != task.Failed || st.Signal != "SIGKILL" || st.ExitCode != -1 {
		t.Errorf("status %+v: want failed, killed by SIGKILL, exit code -1", st)
	}
}

// TestDuplicateIDRefused: a worker whose id a live worker holds is refused, within
// the holder's session timeout and a margin, with an error naming the holder.
func TestDuplicateIDRefused(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.start(c.config("w1"))
	holder := c.session("w1")
	w, err := New(c.config("w1"), testutil.TestLogger())
	if err != nil {
		t.Fatal(err)
	}
	err = w.Run(ctxT(t))
	host, _ := os.Hostname()
	if !errors.Is(err, ErrIDTaken) || !strings.Contains(err.Error(), fmt.Sprintf("session 0x%x", holder)) ||
		!strings.Contains(err.Error(), "host "+host) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("second worker's Run = %v; want ErrIDTaken naming session 0x%x, host %s, pid %d", err, holder, host, os.Getpid())
	}
}

func TestSessionExpiryKillsTasks(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cutter := testutil.NewCutter()
	c.start(c.config("w1"), func(w *Worker) { w.dialer = cutter.Dial })
	old := c.session("w1")
	dir := t.TempDir()
	id := c.runTask("w1", sleeper(dir))
	pid := readPID(t, filepath.Join(dir, "pid"))
	var before task.Assignment
	c.read(c.layout.Assignment("w1", id), &before)

	cutter.Cut()
	waitGone(t, pid) // the worker gives up on its session after its timeout
	testutil.Eventually(t, waitLong, poll, func() bool { return !c.exists(c.layout.Worker("w1")) },
		"the servers never expired the worker's session")
	cutter.Restore()
	if s := c.session("w1"); s == old {
		t.Fatalf("registered under the expired session 0x%x", s)
	}

	// Work goes on under the new session; the old assignment is left to the master.
	if st := c.status(c.runTask("w1", shell("true"))); st.State != task.Done {
		t.Fatalf("status %+v", st)
	}
	var after task.Assignment
	if !c.read(c.layout.Assignment("w1", id), &after) || !after.Started.Equal(before.Started) {
		t.Errorf("assignment of the expired session was claimed again: %+v, before %+v", after, before)
	}
	if kids := c.children(id); len(kids) != 0 {
		t.Errorf("killed run recorded %v", kids)
	}
}

func TestRegistrationWaitsForOldSession(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	old := connect(t, c.addr, c.keys)
	if err := old.MakeDirs(ctxT(t), c.layout.Workers()); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Conn().Create(c.layout.Worker("w1"), []byte("{}"), zk.FlagEphemeral, old.ACL()); err != nil {
		t.Fatal(err)
	}
	r := c.start(c.config("w1"))
	r.waitLog(t, "waiting for the old registration to expire")
	old.Close()
	s := c.session("w1")
	if s == 0 {
		t.Fatal("no owner")
	}
	if st := c.status(c.runTask("w1", shell("true"))); st.State != task.Done {
		t.Fatalf("status %+v", st)
	}
}

func TestAssignmentTakenBackRecordsNothing(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	r := c.start(c.config("w1"))
	dir := t.TempDir()
	id := c.runTask("w1", shell(`echo $$ > "$D/pid"; while [ ! -e "$D/release" ]; do sleep 0.02; done`, "D="+dir))
	readPID(t, filepath.Join(dir, "pid"))
	if err := c.sess.Conn().Delete(c.layout.Assignment("w1", id), -1); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitLog(t, "assignment taken back: outcome not recorded")
	if kids := c.children(id); len(kids) != 0 {
		t.Errorf("run of a taken-back assignment recorded %v", kids)
	}
}

func TestBadSpecFailsForGood(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.start(c.config("w1"))
	// A spec written by hand, bypassing the client's checks.
	if err := c.sess.MakeDirs(ctxT(t), c.layout.Tasks()); err != nil {
		t.Fatal(err)
	}
	spec := []byte(`{"command":"","retries":5}`)
	p, err := c.sess.Conn().Create(c.layout.Task("task-"), spec, zk.FlagSequence, c.sess.ACL())
	if err != nil {
		t.Fatal(err)
	}
	c.sign(p, spec, coordinator.RoleSubmitter)
	id := filepath.Base(p)
	c.assign("w1", id, task.Assignment{Session: c.session("w1")})
	st := c.status(id)
	if st.State != task.Failed || !strings.Contains(st.Error, "command: empty") {
		t.Errorf("status %+v; want failed for the empty command", st)
	}
	if kids := c.children(id); !slices.Equal(kids, []string{"status"}) {
		t.Errorf("task children %v; want only the status", kids)
	}
}

func TestOutcomeRecordedAfterDisconnection(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cutter := testutil.NewCutter()
	cfg := c.config("w1")
	cfg.SessionTimeout = 2 * time.Second // the servers' most: 20 ticks
	r := c.start(cfg, func(w *Worker) { w.dialer = cutter.Dial })
	dir := t.TempDir()
	id := c.runTask("w1", shell(`echo $$ > "$D/pid"; while [ ! -e "$D/release" ]; do sleep 0.02; done; echo finished`, "D="+dir))
	readPID(t, filepath.Join(dir, "pid"))

	cutter.Cut()
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitLog(t, "connection lost while recording outcome")
	cutter.Restore()
	st := c.status(id)
	if st.State != task.Done || st.OutputTail != "finished\n" || st.Attempts != 1 {
		t.Errorf("status %+v; want done", st)
	}
	if c.exists(c.layout.Assignment("w1", id)) {
		t.Error("assignment still there")
	}
}

// TestHeartbeat: the worker's loop rewrites its registration every heartbeat_interval,
// which says the interval, so its mtime (the servers' clock) keeps advancing.
func TestHeartbeat(t *testing.T) {
	c := newCluster(t)
	cfg := c.config("hb")
	cfg.HeartbeatInterval = 100 * time.Millisecond
	c.start(cfg)
	var first int64
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool {
		_, st, err := c.sess.Conn().Get(c.layout.Worker("hb"))
		first = 0
		if err == nil {
			first = st.Mtime
		}
		return err == nil
	}, "registered")
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool {
		data, st, err := c.sess.Conn().Get(c.layout.Worker("hb"))
		var info task.WorkerInfo
		return err == nil && st.Mtime > first && json.Unmarshal(data, &info) == nil &&
			time.Duration(info.Heartbeat) == 100*time.Millisecond
	}, "the registration rewritten with its heartbeat interval")
}

// TestRunsOnlySignedTasks: a worker runs a task only if its spec's signature verifies
// against a key trusted for submitting, whatever the task node's ACL: an unsigned task,
// one signed by a worker's key or by a key the signers file does not list, one whose
// spec or signature changed after signing, one carrying another task's signature, and
// one re-created under the same name with its old data and signature all fail with the
// reason and never run; a signed task open to all runs.
func TestRunsOnlySignedTasks(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.Capacity = 8
	c.start(cfg)
	conn := c.sess.Conn()
	marker := t.TempDir()
	spec := func(name string) []byte {
		data, _ := json.Marshal(task.Spec{Command: "touch", Args: []string{filepath.Join(marker, name)}})
		return data
	}
	open := zk.WorldACL(zk.PermAll)
	// create makes a task node open to all holding data, signed by role ("" for none).
	create := func(data []byte, role string) string {
		t.Helper()
		if err := c.sess.MakeDirs(ctxT(t), c.layout.Tasks()); err != nil {
			t.Fatal(err)
		}
		p, err := conn.Create(c.layout.Task("task-"), data, zk.FlagSequence, open)
		if err != nil {
			t.Fatal(err)
		}
		if role != "" {
			c.sign(p, data, role)
		}
		return filepath.Base(p)
	}
	sigOf := func(id string) []byte {
		sig, _, err := conn.Get(c.layout.TaskSig(id))
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	forged := map[string]string{} // name -> task id
	forged["unsigned"] = create(spec("unsigned"), "")
	forged["worker-signed"] = create(spec("worker-signed"), coordinator.RoleWorker)
	stranger := create(spec("unlisted-key"), "")
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.SignNode(t, conn, c.layout.Task(stranger), task.SpecDomain, spec("unlisted-key"), provenance.NewKeySigner(priv))
	forged["unlisted-key"] = stranger
	altered := create(spec("altered-spec"), coordinator.RoleSubmitter)
	if _, err := conn.Set(c.layout.Task(altered), spec("altered-spec-changed"), -1); err != nil {
		t.Fatal(err)
	}
	forged["altered-spec"] = altered
	badSig := create(spec("altered-sig"), coordinator.RoleSubmitter)
	s := sigOf(badSig)
	s[len(s)/2] ^= 1
	if _, err := conn.Set(c.layout.TaskSig(badSig), s, -1); err != nil {
		t.Fatal(err)
	}
	forged["altered-sig"] = badSig
	donor := create(spec("replayed"), coordinator.RoleSubmitter)
	replayed := create(spec("replayed"), "")
	if _, err := conn.Create(c.layout.TaskSig(replayed), sigOf(donor), 0, open); err != nil {
		t.Fatal(err)
	}
	forged["replayed"] = replayed
	again := create(spec("recreated"), coordinator.RoleSubmitter)
	oldSig := sigOf(again)
	if err := conn.Delete(c.layout.TaskSig(again), -1); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(c.layout.Task(again), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(c.layout.Task(again), spec("recreated"), 0, open); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(c.layout.TaskSig(again), oldSig, 0, open); err != nil {
		t.Fatal(err)
	}
	forged["recreated"] = again
	good := create(spec("good"), coordinator.RoleSubmitter)

	w1 := c.session("w1")
	for _, id := range forged {
		c.assign("w1", id, task.Assignment{Session: w1})
	}
	c.assign("w1", good, task.Assignment{Session: w1})
	for name, id := range forged {
		st := c.status(id)
		if st.State != task.Failed || !strings.Contains(st.Error, "task not signed by a trusted submitter, not run") {
			t.Errorf("%s (%s): %+v; want failed, not signed by a trusted submitter", name, id, st)
		}
		if _, err := os.Stat(filepath.Join(marker, name)); err == nil {
			t.Errorf("%s ran", name)
		}
	}
	if st := c.status(good); st.State != task.Done {
		t.Errorf("a signed task open to all: %+v, want done", st)
	}
	if _, err := os.Stat(filepath.Join(marker, "good")); err != nil {
		t.Errorf("the signed task did not run: %v", err)
	}
}
