package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

// job is one run of a task on this worker, from its claim to its recorded outcome.
type job struct {
	id      string          // the task
	path    string          // its assignment
	a       task.Assignment // as marked started
	version int32           // the assignment's version after the mark: the outcome's multi checks it
	spec    task.Spec
	specErr error // the spec is unreadable or invalid: the run fails at once, for good
	session int64 // the session the task was given to
	// refused is set by the job's goroutine before it reports on ended: its outcome could
	// not be recorded, and the task was refused.
	refused bool

	// ctx is cancelled with errStopping or errSessionLost to abandon the run: its
	// process is killed and nothing is recorded.
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// outcome is how a run ended, to be recorded.
type outcome struct {
	state    task.State // Done, Failed or Cancelled
	final    bool       // a failure that no retry can mend
	notRun   bool       // cancelled before its process started: not counted as a run
	exitCode int
	signal   string // the signal that killed the process, if one did
	// handedBack: the run was ended by a drain's deadline or the end of the stop
	// grace, to be recorded as a lost run.
	handedBack bool
	err        string
	tail       string
	file       string
	started    time.Time
	finished   time.Time

	// While the process runs: why the worker ended it ("" if it exited by itself), and
	// the cause if the run was abandoned.
	reason    string
	abandoned error
}

// outputDrain bounds the wait for a run's output once its processes are killed.
const outputDrain = 2 * time.Second

// execute runs j's process and returns its outcome, or nil if the run was abandoned.
func (l *loop) execute(j *job) *outcome {
	if j.specErr != nil {
		l.logger.Warn("task has a bad spec: failing it", "task", j.id, "err", j.specErr)
		return &outcome{state: task.Failed, final: true, exitCode: -1, err: j.specErr.Error(), finished: now()}
	}
	cancelled, watch, ok := l.watchCancel(j.ctx, j)
	if !ok {
		var hb *handBack
		if errors.As(context.Cause(j.ctx), &hb) { // before its process started
			return &outcome{handedBack: true, notRun: true, exitCode: -1, err: hb.Error(), finished: now()}
		}
		return nil
	}
	if cancelled {
		return &outcome{state: task.Cancelled, notRun: true, exitCode: -1, err: "cancelled", finished: now()}
	}
	p, err := l.startProcess(j)
	if err != nil {
		l.logger.Warn("task cannot start", "task", j.id, "attempt", j.a.Attempt, "err", err)
		return &outcome{state: task.Failed, exitCode: -1, err: err.Error(), started: p.started, finished: now()}
	}
	l.w.metrics.running.Inc()
	defer l.w.metrics.running.Dec()
	return l.supervise(j, p, watch)
}

// process is a started task.
type process struct {
	proc    taskProc
	out     *output
	started time.Time
}

// startProcess starts j's command, stdin from /dev/null, stdout and stderr into an
// output, through the worker's runner: as the run_as user, every process of it to end
// with it. A command that cannot start (not found, its directory missing, not
// executable by the run_as user) returns an error, with the process's start time, and
// leaves no output file.
func (l *loop) startProcess(j *job) (*process, error) {
	p := &process{started: now()}
	cmd := exec.Command(j.spec.Command, j.spec.Args...) // resolves the command as os/exec does
	if cmd.Err != nil {                                 // not found in PATH
		return p, cmd.Err
	}
	if err := checkDir(j.spec.Dir); err != nil {
		return p, err
	}
	out, err := newOutput(outputPath(l.w.outDir, j.id, j.a.Attempt), l.logger.With("task", j.id))
	if err != nil {
		return p, err
	}
	p.out = out
	run := runName(j.id, j.a.Attempt)
	proc, err := l.w.runner.start(launch{path: cmd.Path, args: cmd.Args, dir: j.spec.Dir, env: l.environ(j, run), out: out.w, run: run})
	if err != nil {
		out.close()
		if out.path != "" {
			os.Remove(out.path)
			os.Remove(filepath.Dir(out.path)) // only if no earlier run left its output there
		}
		return p, err
	}
	out.started()
	p.proc = proc
	l.logger.Info("task started", "task", j.id, "attempt", j.a.Attempt, "pid", proc.PID())
	return p, nil
}

// checkDir reports a working directory that is missing or not a directory, which
// exec would report as the command missing.
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case err != nil:
		return fmt.Errorf("dir %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("dir %s: not a directory", dir)
	}
	return nil
}

// environ is the worker's environment, then the run_as user's HOME, USER and LOGNAME,
// then the spec's, then the task's id and attempt and the run's mark; a later entry of
// a name replaces an earlier one.
func (l *loop) environ(j *job, run string) []string {
	env := append(os.Environ(), l.w.runner.userEnv()...)
	for _, k := range slices.Sorted(maps.Keys(j.spec.Env)) {
		env = append(env, k+"="+j.spec.Env[k])
	}
	env = append(env, "PADDOCK_TASK_ID="+j.id, "PADDOCK_TASK_ATTEMPT="+strconv.Itoa(j.a.Attempt),
		runMarkEnv+"="+runMark(l.w.key, run))
	return dedupEnv(env)
}

// supervise waits for p to end, ending it on a timeout, a cancel request, or when the
// run is abandoned, and returns the outcome (nil if abandoned).
func (l *loop) supervise(j *job, p *process, cancelWatch <-chan zk.Event) *outcome {
	watchCtx, stopWatch := context.WithCancel(j.ctx)
	defer stopWatch()
	cancelled := l.followCancel(watchCtx, j, cancelWatch)
	var timeout <-chan time.Time
	if d := time.Duration(j.spec.Timeout); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	k := &killer{p: p.proc, grace: l.w.cfg.KillGrace, logger: l.logger.With("task", j.id)}
	defer k.stop()
	o := &outcome{state: task.Failed, started: p.started}
	abandon := j.ctx.Done()
	for {
		select {
		case <-p.proc.Done():
			return l.exited(j, p, o)
		case <-timeout:
			timeout = nil
			o.setReason(task.Failed, fmt.Sprintf("timed out after %v", time.Duration(j.spec.Timeout)))
			k.terminate()
		case <-cancelled:
			cancelled = nil
			o.setReason(task.Cancelled, "cancelled")
			k.terminate()
		case <-abandon:
			abandon = nil
			o.abandoned = context.Cause(j.ctx)
			if errors.Is(o.abandoned, errSessionLost) {
				k.kill()
			} else {
				k.terminate()
			}
		case <-k.graceOver():
			k.kill()
		}
	}
}

// exited completes the outcome of an ended task — its first process exited, the rest
// killed: it drains its output and reads its exit.
func (l *loop) exited(j *job, p *process, o *outcome) *outcome {
	o.finished = now()
	o.tail = p.out.wait(outputDrain)
	o.file = p.out.path
	end := p.proc.End()
	o.exitCode, o.signal = end.exitCode, end.signal
	elapsed := o.finished.Sub(o.started)
	var hb *handBack
	if errors.As(o.abandoned, &hb) {
		o.handedBack, o.err = true, hb.Error()
		l.logger.Info("task killed and handed back", "task", j.id, "attempt", j.a.Attempt,
			"reason", hb.reason, "signal", o.signal, "elapsed", elapsed)
		return o
	}
	if o.abandoned != nil {
		l.logger.Info("task killed; nothing recorded", "task", j.id, "attempt", j.a.Attempt,
			"reason", o.abandoned, "elapsed", elapsed)
		return nil
	}
	switch {
	case o.reason != "":
		o.err = o.reason
	case end.err == nil:
		o.state = task.Done
	default:
		o.err = end.err.Error()
	}
	l.w.metrics.duration.Observe(elapsed.Seconds())
	l.logger.Info("task process ended", "task", j.id, "attempt", j.a.Attempt, "state", o.state,
		"exit_code", o.exitCode, "signal", o.signal, "err", o.err, "elapsed", elapsed)
	return o
}

// setReason records why the worker ended the process; the first reason stands.
func (o *outcome) setReason(state task.State, reason string) {
	if o.reason == "" {
		o.state, o.reason = state, reason
	}
}

// watchCancel reports whether the task's cancel node exists, and watches it; ok is
// false if ctx ended first. If the servers refuse the watch, the run goes on without.
func (l *loop) watchCancel(ctx context.Context, j *job) (exists bool, watch <-chan zk.Event, ok bool) {
	path := l.w.layout.Cancel(j.id)
	for {
		exists, _, watch, err := l.conn.ExistsW(path)
		if err == nil {
			return exists, watch, true
		}
		if err := l.sess.WaitToRetry(ctx, err); err != nil {
			if ctx.Err() != nil || errors.Is(err, zk.ErrClosing) {
				return false, nil, false
			}
			l.logger.Warn("cannot watch for a cancel request", "task", j.id, "err", err)
			return false, nil, true
		}
	}
}

// followCancel follows the cancel watch until ctx ends; the channel it returns is
// closed when the cancel node appears.
func (l *loop) followCancel(ctx context.Context, j *job, watch <-chan zk.Event) <-chan struct{} {
	cancelled := make(chan struct{})
	if watch == nil {
		return cancelled
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-watch:
			}
			exists, w, ok := l.watchCancel(ctx, j)
			switch {
			case !ok || w == nil && !exists:
				return
			case exists:
				l.logger.Info("cancel requested: ending task", "task", j.id)
				close(cancelled)
				return
			}
			watch = w
		}
	}()
	return cancelled
}

func now() time.Time { return time.Now().UTC() }
