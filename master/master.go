package master

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/backoff"
	"github.com/paddock/paddock/internal/metricsserver"
	"github.com/paddock/paddock/task"
)

// Master stands for election on /master and, while it leads, assigns tasks to workers.
type Master struct {
	cfg        Config
	id         string
	layout     task.Layout
	logger     *slog.Logger
	metrics    *metrics
	metricsSrv *metricsserver.Server // /metrics, or nil
	// rand is the source of the backoffs' jitter, used by Run's goroutine only; nil is
	// math/rand/v2's global one (tests seed their own).
	rand *rand.Rand
}

// New checks cfg and returns a master; it opens the metrics listener, if configured,
// so that Addr is known before Run.
func New(cfg Config, logger *slog.Logger) (*Master, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	layout, _ := task.NewLayout(cfg.Root)
	m := &Master{cfg: cfg, id: cfg.id(), layout: layout, metrics: newMetrics()}
	m.logger = logger.With("master", m.id)
	if cfg.MetricsAddr != "" {
		ms, err := metricsserver.Listen(cfg.MetricsAddr, m.metrics.reg)
		if err != nil {
			return nil, fmt.Errorf("master: metrics_addr = %s: %w", cfg.MetricsAddr, err)
		}
		m.metricsSrv = ms
	}
	return m, nil
}

// Addr returns the address /metrics is served on, or "".
func (m *Master) Addr() string {
	if m.metricsSrv == nil {
		return ""
	}
	return m.metricsSrv.Addr().String()
}

// ID returns the name this master stands under.
func (m *Master) ID() string { return m.id }

// Run connects, stands for election, and leads whenever elected, until ctx ends; it
// then gives /master up and returns nil. It returns an error if it cannot connect.
func (m *Master) Run(ctx context.Context) error {
	if m.metricsSrv != nil {
		m.metricsSrv.Serve(m.logger)
		defer m.metricsSrv.Close()
	}
	cc, err := m.cfg.Access.Config(m.cfg.Servers, m.cfg.SessionTimeout, m.logger, m.layout.ACLRules())
	if err != nil {
		return fmt.Errorf("master: %w", err)
	}
	if cc.Trust.Empty() {
		return fmt.Errorf("master: signers_file = %s: it lists no key, and no tls_ca is given: no task could be assigned", m.cfg.SignersFile)
	}
	// A request past the servers' limit then fails at the client, as an item's error,
	// instead of closing the connection (a connection loss, which is the master's own).
	cc.MaxBuffer = m.cfg.MaxBuffer
	if cc.MaxBuffer == 0 {
		cc.MaxBuffer = coordinator.DefaultMaxBuffer
	}
	s, err := coordinator.Connect(ctx, cc)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("master: %w", err)
	}
	defer s.Close()
	// Terms that end soon after they began are put off with the backoff: whatever ends
	// them (the session lost over and over) is not met by campaigning in a loop.
	retry := backoff.Retry{Rand: m.rand}
	for {
		began := time.Now()
		err := m.term(ctx, s)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, coordinator.ErrClosed) {
			return fmt.Errorf("master: %w", err)
		}
		if time.Since(began) > backoff.Default.Cap {
			retry.Reset()
		}
		wait := retry.Fail()
		m.logger.Warn("no longer the active master", "err", err, "campaign_in", wait.Round(time.Millisecond))
		if !backoff.Sleep(ctx, wait) {
			return nil
		}
	}
}

// term campaigns, then leads until the leadership may be lost or ctx ends.
func (m *Master) term(ctx context.Context, s *coordinator.Session) error {
	addr := m.cfg.Addr
	if addr == "" {
		addr = m.Addr()
	}
	info, _ := json.Marshal(task.MasterInfo{ID: m.id, Addr: addr, Since: time.Now().UTC()})
	h, err := coordinator.NewElection(s, m.layout.Master(), info).Campaign(ctx)
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), m.cfg.SessionTimeout)
		defer cancel()
		h.Release(rctx)
	}()
	m.metrics.leader.Set(1)
	m.metrics.terms.Inc()
	defer m.metrics.leader.Set(0)
	return newLeader(m, s, h).run(ctx)
}
