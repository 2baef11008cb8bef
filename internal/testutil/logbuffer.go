package testutil

import (
	"bytes"
	"log/slog"
	"sync"
)

// LogBuffer collects a logger's text lines for a test to read while the code under test
// still writes them. Safe for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// CapturedLogger returns a logger of debug text lines and the buffer they go to.
func CapturedLogger() (*slog.Logger, *LogBuffer) {
	lb := &LogBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}
