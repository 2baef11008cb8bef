package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

func TestBenchJSON(t *testing.T) {
	addr := testutil.StartPaddock(t, func(c *server.Config) { c.MaxClientCnxns = 0 })
	code, stdout, stderr := run(t, "bench", "--zk", addr, "--workload", "mixed", "--sessions", "2",
		"--outstanding", "8", "--ops", "300", "--value-size", "10", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var res struct {
		Workload    string  `json:"workload"`
		Sessions    int     `json:"sessions"`
		Outstanding int     `json:"outstanding"`
		ValueSize   int     `json:"value_size"`
		Ops         int64   `json:"ops"`
		Errors      int64   `json:"errors"`
		OpsPerSec   float64 `json:"ops_per_sec"`
		Latency     struct {
			P50 int64 `json:"p50_ns"`
			P99 int64 `json:"p99_ns"`
			Max int64 `json:"max_ns"`
		} `json:"latency"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if res.Workload != "mixed" || res.Sessions != 2 || res.Outstanding != 8 || res.ValueSize != 10 ||
		res.Ops != 300 || res.Errors != 0 || res.OpsPerSec <= 0 ||
		res.Latency.P50 <= 0 || res.Latency.P50 > res.Latency.P99 || res.Latency.P99 > res.Latency.Max {
		t.Errorf("implausible result: %+v", res)
	}
}

func TestBenchText(t *testing.T) {
	addr := testutil.StartPaddock(t, func(c *server.Config) { c.MaxClientCnxns = 0 })
	code, stdout, stderr := run(t, "bench", "--zk", addr, "--workload", "create", "--ops", "100")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"workload     create against " + addr, "throughput   100 ops in", "p99.9", "errors       0"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestBenchFailsOnBadInput(t *testing.T) {
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "scan"}, "--workload scan"},
		{[]string{"--workload", "delete", "--duration", "1s"}, "needs --ops"},
		{[]string{"--zk", "127.0.0.1:" + strconv.Itoa(port), "--ops", "1"}, "connection refused"},
	} {
		code, _, stderr := run(t, append([]string{"bench"}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("bench %v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
