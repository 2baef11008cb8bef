package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// launch is what a run starts. Its processes are the task's: the first, and every
// process started under it, wherever it goes (its own session, its own group).
type launch struct {
	path string   // the command as exec.Command resolved it in the worker's PATH
	args []string // argv, the command as given first
	dir  string   // "" for the worker's working directory
	env  []string // each name once
	out  *os.File // stdout and stderr
	run  string   // the run's name, runName(task, attempt)
}

// taskProc is a started task. Its methods are called from the job's goroutine only.
type taskProc interface {
	// PID is the task's first process.
	PID() int
	// Signal sends SIGTERM, or SIGKILL if hard, to every process of the task.
	Signal(hard bool) error
	// Done is closed once the first process has exited and every other process of
	// the task has been killed and is gone: a task's processes end with it.
	Done() <-chan struct{}
	// End says how the first process ended; call it once Done is closed.
	End() taskEnd
}

// taskEnd is how a task's first process ended.
type taskEnd struct {
	exitCode int    // -1 if a signal ended it, or it could not be told
	signal   string // the signal's name ("SIGKILL"), "" if it exited
	err      error  // nil for exit status 0: "exit status 3", "signal: killed"
}

// runMarkEnv is the variable every task process carries, naming the worker and the
// run: PADDOCK_TASK_RUN=<worker key>/<task>.<attempt>. A worker finds by it what an
// earlier life of its own left running, and what a run whose supervisor died left.
// It is not PADDOCK_WORKER_…: configs refuses variables of a section's prefix that name
// no key, and a task may run paddock itself.
const runMarkEnv = "PADDOCK_TASK_RUN"

// workerKey names a worker across its restarts and apart from any other on the host:
// a hash of its id and its output directory, 16 hex digits. Two paddock up on one host
// both have an up-worker-1; they do not share an output directory.
func workerKey(id, outDir string) string {
	sum := sha256.Sum256([]byte(id + "\x00" + outDir))
	return hex.EncodeToString(sum[:8])
}

// runName names run n of task id: "task-0000000042.3".
func runName(id string, n int) string { return id + "." + strconv.Itoa(n) }

// runMark is the value of runMarkEnv for a run of the worker keyed key.
func runMark(key, run string) string { return key + "/" + run }

// dedupEnv keeps the last of each name, in the place of its first: execve passes
// duplicates on, and getenv would read the first (os/exec dedups the same way).
func dedupEnv(env []string) []string {
	last := make(map[string]int, len(env))
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		last[name] = i
	}
	out := make([]string, 0, len(last))
	seen := make(map[string]bool, len(last))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !seen[name] {
			seen[name] = true
			out = append(out, env[last[name]])
		}
	}
	return out
}

// Values of the mode label of paddock_worker_kill_mode: how the worker makes sure a
// task's processes end with it.
const (
	killModeCgroup    = "cgroup"    // each run in a cgroup v2 of its own, killed through it
	killModeSubreaper = "subreaper" // each run under a supervisor that reaps and kills its tree
	killModeGroup     = "group"     // not Linux: the process group only
)

// procMetrics are the metrics of how tasks' processes are run and ended.
type procMetrics struct {
	killMode  *prometheus.GaugeVec
	leftovers *prometheus.CounterVec
}

func newProcMetrics(reg prometheus.Registerer) *procMetrics {
	m := &procMetrics{
		killMode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "paddock", Subsystem: "worker", Name: "kill_mode",
			Help: "1 for how this worker ends a task's processes: cgroup, subreaper or group.",
		}, []string{"mode"}),
		leftovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paddock", Subsystem: "worker", Name: "leftover_processes_killed_total",
			Help: "Task processes killed because their run's supervisor was gone: left by an earlier life of the worker (at start), or by a supervisor that died.",
		}, []string{"when"}),
	}
	m.leftovers.WithLabelValues(leftoversAtStart)
	m.leftovers.WithLabelValues(leftoversOfRun)
	reg.MustRegister(m.killMode, m.leftovers)
	return m
}

// Values of the when label of paddock_worker_leftover_processes_killed_total.
const (
	leftoversAtStart = "start" // an earlier life's, killed before the first claim
	leftoversOfRun   = "run"   // a run's whose supervisor died under a live worker
)

func (m *procMetrics) setMode(mode string) {
	for _, k := range []string{killModeCgroup, killModeSubreaper, killModeGroup} {
		v := 0.0
		if k == mode {
			v = 1
		}
		m.killMode.WithLabelValues(k).Set(v)
	}
}
