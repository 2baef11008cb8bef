package testutil

import (
	"log/slog"
	"os"
	"testing"

	"github.com/paddock/paddock/server"
)

// PaddockConfig returns a server config for tests: 127.0.0.1 on a free port, data in a
// fresh temp dir, small log segments, admin HTTP off. fsync stays on, as in production.
func PaddockConfig(tb testing.TB) server.Config {
	tb.Helper()
	cfg := server.DefaultConfig()
	cfg.ClientAddr = "127.0.0.1:0"
	cfg.AdminAddr = ""
	cfg.DataDir = tb.TempDir()
	cfg.PreAllocSize = 1 << 20
	return cfg
}

// TestLogger returns a logger for servers under test: silent unless PADDOCK_TEST_LOG is
// set, in which case it writes debug text to stderr.
func TestLogger() *slog.Logger {
	if os.Getenv("PADDOCK_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// StartServer starts a paddock server with cfg and closes it when the test ends.
func StartServer(tb testing.TB, cfg server.Config) *server.Server {
	tb.Helper()
	s, err := server.New(cfg, TestLogger())
	if err != nil {
		tb.Fatalf("paddock config: %v", err)
	}
	if err := s.Start(); err != nil {
		tb.Fatalf("start paddock: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// StartPaddock starts a paddock server with the test config, adjusted by configure if it
// is not nil, and returns its client address.
func StartPaddock(tb testing.TB, configure func(*server.Config)) string {
	tb.Helper()
	cfg := PaddockConfig(tb)
	if configure != nil {
		configure(&cfg)
	}
	return StartServer(tb, cfg).Addr().String()
}
