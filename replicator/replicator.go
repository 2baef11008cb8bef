package replicator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/backoff"
	"github.com/paddock/paddock/internal/metricsserver"
)

// Replicator is one replicator process: it stands for its tasks (hot mode) or claims
// unserved ones (cold mode) and runs those it leads.
type Replicator struct {
	cfg        Config
	host       string
	layout     Layout
	logger     *slog.Logger
	metrics    *metrics
	metricsSrv *metricsserver.Server // /metrics, or nil
	s          *coordinator.Session  // set by Run
}

// New checks cfg and returns a replicator; it opens the metrics listener, if any.
func New(cfg Config, logger *slog.Logger) (*Replicator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	layout, _ := NewLayout(cfg.Root)
	r := &Replicator{cfg: cfg, host: cfg.host(), layout: layout, logger: logger, metrics: newMetrics()}
	if cfg.MetricsAddr != "" {
		ms, err := metricsserver.Listen(cfg.MetricsAddr, r.metrics.reg)
		if err != nil {
			return nil, fmt.Errorf("replicator: metrics_addr = %s: %w", cfg.MetricsAddr, err)
		}
		r.metricsSrv = ms
	}
	return r, nil
}

// Addr returns the metrics listener's address, or "".
func (r *Replicator) Addr() string {
	if r.metricsSrv == nil {
		return ""
	}
	return r.metricsSrv.Addr().String()
}

// Run serves until ctx ends, then stops its runs, deletes its instance nodes and
// returns nil; it returns an error if it cannot connect.
func (r *Replicator) Run(ctx context.Context) error {
	if r.metricsSrv != nil {
		r.metricsSrv.Serve(r.logger)
		defer r.metricsSrv.Close()
	}
	cc, err := r.cfg.Access.Config(r.cfg.Servers, r.cfg.SessionTimeout, r.logger, r.layout.ACLRules())
	if err != nil {
		return fmt.Errorf("replicator: %w", err)
	}
	s, err := coordinator.Connect(ctx, cc)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("replicator: %w", err)
	}
	defer s.Close()
	r.s = s
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { r.monitor(ctx, r.cfg.MonitorInterval) })
	if r.cfg.Mode == "hot" {
		for _, t := range r.cfg.Tasks {
			in := &instance{r: r, task: t, logger: r.logger.With("task", t)}
			wg.Go(func() { in.serve(ctx) })
		}
		<-ctx.Done()
		return nil
	}
	r.scan(ctx, &wg)
	return nil
}

// scan is the cold standby: it looks for enabled tasks that no instance serves, on
// every change of the task list and every ScanInterval, and claims them. A listing that
// fails for a reason other than the connection is tried again with the backoff of the
// failures in a row; the scan stops only with ctx or the session.
func (r *Replicator) scan(ctx context.Context, wg *sync.WaitGroup) {
	serving := map[string]bool{}
	var mu sync.Mutex // guards serving
	conn := r.s.Conn()
	var retry backoff.Retry
	for ctx.Err() == nil {
		names, _, ev, err := conn.ChildrenW(r.layout.Tasks())
		if errors.Is(err, zk.ErrNoNode) {
			if err = r.s.MakeDirs(ctx, r.layout.Tasks()); err == nil {
				continue
			}
		}
		if err != nil {
			werr := r.s.WaitToRetry(ctx, err)
			if werr == nil {
				continue
			}
			if ctx.Err() != nil || errors.Is(werr, coordinator.ErrClosed) {
				return
			}
			wait := retry.Fail()
			r.logger.Warn("cannot list the replication tasks", "err", err, "retry_in", wait.Round(time.Millisecond))
			if !backoff.Sleep(ctx, wait) {
				return
			}
			continue
		}
		retry.Reset()
		for _, t := range names {
			mu.Lock()
			busy := serving[t]
			mu.Unlock()
			if busy || len(r.cfg.Tasks) > 0 && !slices.Contains(r.cfg.Tasks, t) || !r.unserved(t) {
				continue
			}
			r.logger.Info("cold standby claims an unserved task", "task", t)
			mu.Lock()
			serving[t] = true
			mu.Unlock()
			in := &instance{r: r, task: t, cold: true, logger: r.logger.With("task", t)}
			wg.Go(func() {
				in.serve(ctx)
				mu.Lock()
				delete(serving, t)
				mu.Unlock()
			})
		}
		select {
		case <-ev:
		case <-time.After(r.cfg.ScanInterval):
		case <-ctx.Done():
		}
	}
}

// unserved says the task is enabled and has no instance.
func (r *Replicator) unserved(t string) bool {
	conn := r.s.Conn()
	var def TaskDef
	data, _, err := conn.Get(r.layout.Task(t))
	if err != nil || json.Unmarshal(data, &def) != nil || !def.Enabled {
		return false
	}
	nodes, _, err := conn.Children(r.layout.Instances(t))
	return err == nil && len(nodes) == 0 || errors.Is(err, zk.ErrNoNode)
}
