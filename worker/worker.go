package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/backoff"
	"github.com/paddock/paddock/internal/metricsserver"
	"github.com/paddock/paddock/task"
)

// Worker runs the tasks the master assigns to it. Make one with New and call Run once.
type Worker struct {
	cfg     Config // immutable after New
	labels  map[string]string
	layout  task.Layout
	outDir  string // absolute
	logger  *slog.Logger
	metrics *metrics
	key     string  // workerKey: marks this worker's runs across its lives
	runner  *runner // starts tasks and ends them
	// dialer, if set, opens the session's connections: tests cut them with it.
	dialer zk.Dialer
	// rand is the source of the backoffs' jitter, used by the loop's goroutine only; nil
	// is math/rand/v2's global one (tests seed their own).
	rand *rand.Rand

	ran atomic.Bool // Run was called

	mu          sync.Mutex
	metricsAddr net.Addr // guarded by mu; set once Run listens
}

// New checks cfg and returns a Worker; nothing is started before Run. A nil logger
// discards the logs.
func New(cfg Config, logger *slog.Logger) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	labels := parseLabels(cfg.Labels, nil) // Validate checked them
	layout, _ := task.NewLayout(cfg.Root)
	outDir, err := cfg.outputDir()
	if err != nil {
		return nil, err
	}
	cfg.Servers = append([]string(nil), cfg.Servers...)
	cfg.Labels = append([]string(nil), cfg.Labels...)
	w := &Worker{
		cfg:     cfg,
		labels:  labels,
		layout:  layout,
		outDir:  outDir,
		logger:  logger.With("worker", cfg.ID),
		metrics: newMetrics(cfg.Capacity),
		key:     workerKey(cfg.ID, outDir),
	}
	if w.runner, err = newRunner(cfg, w.key, newProcMetrics(w.metrics.reg), w.logger); err != nil {
		return nil, err
	}
	return w, nil
}

// Addr returns the address /metrics is served on, once Run has opened it; nil before,
// and when MetricsAddr is empty. It is safe to call at any time.
func (w *Worker) Addr() net.Addr {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.metricsAddr
}

// Run registers the worker and runs the tasks assigned to it until ctx ends. It then
// stops gracefully: it says "stopping" in its registration (the master assigns it
// nothing more), hands back assignments it has not started, and lets its running tasks
// go on for StopGrace; those still running then have their processes ended
// (SIGTERM, then SIGKILL after KillGrace) and are handed back as lost runs, which do not
// count against their retries. It then removes /workers/<id> and closes the session. A
// drain request in /drain/<id> does the same without stopping (and with its own
// deadline, if any). Run returns nil on such a stop, and an error if the worker cannot
// start (the metrics address is taken, the output directory cannot be made, the servers
// refuse the registration, another live worker holds the id). It may be called once.
func (w *Worker) Run(ctx context.Context) error {
	if w.ran.Swap(true) {
		return errors.New("worker: Run called twice")
	}
	if err := os.MkdirAll(w.outDir, 0o755); err != nil {
		return fmt.Errorf("worker: output_dir = %s: %w", w.outDir, err)
	}
	if err := w.runner.setUp(); err != nil {
		return err
	}
	if w.cfg.MetricsAddr != "" {
		ms, err := metricsserver.Listen(w.cfg.MetricsAddr, w.metrics.reg)
		if err != nil {
			return fmt.Errorf("worker: metrics_addr = %s: %w", w.cfg.MetricsAddr, err)
		}
		ms.Serve(w.logger)
		defer ms.Close()
		w.mu.Lock()
		w.metricsAddr = ms.Addr()
		w.mu.Unlock()
	}
	sess, err := w.connect(ctx)
	if err != nil || sess == nil {
		return err
	}
	defer sess.Close()
	reg, info, err := w.register(ctx, sess)
	if err != nil || reg == nil {
		return err
	}
	w.runner.sweep() // what an earlier life left dies before anything is claimed
	l := newLoop(w, sess, reg, info)
	err = l.run(ctx)
	l.endLife()
	l.stopJobs()
	if rerr := reg.Remove(context.Background()); rerr != nil {
		w.logger.Warn("cannot remove registration; it goes with the session", "err", rerr)
	}
	w.logger.Info("worker stopped")
	return err
}

// connect opens the session; nil and no error if ctx ends first.
func (w *Worker) connect(ctx context.Context) (*coordinator.Session, error) {
	cc, err := w.cfg.Access.Config(w.cfg.Servers, w.cfg.SessionTimeout, w.logger, w.layout.ACLRules())
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	cc.Dialer = w.dialer
	if cc.Trust.Empty() {
		return nil, fmt.Errorf("worker: signers_file = %s: it lists no key, and no tls_ca is given: no task could run", w.cfg.SignersFile)
	}
	if cc.Policy == nil {
		w.logger.Warn("no roles configured: the nodes this worker creates are open to all clients; set roles (or roles_file) and auth (docs/security.md)")
	}
	sess, err := coordinator.Connect(ctx, cc)
	if err != nil {
		if ctx.Err() != nil {
			w.logger.Warn("stopped before connecting", "err", err)
			return nil, nil
		}
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.logger.Info("connected", "session_id", hexID(sess.SessionID()))
	return sess, nil
}

// registerRetry is the pause between attempts to register while /workers/<id> belongs
// to another session.
const registerRetry = time.Second

// ErrIDTaken says another live worker holds the id.
var ErrIDTaken = errors.New("worker: id in use by a live worker")

// register makes the worker's directories and registers it in /workers/<id>, kept
// across new sessions. If another session holds the node it waits for it to go, for
// at most the holder's session timeout (and a margin): a holder that died without
// closing its session (killed, its machine lost) is gone by then; one still there is
// alive, and register fails with ErrIDTaken naming it. It returns nil and no error if
// ctx ends first.
func (w *Worker) register(ctx context.Context, sess *coordinator.Session) (*coordinator.Ephemeral, task.WorkerInfo, error) {
	host, _ := os.Hostname()
	info := task.WorkerInfo{
		Addr: w.cfg.Addr, Capacity: w.cfg.Capacity, Labels: w.labels, Started: time.Now().UTC(),
		State: task.WorkerActive, Host: host, PID: os.Getpid(), SessionTimeout: task.Duration(w.cfg.SessionTimeout),
		Heartbeat: task.Duration(w.cfg.HeartbeatInterval),
	}
	for _, dir := range []string{w.layout.AssignDir(w.cfg.ID), w.layout.Workers()} {
		if err := sess.MakeDirs(ctx, dir); err != nil {
			if ctx.Err() != nil {
				return nil, info, nil
			}
			return nil, info, fmt.Errorf("worker: %w", err)
		}
	}
	data, err := json.Marshal(info)
	if err != nil {
		return nil, info, fmt.Errorf("worker: registration: %w", err)
	}
	path := w.layout.Worker(w.cfg.ID)
	var h holder
	for {
		reg, err := sess.KeepEphemeral(ctx, path, data)
		if err == nil {
			w.logger.Info("registered", "path", path, "session_id", hexID(sess.SessionID()))
			return reg, info, nil
		}
		if !errors.Is(err, coordinator.ErrNodeTaken) {
			if err := sess.WaitToRetry(ctx, err); err != nil {
				if ctx.Err() != nil {
					return nil, info, nil
				}
				return nil, info, fmt.Errorf("worker: register %s: %w", path, err)
			}
			continue
		}
		if err := h.observe(sess.Conn(), path, w.cfg.SessionTimeout); err != nil {
			return nil, info, err
		}
		if h.first {
			w.logger.Warn("waiting for the old registration to expire", "path", path, "holder", h.String(), "wait_at_most", h.limit)
		}
		if !backoff.Sleep(ctx, registerRetry) {
			return nil, info, nil
		}
	}
}

// holder follows the session that holds a worker's registration while register
// waits for it to go.
type holder struct {
	session int64
	info    task.WorkerInfo
	since   time.Time     // when this session was first seen holding it
	limit   time.Duration // how long it may hold it before it is taken as alive
	first   bool          // the last observe saw this session for the first time
}

// observe reads the registration; it returns ErrIDTaken, naming the holder, once one
// session has held it longer than its session timeout (from its data; own if it gives
// none) and a margin.
func (h *holder) observe(conn *zk.Conn, path string, own time.Duration) error {
	data, st, err := conn.Get(path)
	h.first = false
	if err != nil {
		return nil // gone meanwhile, or unreadable for now: try again
	}
	if st.EphemeralOwner != h.session || h.since.IsZero() {
		h.session, h.since, h.first = st.EphemeralOwner, time.Now(), true
		h.info = task.WorkerInfo{}
		json.Unmarshal(data, &h.info) // a registration of an unknown form names less
		h.limit = time.Duration(h.info.SessionTimeout)
		if h.limit <= 0 || h.limit > 10*time.Minute {
			h.limit = own
		}
		h.limit += h.limit/2 + 2*registerRetry
	}
	if time.Since(h.since) > h.limit {
		return fmt.Errorf("%w: %s is held by %s for longer than its session timeout; stop that worker or start this one with another id",
			ErrIDTaken, path, h)
	}
	return nil
}

func (h *holder) String() string {
	s := "session " + hexID(h.session)
	if h.info.Host != "" {
		s += fmt.Sprintf(", host %s", h.info.Host)
	}
	if h.info.PID != 0 {
		s += fmt.Sprintf(", pid %d", h.info.PID)
	}
	if !h.info.Started.IsZero() {
		s += ", started " + h.info.Started.Format(time.RFC3339)
	}
	return s
}

func hexID(id int64) string { return fmt.Sprintf("0x%x", id) }
