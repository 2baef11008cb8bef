package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
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
	// dialer, if set, opens the session's connections: tests cut them with it.
	dialer zk.Dialer

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
	return &Worker{
		cfg:     cfg,
		labels:  labels,
		layout:  layout,
		outDir:  outDir,
		logger:  logger.With("worker", cfg.ID),
		metrics: newMetrics(cfg.Capacity),
	}, nil
}

// Addr returns the address /metrics is served on, once Run has opened it; nil before,
// and when MetricsAddr is empty. It is safe to call at any time.
func (w *Worker) Addr() net.Addr {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.metricsAddr
}

// Run registers the worker and runs the tasks assigned to it until ctx ends. It then
// stops cleanly: it ends its running tasks' process groups (SIGTERM, then SIGKILL after
// KillGrace) and records nothing for them — the master sees the worker gone and runs
// them again elsewhere — removes /workers/<id> and closes the session. Run returns nil
// on such a stop, and an error if the worker cannot start (the metrics address is taken,
// the output directory cannot be made, the servers refuse the registration). It may be
// called once.
func (w *Worker) Run(ctx context.Context) error {
	if w.ran.Swap(true) {
		return errors.New("worker: Run called twice")
	}
	if err := os.MkdirAll(w.outDir, 0o755); err != nil {
		return fmt.Errorf("worker: output_dir = %s: %w", w.outDir, err)
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
	reg, err := w.register(ctx, sess)
	if err != nil || reg == nil {
		return err
	}
	l := newLoop(w, sess)
	err = l.run(ctx)
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
	if cc.Policy == nil {
		w.logger.Warn("no roles configured: this worker runs the command of any task a client that can reach the servers writes; set roles (or roles_file) and auth (docs/security.md)")
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
// to an earlier incarnation's session.
const registerRetry = time.Second

// register makes the worker's directories and registers it in /workers/<id>, kept
// across new sessions. If an earlier incarnation (killed without closing its session)
// still holds the node, it waits for that session to expire. It returns nil and no
// error if ctx ends first.
func (w *Worker) register(ctx context.Context, sess *coordinator.Session) (*coordinator.Ephemeral, error) {
	for _, dir := range []string{w.layout.AssignDir(w.cfg.ID), w.layout.Workers()} {
		if err := sess.MakeDirs(ctx, dir); err != nil {
			if ctx.Err() != nil {
				return nil, nil
			}
			return nil, fmt.Errorf("worker: %w", err)
		}
	}
	data, err := json.Marshal(task.WorkerInfo{
		Addr: w.cfg.Addr, Capacity: w.cfg.Capacity, Labels: w.labels, Started: time.Now().UTC(),
	})
	if err != nil {
		return nil, fmt.Errorf("worker: registration: %w", err)
	}
	path := w.layout.Worker(w.cfg.ID)
	for waited := false; ; {
		reg, err := sess.KeepEphemeral(ctx, path, data)
		if err == nil {
			w.logger.Info("registered", "path", path, "session_id", hexID(sess.SessionID()))
			return reg, nil
		}
		if !errors.Is(err, coordinator.ErrNodeTaken) {
			if err := sess.WaitToRetry(ctx, err); err != nil {
				if ctx.Err() != nil {
					return nil, nil
				}
				return nil, fmt.Errorf("worker: register %s: %w", path, err)
			}
			continue
		}
		if !waited {
			w.logger.Warn("waiting for the old registration to expire", "path", path, "err", err)
			waited = true
		}
		if !pause(ctx, registerRetry) {
			return nil, nil
		}
	}
}

// pause waits for d; false if ctx ends first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func hexID(id int64) string { return fmt.Sprintf("0x%x", id) }
