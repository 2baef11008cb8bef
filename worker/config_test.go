package worker

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	valid := DefaultConfig()
	valid.ID, valid.SignersFile = "w1", "signers"
	if err := valid.Validate(); err != nil {
		t.Fatalf("default config with an id and signers: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string // the error starts with it
	}{
		{"no servers", func(c *Config) { c.Servers = nil }, `zk = "": want the coordination servers`},
		{"server without port", func(c *Config) { c.Servers = []string{"localhost"} }, "zk = localhost: want host:port"},
		{"short session", func(c *Config) { c.SessionTimeout = 10 * time.Millisecond }, "session_timeout = 10ms: want at least 100ms"},
		{"relative root", func(c *Config) { c.Root = "paddock" }, "root = paddock: want an absolute path"},
		{"no id", func(c *Config) { c.ID = "" }, `id = "": want 1 to 128 letters`},
		{"bad id", func(c *Config) { c.ID = "-w" }, "id = -w: want 1 to 128 letters"},
		{"no capacity", func(c *Config) { c.Capacity = 0 }, "capacity = 0: want at least 1"},
		{"label without value", func(c *Config) { c.Labels = []string{"zone"} }, `labels = "zone": want key=value`},
		{"label without key", func(c *Config) { c.Labels = []string{"=eu"} }, `labels = "=eu": want a key of 1 to 128`},
		{"label twice", func(c *Config) { c.Labels = []string{"zone=a", "zone=b"} }, `labels = "zone=b": key zone given twice`},
		{"bad metrics addr", func(c *Config) { c.MetricsAddr = "9090" }, "metrics_addr = 9090: want host:port"},
		{"negative grace", func(c *Config) { c.KillGrace = -time.Second }, "kill_grace = -1s: want 0 or more"},
		{"negative stop grace", func(c *Config) { c.StopGrace = -time.Second }, "stop_grace = -1s: want 0 or more"},
		{"NUL in output dir", func(c *Config) { c.OutputDir = "a\x00b" }, `output_dir = "a\x00b": contains a NUL byte`},
		{"no signers", func(c *Config) { c.SignersFile = "" }, `signers_file = "": this service runs only tasks and jobs a trusted key signed`},
		{"a signing key", func(c *Config) { c.SigningKey = "worker.key" }, "signing_key = worker.key: a worker signs nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.change(&c)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate() = %v; want one error starting with %q", err, tt.want)
			}
			if _, err := New(c, nil); err == nil {
				t.Fatal("New accepted the config")
			}
		})
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	c := Config{Labels: []string{"a", "b"}}
	err := c.Validate()
	if err == nil {
		t.Fatal("empty config accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	var keys []string
	for _, l := range lines {
		k, _, _ := strings.Cut(l, " = ")
		keys = append(keys, k)
	}
	want := []string{"zk", "session_timeout", "id", "capacity", "labels", "labels", "heartbeat_interval", "signers_file"}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("errors name %v; want %v:\n%v", keys, want, err)
	}
}

func TestParseLabels(t *testing.T) {
	// Spaces around a key and a value are trimmed, as in a task's selector.
	got := parseLabels([]string{"zone=eu-1", "gpu=", "k8s.io/role=batch=x", " os = linux "}, func(e, why string) {
		t.Errorf("%q: %s", e, why)
	})
	want := map[string]string{"zone": "eu-1", "gpu": "", "k8s.io/role": "batch=x", "os": "linux"}
	if !maps.Equal(got, want) {
		t.Fatalf("parseLabels = %v; want %v", got, want)
	}
	if got := parseLabels(nil, nil); got != nil {
		t.Fatalf("parseLabels(nil) = %v; want nil", got)
	}
}

func TestOutputDirDefault(t *testing.T) {
	c := DefaultConfig()
	c.ID = "w7"
	dir, err := c.outputDir()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(dir, "/data/worker-w7/output") {
		t.Fatalf("default output dir %q; want it to end in data/worker-w7/output", dir)
	}
}
