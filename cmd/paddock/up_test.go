package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock/paddock/coordinator"
)

// TestUpListensOnLoopback: paddock up's client port is on 127.0.0.1 unless an address
// is given; the console and the metrics are too.
func TestUpListensOnLoopback(t *testing.T) {
	t.Setenv("PADDOCK_SERVER_CLIENT_ADDR", "") // not from the environment
	os.Unsetenv("PADDOCK_SERVER_CLIENT_ADDR")
	file := filepath.Join(t.TempDir(), "paddock.yaml")
	if err := os.WriteFile(file, []byte("server:\n  client_addr: \":3181\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{nil, "127.0.0.1:2181"},
		{[]string{"--client-port", "3181"}, "127.0.0.1:3181"},
		{[]string{"--client-addr", "0.0.0.0:2181"}, "0.0.0.0:2181"},
		{[]string{"--client-addr", ":2181"}, ":2181"},
		{[]string{"--config", file}, ":3181"},
	}
	for _, tt := range tests {
		cmd := newUpCmd()
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadUpServer(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ClientAddr != tt.want {
			t.Errorf("paddock up %v: client address %s, want %s", tt.args, cfg.ClientAddr, tt.want)
		}
	}
	if l := newUpCmd().Flags().Lookup("listen").DefValue; !strings.HasPrefix(l, "127.0.0.1:") {
		t.Errorf("console listens on %s by default", l)
	}
}

// TestUpCredentials: the first start makes a password per role, 0600, and the roles
// file of their ids; a second start reuses them.
func TestUpCredentials(t *testing.T) {
	dir := t.TempDir()
	p1, err := platformCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "credentials", "worker"))
	p2, err := platformCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "credentials", "worker"))
	if string(first) != string(again) || p1.superDigest != p2.superDigest {
		t.Fatalf("a second start made new credentials")
	}
	auths, err := p1.access(coordinator.RoleWorker).Auths()
	if err != nil || len(auths) != 1 || auths[0].Scheme != "digest" || !strings.HasPrefix(auths[0].Credentials, "worker:") {
		t.Fatalf("worker's auth: %v, %v", auths, err)
	}
	roles, _ := os.ReadFile(filepath.Join(dir, "credentials", "roles"))
	if !strings.Contains(string(roles), "worker=digest:"+coordinator.IDOf(auths[0]).ID) || strings.Contains(string(roles), auths[0].Credentials) {
		t.Errorf("roles file %q: want the worker's digest id and no password", roles)
	}
	if !strings.HasPrefix(p1.superDigest, "admin:") {
		t.Errorf("super digest %q", p1.superDigest)
	}
	for _, role := range append(coordinator.KnownRoles, "roles") {
		fi, err := os.Stat(filepath.Join(dir, "credentials", role))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v", role, err, fi.Mode().Perm())
		}
	}
}
