// Package server is the ZooKeeper-compatible coordination server: it owns the lifecycle of
// the listeners, the request pipeline, the log, the tree and the session table. The
// deterministic parts live in subpackages (wire, datatree, txn, session, watch, store).
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
)

// Server is one standalone coordination server.
type Server struct {
	cfg    Config
	logger *slog.Logger
	ln     net.Listener
}

// New validates cfg and returns a server that is not yet listening.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, logger: logger}, nil
}

// Start recovers state from the data directory, binds the listeners and starts serving.
func (s *Server) Start() error { return errors.New("server: not implemented yet") }

// Addr returns the client listener's address; valid after Start.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops serving, closes every connection and waits for all goroutines. Idempotent.
func (s *Server) Close() error { return nil }

// Run starts the server and serves until ctx is done, then closes it.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	return s.Close()
}
