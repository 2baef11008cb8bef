package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/task"
)

// The server ticks every 100 ms and sessions ask for 1 s, so an expiry takes about a
// second (as in the coordinator tests).
const (
	testTick           = 100 * time.Millisecond
	testSessionTimeout = time.Second
	waitLong           = 15 * time.Second
	poll               = 10 * time.Millisecond
)

// cluster is a paddock server and a session on it through which the test plays the
// master and the client.
type cluster struct {
	t      *testing.T
	addr   string
	sess   *coordinator.Session // signs as a submitter
	client *task.Client
	layout task.Layout
	keys   *testutil.Keys
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	addr := testutil.StartPaddock(t, func(c *server.Config) { c.TickTime = testTick })
	keys := testutil.NewKeys(t)
	sess := connect(t, addr, keys)
	return &cluster{t: t, addr: addr, sess: sess, client: task.NewClient(sess, task.DefaultLayout), layout: task.DefaultLayout, keys: keys}
}

// connect opens a session to addr, signing with the submitter's key of keys, closed
// when the test ends.
func connect(t *testing.T, addr string, keys *testutil.Keys) *coordinator.Session {
	t.Helper()
	sess, err := coordinator.Connect(ctxT(t), coordinator.Config{
		Servers: []string{addr}, SessionTimeout: testSessionTimeout, Logger: testutil.TestLogger(),
		Signer: keys.Signer(coordinator.RoleSubmitter), Trust: keys.Trust(),
	})
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// config returns a worker config for the cluster: capacity 1, a short kill grace, no
// stop grace, output in a temp dir.
func (c *cluster) config(id string) Config {
	cfg := DefaultConfig()
	cfg.Servers = []string{c.addr}
	cfg.SessionTimeout = testSessionTimeout
	cfg.ID = id
	cfg.Capacity = 1
	cfg.OutputDir = c.t.TempDir()
	cfg.KillGrace = 200 * time.Millisecond
	cfg.StopGrace = 0 // a stop hands running tasks back at once
	cfg.SignersFile = c.keys.SignersFile
	cfg.AllowRoot = true // tasks write into the test's directories; run_as has its own tests
	return cfg
}

// sign signs the task node at p, holding data, with role's key, as its author would.
func (c *cluster) sign(p string, data []byte, role string) {
	c.t.Helper()
	testutil.SignNode(c.t, c.sess.Conn(), p, task.SpecDomain, data, c.keys.Signer(role))
}

// running is a worker under test.
type running struct {
	w      *Worker
	logs   *logRecorder
	cancel context.CancelFunc
	done   chan error // receives Run's result
}

// start runs a worker with cfg (adjusted by opts before Run) and stops it when the test
// ends.
func (c *cluster) start(cfg Config, opts ...func(*Worker)) *running {
	c.t.Helper()
	logs := newLogRecorder()
	w, err := New(cfg, slog.New(logs))
	if err != nil {
		c.t.Fatalf("New: %v", err)
	}
	for _, o := range opts {
		o(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{w: w, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- w.Run(ctx) }()
	c.t.Cleanup(func() {
		if err := r.stop(); err != nil && !errors.Is(err, errAlreadyStopped) {
			c.t.Errorf("worker %s: Run: %v", cfg.ID, err)
		}
	})
	return r
}

var errAlreadyStopped = errors.New("already stopped")

// stop cancels Run's context and returns what Run returned.
func (r *running) stop() error {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if !ok {
			return errAlreadyStopped
		}
		close(r.done)
		return err
	case <-time.After(waitLong):
		return errors.New("Run did not return after its context ended")
	}
}

// session waits for worker id's registration and returns the session that owns it.
func (c *cluster) session(id string) int64 {
	c.t.Helper()
	var owner int64
	testutil.Eventually(c.t, waitLong, poll, func() bool {
		_, stat, err := c.sess.Conn().Get(c.layout.Worker(id))
		if err != nil {
			return false
		}
		owner = stat.EphemeralOwner
		return true
	}, "worker %s never registered", id)
	return owner
}

// submit creates a task and returns its id.
func (c *cluster) submit(spec task.Spec) string {
	c.t.Helper()
	id, err := c.client.Submit(ctxT(c.t), spec)
	if err != nil {
		c.t.Fatalf("submit: %v", err)
	}
	return id
}

// assign gives task id to worker as the master would.
func (c *cluster) assign(worker, id string, a task.Assignment) {
	c.t.Helper()
	if a.Attempt == 0 {
		a.Attempt = 1
	}
	a.Assigned = time.Now().UTC()
	data, _ := json.Marshal(a)
	if _, err := c.sess.Conn().Create(c.layout.Assignment(worker, id), data, 0, c.sess.ACL()); err != nil {
		c.t.Fatalf("assign %s to %s: %v", id, worker, err)
	}
}

// runTask submits spec and assigns it to worker's current session, as attempt 1.
func (c *cluster) runTask(worker string, spec task.Spec) string {
	c.t.Helper()
	id := c.submit(spec)
	c.assign(worker, id, task.Assignment{Session: c.session(worker)})
	return id
}

// status waits for task id's status.
func (c *cluster) status(id string) task.Status {
	c.t.Helper()
	var st task.Status
	testutil.Eventually(c.t, waitLong, poll, func() bool { return c.read(c.layout.Status(id), &st) },
		"task %s never ended", id)
	return st
}

// read reads the JSON node at p into v; false if there is none.
func (c *cluster) read(p string, v any) bool {
	c.t.Helper()
	data, _, err := c.sess.Conn().Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return false
	}
	if err != nil {
		c.t.Fatalf("read %s: %v", p, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		c.t.Fatalf("%s: %v", p, err)
	}
	return true
}

func (c *cluster) exists(p string) bool {
	c.t.Helper()
	ok, _, err := c.sess.Conn().Exists(p)
	if err != nil {
		c.t.Fatalf("exists %s: %v", p, err)
	}
	return ok
}

// children lists the children of task id's node.
func (c *cluster) children(id string) []string {
	c.t.Helper()
	names, _, err := c.sess.Conn().Children(c.layout.Task(id))
	if err != nil {
		c.t.Fatalf("children of %s: %v", id, err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return n == "sig" }) // its author's, not a run's
}

// shell is a spec running script with sh -c, with env.
func shell(script string, env ...string) task.Spec {
	spec := task.Spec{Command: "sh", Args: []string{"-c", script}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		spec.Env[k] = v
	}
	return spec
}

// readPID waits for a task's script to write a process id into path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testutil.Eventually(t, waitLong, poll, func() bool {
		data, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, "no pid in %s", path)
	return pid
}

// waitGone waits for process pid to be gone.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	testutil.Eventually(t, waitLong, poll, func() bool { return processGone(pid) },
		"process %d still runs", pid)
}

// sleeper is a script that starts a long sleep in the background, writes its pid to
// dir/pid and waits for it.
func sleeper(dir string) task.Spec {
	return shell(`sleep 60 & echo $! > "$D/pid"; wait`, "D="+dir)
}

// logRecorder is a slog handler that remembers every message, and passes the records
// on to testutil.TestLogger's handler.
type logRecorder struct {
	shared *recorded
	next   slog.Handler
}

type recorded struct {
	mu   sync.Mutex
	msgs []string
}

func newLogRecorder() *logRecorder {
	return &logRecorder{shared: &recorded{}, next: testutil.TestLogger().Handler()}
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(ctx context.Context, r slog.Record) error {
	h.shared.mu.Lock()
	h.shared.msgs = append(h.shared.msgs, r.Message)
	h.shared.mu.Unlock()
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorder{shared: h.shared, next: h.next.WithAttrs(as)}
}

func (h *logRecorder) WithGroup(name string) slog.Handler {
	return &logRecorder{shared: h.shared, next: h.next.WithGroup(name)}
}

func (h *logRecorder) has(msg string) bool {
	h.shared.mu.Lock()
	defer h.shared.mu.Unlock()
	return slices.Contains(h.shared.msgs, msg)
}

// waitLog waits for the worker to log msg.
func (r *running) waitLog(t *testing.T, msg string) {
	t.Helper()
	testutil.Eventually(t, waitLong, poll, func() bool { return r.logs.has(msg) }, "worker never logged %q", msg)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// outputOf reads a run's output file.
func outputOf(t *testing.T, path string) string {
	t.Helper()
	if !filepath.IsAbs(path) {
		t.Errorf("output file %q is not absolute", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("output file: %v", err)
	}
	return string(data)
}
