package worker

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/task"
)

// Config configures a worker. Fields are keys of the worker section of the
// configuration (configs), in snake_case; it holds only types configs can decode.
type Config struct {
	// Servers are the coordination servers' client addresses, host:port (key zk, flag
	// --zk).
	Servers []string
	// SessionTimeout is the ZooKeeper session timeout asked for. A worker cut off for
	// longer loses its session: it kills its tasks, and the master runs them elsewhere.
	SessionTimeout time.Duration
	// Access is how the service authenticates and the ACLs of the nodes it creates
	// (keys auth, auth_file, tls_ca, tls_cert, tls_key, roles).
	coordinator.Access
	// Root is the path the cluster's nodes live under (see package task).
	Root string
	// ID names the worker in /workers and /assign. It must stay the same across
	// restarts, and no two live workers may share it.
	ID string
	// Capacity is how many tasks the worker runs at once.
	Capacity int
	// Labels describe the worker to the master, each "key=value" (task.ParseLabel's
	// rules): a task whose selector asks for labels runs only on a worker with them all.
	Labels []string
	// Addr is the address advertised in /workers/<id>; informational only.
	Addr string
	// OutputDir holds the whole output of every run, in <task>/attempt-<n>.log; empty
	// means data/worker-<id>/output.
	OutputDir string
	// MetricsAddr is where /metrics is served, host:port; empty for none.
	MetricsAddr string
	// KillGrace is how long a task's processes have to exit after SIGTERM before they
	// get SIGKILL, when a task times out, is cancelled or the worker stops; 0 kills at
	// once.
	KillGrace time.Duration
	// StopGrace is how long a stopping worker (SIGTERM, or Run's context ended) lets
	// its running tasks go on: it takes nothing new meanwhile, and when the grace is
	// over it kills those still running and hands them back as lost runs, which do not
	// count against their retries. 0 hands them back at once.
	StopGrace time.Duration
	// RunAs is the user tasks run as: a user name, or uid[:gid] (key run_as). A name
	// (or a uid alone) takes the user's primary gid and groups from the user database;
	// uid:gid takes exactly those, with no supplementary groups. A worker running as root
	// needs it (or AllowRoot); one not running as root may set only itself.
	RunAs string
	// AllowRoot lets a worker running as root run tasks as root: with no run_as, or a
	// run_as of uid 0. Without it such a worker refuses to start.
	AllowRoot bool
	// UseCgroup puts each run in a cgroup v2 of its own, where the worker can make one
	// (Linux 5.14 or later, a writable cgroup2 hierarchy: root, or a delegated
	// subtree), and kills its processes through it; false, or where it cannot, a run's
	// supervisor alone kills them (see docs/security.md for what that leaves).
	UseCgroup bool
	// HeartbeatInterval is how often the worker's main loop rewrites its registration;
	// readers judge it stale by the servers' clock when the write is older than
	// task.StaleAfter of it. A stuck loop stops beating.
	HeartbeatInterval time.Duration
}

// DefaultConfig returns the defaults: a server on 127.0.0.1:2181, a 10 s session, one
// slot per CPU, a 5 s kill grace, a 30 s stop grace. ID has no default: each worker must be named.
func DefaultConfig() Config {
	return Config{
		Servers:        []string{"127.0.0.1:2181"},
		SessionTimeout: 10 * time.Second,
		Root:           "/",
		Capacity:       runtime.NumCPU(),
		KillGrace:      5 * time.Second,
		StopGrace:      30 * time.Second,
		UseCgroup:      true,

		HeartbeatInterval: 3 * time.Second,
	}
}

// Validate reports every problem of c, each as "key = value: what is allowed", with
// the keys of the configuration's worker section (Servers is zk).
func (c Config) Validate() error {
	errs := task.CheckConnection(c.Servers, c.SessionTimeout, c.Root)
	errs = append(errs, c.Access.Check()...)
	bad := func(key string, value any, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s = %v: %s", key, value, fmt.Sprintf(format, args...)))
	}
	if err := task.CheckWorkerID(c.ID); err != nil {
		bad("id", orEmpty(c.ID), "want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit, the same across restarts")
	}
	if c.Capacity < 1 {
		bad("capacity", c.Capacity, "want at least 1")
	}
	parseLabels(c.Labels, func(entry, why string) { bad("labels", fmt.Sprintf("%q", entry), "%s", why) })
	if strings.ContainsRune(c.OutputDir, 0) {
		bad("output_dir", fmt.Sprintf("%q", c.OutputDir), "contains a NUL byte")
	}
	if err := task.CheckListenAddr("metrics_addr", c.MetricsAddr); err != nil {
		errs = append(errs, err)
	}
	if c.KillGrace < 0 {
		bad("kill_grace", c.KillGrace, "want 0 or more (0 kills at once)")
	}
	if c.StopGrace < 0 {
		bad("stop_grace", c.StopGrace, "want 0 or more (0 hands running tasks back at once)")
	}
	if _, _, err := parseRunAs(c.RunAs); err != nil {
		bad("run_as", fmt.Sprintf("%q", c.RunAs), "%v", err)
	}
	if c.HeartbeatInterval < 100*time.Millisecond {
		bad("heartbeat_interval", c.HeartbeatInterval, "want 100ms or more")
	}
	if err := c.Access.CheckVerifier(); err != nil {
		errs = append(errs, err)
	}
	if c.SigningKey != "" {
		// A worker's credentials are on every worker host: none of them may author what
		// a worker runs.
		bad("signing_key", c.SigningKey, "a worker signs nothing and must hold no key that can sign tasks: leave it out")
	}
	return errors.Join(errs...)
}

func orEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// parseLabels turns "key=value" entries into a map, by task.ParseLabel's rules (the
// ones a task's selector follows); bad, if not nil, hears of every entry that is not
// one, and why.
func parseLabels(entries []string, bad func(entry, why string)) map[string]string {
	if bad == nil {
		bad = func(string, string) {}
	}
	labels := make(map[string]string, len(entries))
	for _, e := range entries {
		k, v, err := task.ParseLabel(e)
		if err != nil {
			bad(e, err.Error())
			continue
		}
		if _, dup := labels[k]; dup {
			bad(e, fmt.Sprintf("key %s given twice", k))
		}
		labels[k] = v
	}
	if len(labels) == 0 {
		return nil
	}
	return labels
}

// outputDir returns the absolute directory of the runs' output.
func (c Config) outputDir() (string, error) {
	dir := c.OutputDir
	if dir == "" {
		dir = filepath.Join("data", "worker-"+c.ID, "output")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("output_dir = %s: %w", dir, err)
	}
	return abs, nil
}
