package logcollector

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/paddock/paddock/coordinator"
)

// Service is a paddock logcollector process: a collector, and a candidate for the
// rebalancer.
type Service struct {
	cfg    Config
	layout Layout
	logger *slog.Logger
}

// New checks cfg and returns the service.
func New(cfg Config, logger *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg = cfg.withDefaults()
	layout, _ := NewLayout(cfg.Root)
	return &Service{cfg: cfg, layout: layout, logger: logger.With("collector", cfg.ID)}, nil
}

// Run collects and stands for rebalancer until ctx ends; it returns nil then, or an
// error if it cannot connect or its collector cannot run.
func (s *Service) Run(ctx context.Context) error {
	cc, err := s.cfg.Access.Config(s.cfg.Servers, s.cfg.SessionTimeout, s.logger, s.layout.ACLRules())
	if err != nil {
		return fmt.Errorf("logcollector: %w", err)
	}
	sess, err := coordinator.Connect(ctx, cc)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("logcollector: %w", err)
	}
	defer sess.Close()
	c, err := NewCollector(s.cfg, sess, s.logger)
	if err != nil {
		return err
	}
	r := &rebalancer{s: sess, l: s.layout, id: s.cfg.ID, host: s.cfg.Host, grace: s.cfg.Grace, interval: s.cfg.RebalanceInterval,
		logger: s.logger.With("role", "rebalancer")}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { r.run(ctx) })
	err = c.Run(ctx)
	cancel()
	wg.Wait()
	return err
}
