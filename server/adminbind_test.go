package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// recorder is a slog.Handler that keeps every record, for tests that assert what was
// logged.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

// find returns the records whose message contains msg.
func (r *recorder) find(msg string) []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Record
	for _, rec := range r.records {
		if strings.Contains(rec.Message, msg) {
			out = append(out, rec)
		}
	}
	return out
}

// attr returns the value of rec's attribute key.
func attr(rec slog.Record, key string) (v slog.Value, ok bool) {
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, ok = a.Value, true
			return false
		}
		return true
	})
	return v, ok
}

// TestAdminAddrInUse: a server whose admin address another process holds starts all
// the same, as a ZooKeeper ensemble member does: it warns with the address and the
// reason, serves clients and the four-letter words on the client port, and AdminAddr
// is nil.
func TestAdminAddrInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	cfg := testutil.PaddockConfig(t)
	cfg.AdminAddr = held.Addr().String()
	cfg.FourLetterWords = []string{"srvr"}
	rec := &recorder{}
	s, err := server.New(cfg, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("start with the admin address taken: %v", err)
	}
	t.Cleanup(func() { s.Close() })

	if a := s.AdminAddr(); a != nil {
		t.Errorf("AdminAddr = %v, want nil: the admin port was not bound", a)
	}
	warned := rec.find("admin port not served")
	if len(warned) != 1 {
		t.Fatalf("%d records say the admin port is not served, want 1", len(warned))
	}
	w := warned[0]
	if w.Level != slog.LevelWarn {
		t.Errorf("logged at %v, want WARN", w.Level)
	}
	if v, _ := attr(w, "admin_addr"); v.String() != cfg.AdminAddr {
		t.Errorf("admin_addr = %q, want %q", v.String(), cfg.AdminAddr)
	}
	if v, ok := attr(w, "err"); !ok {
		t.Error("no err attribute: the reason is not logged")
	} else if e, _ := v.Any().(error); !errors.Is(e, syscall.EADDRINUSE) || !strings.Contains(e.Error(), cfg.AdminAddr) {
		t.Errorf("err = %v, want EADDRINUSE naming %s", v.Any(), cfg.AdminAddr)
	}
	if serving := rec.find("serving"); serving[len(serving)-1].Message != "serving" {
		t.Error("no serving record after the warning")
	}

	c, _ := connect(t, s.Addr().String())
	if _, err := c.Create("/a", []byte("served"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if data, _, err := c.Get("/a"); err != nil || string(data) != "served" {
		t.Fatalf("get /a: %q, %v", data, err)
	}
	out, err := testutil.FourLetterWord(s.Addr().String(), "srvr", 5*time.Second)
	if err != nil {
		t.Fatalf("srvr on the client port: %v", err)
	}
	if !strings.Contains(out, "Mode: standalone") || !strings.Contains(out, "Node count:") {
		t.Errorf("srvr on the client port answered %q", out)
	}
}
