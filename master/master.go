package master

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/task"
)

// Master stands for election on /master and, while it leads, assigns tasks to workers.
type Master struct {
	cfg     Config
	id      string
	layout  task.Layout
	logger  *slog.Logger
	metrics *metrics
	ln      net.Listener // the metrics listener, or nil
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
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("master: metrics_addr: %w", err)
		}
		m.ln = ln
	}
	return m, nil
}

// Addr returns the address /metrics is served on, or "".
func (m *Master) Addr() string {
	if m.ln == nil {
		return ""
	}
	return m.ln.Addr().String()
}

// ID returns the name this master stands under.
func (m *Master) ID() string { return m.id }

// Run connects, stands for election, and leads whenever elected, until ctx ends; it
// then gives /master up and returns nil. It returns an error if it cannot connect.
func (m *Master) Run(ctx context.Context) error {
	if m.ln != nil {
		srv := &http.Server{Handler: promhttp.HandlerFor(m.metrics.reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(m.ln)
		defer srv.Close()
	}
	s, err := coordinator.Connect(ctx, coordinator.Config{
		Servers: m.cfg.Servers, SessionTimeout: m.cfg.SessionTimeout, Logger: m.logger,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("master: %w", err)
	}
	defer s.Close()
	for {
		err := m.term(ctx, s)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, coordinator.ErrClosed) {
			return fmt.Errorf("master: %w", err)
		}
		m.logger.Warn("no longer the active master", "err", err)
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
	defer m.metrics.leader.Set(0)
	return newLeader(m, s, h).run(ctx)
}
