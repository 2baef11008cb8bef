package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is where a task is in its life.
type State string

const (
	Pending   State = "pending"   // waiting for a worker (or for its retry delay)
	Assigned  State = "assigned"  // given to a worker that has not started it yet
	Running   State = "running"   // its process runs on a worker
	Done      State = "done"      // ended with exit code 0
	Failed    State = "failed"    // ended otherwise, its retries used up
	Cancelled State = "cancelled" // ended by a cancel request
	Skipped   State = "skipped"   // ended without a run: a task it waited for did not end done
)

// Ended says the state is final.
func (s State) Ended() bool { return s == Done || s == Failed || s == Cancelled || s == Skipped }

// Limits on a Spec.
const (
	MaxRetries  = 100
	MaxPriority = 1_000_000
	// MaxSpecSize bounds a spec's JSON: a znode holds at most 1 MiB, and the master
	// reads every pending task's spec.
	MaxSpecSize = 256 << 10
	// DefaultRetryDelay is the delay before a retry when the spec gives none.
	DefaultRetryDelay = time.Second
)

// Spec is what a client submits: a command to run and how.
type Spec struct {
	// Command is the program to run: a path, or a name looked up in the worker's PATH.
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	// Env is added to the worker's environment for the process.
	Env map[string]string `json:"env,omitempty"`
	// Dir is the process's working directory on the worker; empty means the worker's.
	Dir string `json:"dir,omitempty"`
	// Timeout ends a run that takes longer (its process is killed); 0 means none.
	Timeout Duration `json:"timeout,omitempty"`
	// Retries is how many times a failed run is tried again.
	Retries int `json:"retries,omitempty"`
	// RetryDelay is the pause between a failed run and the next.
	RetryDelay Duration `json:"retry_delay,omitempty"`
	// Priority: pending tasks of a higher priority are assigned first; among equals,
	// the older first.
	Priority int `json:"priority,omitempty"`
	// Selector is the labels a worker must all have to run the task ("os=linux,gpu=true"
	// in text, an object in JSON); empty, any worker may. A task no live worker matches
	// stays pending: it is never failed for it.
	Selector Selector `json:"selector,omitempty"`
	// Submitted is when the client submitted it.
	Submitted time.Time `json:"submitted"`
	// Token identifies the submission, so that a submit whose reply was lost can find
	// whether its create was applied, instead of creating the task twice.
	Token string `json:"token,omitempty"`
	// Job names the job the task is a run of, if any; Scheduled is the scheduled time
	// of the fire that started it (zero for a run-now).
	Job       string    `json:"job,omitempty"`
	Scheduled time.Time `json:"scheduled,omitzero"`

	// DAG, Name and After make the task a node of a DAG submitted as one (Client.SubmitDAG):
	// DAG is the DAG's id, Name the task's name in it, and After the names of the tasks of
	// the same DAG that must end done before it runs. OnParentFailure says what it does
	// when one of them ends otherwise: fail (the default: it ends failed, naming the
	// parent) or skip (it ends skipped). Either way its own children then do what theirs
	// say.
	DAG             string   `json:"dag,omitempty"`
	Name            string   `json:"name,omitempty"`
	After           []string `json:"after,omitempty"`
	OnParentFailure string   `json:"on_parent_failure,omitempty"`

	// Shard, for an item of a sharded job's run, says which: the master runs it on the
	// worker the job's shard plan places the item on.
	Shard *Shard `json:"shard,omitempty"`
}

// Shard is an item of a sharded job's run.
type Shard struct {
	Item  int    `json:"item"`
	Total int    `json:"total"`
	Param string `json:"param,omitempty"`
}

// What a DAG task does when a task it waits for does not end done.
const (
	OnParentFailureFail = "fail"
	OnParentFailureSkip = "skip"
)

// MaxDAGSize bounds the tasks of one DAG: they are created in one multi.
const MaxDAGSize = 200

// Validate reports every problem of the spec, each naming its field.
func (s *Spec) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("task spec: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	switch {
	case strings.TrimSpace(s.Command) == "":
		bad("command", "empty")
	case strings.ContainsRune(s.Command, 0):
		bad("command", "contains a NUL byte")
	}
	for i, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			bad(fmt.Sprintf("args[%d]", i), "contains a NUL byte")
		}
	}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			bad("env", "variable name %q: want a name without '=' or NUL", k)
		}
		if strings.ContainsRune(v, 0) {
			bad("env", "value of %s contains a NUL byte", k)
		}
	}
	if strings.ContainsRune(s.Dir, 0) {
		bad("dir", "contains a NUL byte")
	}
	if s.Timeout < 0 {
		bad("timeout", "%v is negative", s.Timeout)
	}
	if s.Retries < 0 || s.Retries > MaxRetries {
		bad("retries", "%d: want 0 to %d", s.Retries, MaxRetries)
	}
	if s.RetryDelay < 0 {
		bad("retry_delay", "%v is negative", s.RetryDelay)
	}
	if s.Priority < -MaxPriority || s.Priority > MaxPriority {
		bad("priority", "%d: want -%d to %d", s.Priority, MaxPriority, MaxPriority)
	}
	if s.DAG != "" || s.Name != "" || len(s.After) > 0 {
		if s.DAG == "" || strings.ContainsRune(s.DAG, 0) || len(s.DAG) > 256 {
			bad("dag", "%q: a task with a name or parents belongs to a DAG: want its id, 1 to 256 bytes", s.DAG)
		}
		if err := CheckJobName(s.Name); err != nil {
			bad("name", "%s", strings.TrimPrefix(err.Error(), "job "))
		}
		if len(s.After) >= MaxDAGSize {
			bad("after", "%d parents: at most %d", len(s.After), MaxDAGSize-1)
		}
		for i, p := range s.After {
			if p == s.Name || slices.Contains(s.After[:i], p) {
				bad("after", "%q: the task itself, or named twice", p)
			}
		}
	}
	switch s.OnParentFailure {
	case "", OnParentFailureFail, OnParentFailureSkip:
	default:
		bad("on_parent_failure", "%q: want %s or %s", s.OnParentFailure, OnParentFailureFail, OnParentFailureSkip)
	}
	for _, err := range s.Selector.check() {
		bad("selector", "%v", err)
	}
	if len(errs) == 0 {
		if b, _ := json.Marshal(s); len(b) > MaxSpecSize {
			bad("size", "%d bytes of JSON: at most %d", len(b), MaxSpecSize)
		}
	}
	return errors.Join(errs...)
}

// Status is a task's end, in /tasks/<task>/status.
type Status struct {
	State    State `json:"state"`     // done, failed or cancelled
	ExitCode int   `json:"exit_code"` // -1 when the process was killed or never ran
	// Signal names the signal that killed the process (SIGTERM, SIGKILL), if one did.
	Signal string `json:"signal,omitempty"`
	Error  string `json:"error,omitempty"` // why it failed or was cancelled, in words
	// OutputTail is the end of the process's output (stdout and stderr together);
	// OutputFile, on the worker, holds all of it.
	OutputTail string    `json:"output_tail,omitempty"`
	OutputFile string    `json:"output_file,omitempty"`
	Worker     string    `json:"worker,omitempty"`
	Attempts   int       `json:"attempts"` // runs, this one included (0 if cancelled before any)
	Started    time.Time `json:"started,omitzero"`
	Finished   time.Time `json:"finished"`
}

// Attempt is a run that did not end the task: it failed with retries left
// (attempt-<n>), or its worker was lost (lost-<n>).
type Attempt struct {
	N          int       `json:"n"`
	Worker     string    `json:"worker"`
	ExitCode   int       `json:"exit_code"` // -1 when killed, or lost with its worker
	Signal     string    `json:"signal,omitempty"`
	Error      string    `json:"error,omitempty"`
	OutputTail string    `json:"output_tail,omitempty"`
	OutputFile string    `json:"output_file,omitempty"` // on the worker
	Started    time.Time `json:"started,omitzero"`
	Finished   time.Time `json:"finished"`
	Lost       bool      `json:"lost,omitempty"`
	// HandedBack: a lost run its worker gave back while draining or stopping (its
	// process killed at the drain's deadline or the end of the stop grace).
	HandedBack bool `json:"handed_back,omitempty"`
}

// Assignment gives a task to a worker, in /assign/<worker>/<task>.
type Assignment struct {
	// Attempt is the run's number, from 1; Failures is how many runs before it failed
	// (lost runs do not count): the worker records a failure as final once Failures
	// reaches the spec's Retries.
	Attempt  int `json:"attempt"`
	Failures int `json:"failures"`
	// MasterEpoch is the epoch of the master that assigned it.
	MasterEpoch int64 `json:"master_epoch"`
	// Session is the worker's ZooKeeper session the task was given to: a worker runs only
	// what was given to its own session, and the master takes back what was given to
	// an earlier one.
	Session  int64     `json:"session,string"`
	Assigned time.Time `json:"assigned"`
	// Started is set by the worker when it starts the process.
	Started time.Time `json:"started,omitzero"`
}

// WorkerState is what a worker says of itself in its registration.
type WorkerState string

const (
	WorkerActive   WorkerState = "active"   // takes new assignments
	WorkerDraining WorkerState = "draining" // drained: takes none, its runs still go on
	WorkerDrained  WorkerState = "drained"  // drained and nothing runs: safe to stop
	WorkerStopping WorkerState = "stopping" // stopping (SIGTERM): runs end within its stop grace
)

// Accepts says whether a worker in state s may be given new assignments ("" is a
// worker of an earlier release, which says nothing).
func (s WorkerState) Accepts() bool { return s == "" || s == WorkerActive }

// WorkerInfo is what a worker registers in /workers/<worker>. The worker updates it
// when its State changes.
type WorkerInfo struct {
	Addr     string            `json:"addr,omitempty"`
	Capacity int               `json:"capacity"`
	Labels   map[string]string `json:"labels,omitempty"`
	Started  time.Time         `json:"started"`
	State    WorkerState       `json:"state,omitempty"`
	// Host, PID and SessionTimeout identify the process that holds the registration:
	// a second worker started with the same id names them when it is refused.
	Host           string   `json:"host,omitempty"`
	PID            int      `json:"pid,omitempty"`
	SessionTimeout Duration `json:"session_timeout,omitempty"`
	// Heartbeat is how often the worker's main loop rewrites this registration; 0 for a
	// worker that does not beat (never judged stale).
	Heartbeat Duration `json:"heartbeat,omitempty"`
}

// StaleAfter is how old, by the servers' clock, a worker's last heartbeat may be before
// readers call it stale: 3 intervals, at least 10 s. 0 when the worker does not beat.
func (i WorkerInfo) StaleAfter() time.Duration {
	if i.Heartbeat <= 0 {
		return 0
	}
	return max(3*time.Duration(i.Heartbeat), 10*time.Second)
}

// DrainRequest is an operator's request, in /drain/<worker>, that a worker take no new
// assignments. Runs still going at Deadline (if set) are killed and handed back as
// lost runs, which do not count against the task's retries.
type DrainRequest struct {
	Requested time.Time `json:"requested"`
	Deadline  time.Time `json:"deadline,omitzero"`
	By        string    `json:"by,omitempty"` // who asked: a console user, or "cli"
}

// MasterInfo is what the active master writes in /master.
type MasterInfo struct {
	ID    string    `json:"id"`
	Addr  string    `json:"addr,omitempty"`
	Since time.Time `json:"since"`
	Epoch int64     `json:"epoch,omitempty"`
}

// Duration is a time.Duration that is a string in JSON ("1m30s"); a number is read
// as nanoseconds.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("duration: want a string such as \"30s\", got %s", b)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) String() string { return time.Duration(d).String() }
