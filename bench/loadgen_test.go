package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
)

// startPaddock starts an in-process paddock that takes any number of connections.
func startPaddock(t *testing.T) (string, *server.Server) {
	t.Helper()
	cfg := testutil.PaddockConfig(t)
	cfg.MaxClientCnxns = 0
	s := testutil.StartServer(t, cfg)
	return s.Addr().String(), s
}

func testConfig(addr, workload string) Config {
	cfg := DefaultConfig()
	cfg.Addr, cfg.Workload = addr, workload
	cfg.Sessions, cfg.Outstanding = 4, 4
	cfg.Nodes = 50
	cfg.Ephemerals = 5
	cfg.Watchers = 20
	cfg.RequestTimeout = 10 * time.Second
	return cfg
}

// checkSane fails t unless res measured ops successful operations with ordered, positive latencies.
func checkSane(t *testing.T, res *Result, ops int64) {
	t.Helper()
	if !res.OK() {
		t.Fatalf("errors %d %v, failures %v", res.Errors, res.ErrorCodes, res.Failures)
	}
	if ops > 0 && res.Ops != ops {
		t.Errorf("Ops = %d, want %d", res.Ops, ops)
	}
	if res.Ops <= 0 || res.OpsPerSec <= 0 || res.Elapsed <= 0 {
		t.Errorf("Ops %d, OpsPerSec %v, Elapsed %v: want positive", res.Ops, res.OpsPerSec, res.Elapsed)
	}
	checkOrdered(t, "latency", res.Latency, res.Ops)
	if res.CleanupError != "" {
		t.Errorf("clean-up: %s", res.CleanupError)
	}
}

func checkOrdered(t *testing.T, what string, l Summary, count int64) {
	t.Helper()
	if l.Count != count {
		t.Errorf("%s: %d samples, want %d", what, l.Count, count)
	}
	if !(0 < l.Min && l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("%s: want 0 < min <= p50 <= p90 <= p99 <= p99.9 <= max, got %+v", what, l)
	}
	if l.Mean < l.Min || l.Mean > l.Max {
		t.Errorf("%s: mean %v outside [min, max]", what, l.Mean)
	}
}

// checkTimeline fails t unless res kept one sample per measured request, in the order
// of their replies, when kept, and none otherwise.
func checkTimeline(t *testing.T, res *Result, kept bool) {
	t.Helper()
	if !kept {
		if res.samples != nil {
			t.Errorf("%d samples kept without a timeline", len(res.samples))
		}
		return
	}
	if int64(len(res.samples)) != res.Ops {
		t.Errorf("%d samples for %d measured requests", len(res.samples), res.Ops)
	}
	for i, sm := range res.samples {
		if sm.latency <= 0 || i > 0 && sm.at < res.samples[i-1].at {
			t.Fatalf("sample %d %+v: want a positive latency, in the order of completion", i, sm)
		}
	}
}

// checkGone fails t if the shared root is still there: every run removes what it made.
func checkGone(t *testing.T, addr, path string) {
	t.Helper()
	s, err := dial(t.Context(), addr, testConfig(addr, "").sessionOptions(1, 4096))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close(5 * time.Second)
	code, err := call(s, wire.OpExists, func(e *wire.Encoder) { e.String(path); e.Bool(false) })
	if err != nil || code != wire.ErrNoNode {
		t.Errorf("exists %s after the run: %v %v, want no node", path, code, err)
	}
}

func TestWorkloadsByCount(t *testing.T) {
	addr, _ := startPaddock(t)
	for _, tc := range []struct {
		workload string
		ops      int64
	}{
		{WorkloadCreate, 500},
		{WorkloadSet, 500},
		{WorkloadGet, 500},
		{WorkloadExists, 500},
		{WorkloadChildren, 500},
		{WorkloadDelete, 500},
		{WorkloadMixed, 500},
		{WorkloadChurn, 20},
		{WorkloadFanout, 5},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			cfg := testConfig(addr, tc.workload)
			cfg.Ops = tc.ops
			res, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkSane(t, res, tc.ops)
			if tc.workload == WorkloadFanout {
				if res.Notify == nil {
					t.Fatal("no notification latencies")
				}
				checkOrdered(t, "notify", *res.Notify, tc.ops*int64(cfg.Watchers))
				if res.Notify.Max != res.Latency.Max {
					t.Errorf("the slowest notification (%v) is not the slowest round (%v)", res.Notify.Max, res.Latency.Max)
				}
			}
			checkGone(t, addr, cfg.Root)
		})
	}
}

// Against an ensemble, the sessions spread over the members round-robin, followers
// forward the writes, and reads on a follower find what the other members' sessions
// prepared (each session writes after preparing).
func TestWorkloadsOnAnEnsemble(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) { c.MaxClientCnxns = 0 })
	addr := strings.Join(e.Addrs(), ", ")
	for _, tc := range []struct {
		workload string
		ops      int64
	}{
		{WorkloadCreate, 300},
		{WorkloadSet, 300},
		{WorkloadGet, 300},
		{WorkloadMixed, 300},
		{WorkloadChurn, 9},
		{WorkloadFanout, 3},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			cfg := testConfig(addr, tc.workload)
			cfg.Ops, cfg.Sessions, cfg.Watchers = tc.ops, 5, 7
			var conns []int64
			cfg.measureHook = func(begin bool) {
				if begin {
					for i := range e.Addrs() {
						conns = append(conns, e.Server(i).Stats().Connections)
					}
				}
			}
			res, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkSane(t, res, tc.ops)
			switch tc.workload {
			case WorkloadChurn: // the control session only; each lifecycle dials its own
			case WorkloadFanout: // the writer on the first member, the watchers round-robin
				if want := []int64{4, 2, 2}; !slices.Equal(conns, want) {
					t.Errorf("connections per member %v, want %v", conns, want)
				}
			default:
				if want := []int64{2, 2, 1}; !slices.Equal(conns, want) {
					t.Errorf("connections per member %v, want %v", conns, want)
				}
			}
			for _, a := range e.Addrs() {
				checkGone(t, a, cfg.Root)
			}
		})
	}
}

func TestWorkloadsByDurationWithWarmup(t *testing.T) {
	addr, _ := startPaddock(t)
	for _, w := range []string{WorkloadCreate, WorkloadMixed, WorkloadChurn, WorkloadFanout} {
		t.Run(w, func(t *testing.T) {
			cfg := testConfig(addr, w)
			cfg.Duration, cfg.Warmup = 300*time.Millisecond, 100*time.Millisecond
			cfg.timeline = w == WorkloadMixed // a request workload, through runOps
			res, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkSane(t, res, 0)
			if res.Elapsed < cfg.Duration {
				t.Errorf("Elapsed %v, want at least %v", res.Elapsed, cfg.Duration)
			}
			checkTimeline(t, res, cfg.timeline)
			checkGone(t, addr, cfg.Root)
		})
	}
}

func TestDeleteWithWarmupDeletesExactlyOps(t *testing.T) {
	addr, _ := startPaddock(t)
	cfg := testConfig(addr, WorkloadDelete)
	cfg.Ops, cfg.Warmup = 3000, 50*time.Millisecond
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, res, 3000)
	if res.Prepared != 3000+1000 { // the warm-up's pool is max(ops/4, 1000)
		t.Errorf("prepared %d znodes, want 4000", res.Prepared)
	}
	checkGone(t, addr, cfg.Root)
}

func TestKeepLeavesTheZnodes(t *testing.T) {
	addr, _ := startPaddock(t)
	cfg := testConfig(addr, WorkloadCreate)
	cfg.Ops, cfg.Keep = 100, true
	if _, err := Run(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	s, err := dial(t.Context(), addr, cfg.sessionOptions(1, 4096))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close(5 * time.Second)
	n, err := childCount(s, cfg.Root)
	if err != nil || n != 1 {
		t.Fatalf("%s has %d children (%v), want the run's root", cfg.Root, n, err)
	}
}

// A watch that never fires must fail the run, not be counted: the writer changes a node
// nobody watches.
func TestFanoutFailsWhenANotificationIsMissing(t *testing.T) {
	addr, _ := startPaddock(t)
	cfg := testConfig(addr, WorkloadFanout)
	cfg.Ops, cfg.RequestTimeout = 3, time.Second
	cfg.fanoutWritePath = "other"
	start := time.Now()
	res, err := Run(t.Context(), cfg)
	if err == nil {
		t.Fatalf("fanout with nobody notified succeeded: %+v", res)
	}
	if want := "only 0 of 20 watchers were notified within 1s"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to say %q", err, want)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("failing took %v", el)
	}
	checkGone(t, addr, cfg.Root)
}

// A server that goes away mid-run makes every session fail; the run reports that.
func TestSessionFailuresAreReported(t *testing.T) {
	addr, srv := startPaddock(t)
	cfg := testConfig(addr, WorkloadGet)
	cfg.Duration = 20 * time.Second
	time.AfterFunc(300*time.Millisecond, func() { srv.Close() })
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || len(res.Failures) != cfg.Sessions {
		t.Fatalf("failures %v, want one per session (%d)", res.Failures, cfg.Sessions)
	}
	if res.Elapsed > 10*time.Second {
		t.Errorf("the run went on for %v after the server closed", res.Elapsed)
	}
	if res.CleanupError == "" {
		t.Error("clean-up with no server reported no error")
	}
	var out bytes.Buffer
	res.WriteText(&out)
	if !strings.Contains(out.String(), "failed       session 0") {
		t.Errorf("text output does not list the failed sessions:\n%s", out.String())
	}
}

func TestJSONOutputParses(t *testing.T) {
	addr, _ := startPaddock(t)
	cfg := testConfig(addr, WorkloadGet)
	cfg.Ops = 200
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	for _, key := range []string{"workload", "ops", "ops_per_sec", "latency", "errors", "elapsed_ns"} {
		if _, ok := m[key]; !ok {
			t.Errorf("JSON lacks %q:\n%s", key, buf.String())
		}
	}
	var back Result
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Ops != 200 || back.Latency != res.Latency || back.Workload != WorkloadGet {
		t.Errorf("JSON round trip: got %+v, want %+v", back, res)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"workload", func(c *Config) { c.Workload = "scan" }, "--workload scan"},
		{"sessions", func(c *Config) { c.Sessions = 0 }, "--sessions 0"},
		{"outstanding", func(c *Config) { c.Outstanding = 0 }, "--outstanding 0"},
		{"delete by duration", func(c *Config) { c.Workload = WorkloadDelete }, "needs --ops"},
		{"no duration", func(c *Config) { c.Duration = 0 }, "--duration 0s"},
		{"root", func(c *Config) { c.Root = "bench" }, "--root bench"},
		{"root slash", func(c *Config) { c.Root = "/" }, "--root /"},
		{"zookeeper root", func(c *Config) { c.Root = "/zookeeper" }, "--root /zookeeper"},
		{"address", func(c *Config) { c.Addr = "127.0.0.1" }, "--zk 127.0.0.1"},
		{"address in a list", func(c *Config) { c.Addr = "127.0.0.1:1,:2" }, "--zk 127.0.0.1:1,:2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.change(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error with %q", err, tc.want)
			}
		})
	}
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
	if _, err := Run(context.Background(), Config{}); err == nil {
		t.Error("Run with a zero Config succeeded")
	}
}
