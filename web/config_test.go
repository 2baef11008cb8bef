package web

import (
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestConfigValidate(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	good := DefaultConfig()
	good.Users = []string{"ada:admin:" + string(hash)}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no users", func(c *Config) { c.Users = nil }, "users = []"},
		{"bad role", func(c *Config) { c.Users = []string{"bob:root:" + string(hash)} }, "users[0] = bob:root:<hash>: want role"},
		{"bad hash", func(c *Config) { c.Users = []string{"bob:viewer:secret"} }, "want a bcrypt hash"},
		{"twice", func(c *Config) { c.Users = append(c.Users, c.Users[0]) }, "given twice"},
		{"listen", func(c *Config) { c.Listen = "8080" }, "listen = 8080"},
		{"admin addr", func(c *Config) { c.AdminAddr = "nowhere" }, "admin_addr = nowhere"},
		{"ttl", func(c *Config) { c.SessionTTL = 0 }, "session_ttl = 0s"},
		{"audit root", func(c *Config) { c.AuditRoot = "audit" }, "audit_root = audit"},
		{"zk", func(c *Config) { c.Servers = nil }, "zk = "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			c.Users = append([]string(nil), good.Users...)
			tt.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), string(hash)) || strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows a password hash", err)
			}
		})
	}
}

func TestHashPasswordAndNewPassword(t *testing.T) {
	pw := NewPassword()
	if len(pw) != 20 || pw == NewPassword() {
		t.Fatalf("NewPassword %q: want 20 random characters", pw)
	}
	h, err := HashPassword(pw)
	if err != nil || bcrypt.CompareHashAndPassword([]byte(h), []byte(pw)) != nil {
		t.Fatalf("HashPassword: %q, %v", h, err)
	}
	if _, err := parseUsers([]string{"ada:admin:" + h}); err != nil {
		t.Errorf("a HashPassword hash is not a valid Users entry: %v", err)
	}
	if _, err := HashPassword(""); err == nil {
		t.Error("HashPassword accepted an empty password")
	}
}
