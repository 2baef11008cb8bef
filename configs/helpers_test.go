package configs

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// writeFile writes content to name in a fresh temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// logBuffer returns a logger at debug level and the buffer it writes text lines to.
func logBuffer(t *testing.T) (*slog.Logger, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// serverFlags returns the server subcommand's key flags, parsed from args.
func serverFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	fs.String("config", "", "")
	fs.String("client-addr", ":2181", "")
	fs.String("data-dir", "data", "")
	fs.String("admin-addr", "127.0.0.1:8081", "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// wantErr fails t unless err is non-nil and contains every one of parts.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want an error containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("err =\n%v\nwant it to contain %q", err, p)
		}
	}
}

// clearPaddockEnv unsets every PADDOCK_ variable for the duration of the test, so that
// the environment of whoever runs the tests does not leak into them.
func clearPaddockEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PADDOCK_") {
			t.Setenv(name, "") // restores the old value at cleanup
			os.Unsetenv(name)
		}
	}
}
