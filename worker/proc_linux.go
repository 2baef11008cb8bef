package worker

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runner starts each run under a task supervisor (supervisor_linux.go) and makes sure
// that nothing of a run outlives it. Its setting (identity, base, mode) is fixed by
// setUp, before the first run; then it is safe for concurrent use by the jobs.
type runner struct {
	id        identity // who tasks run as
	key       string   // workerKey: the mark of this worker's runs
	useCgroup bool     // Config.UseCgroup
	logger    *slog.Logger
	metrics   *procMetrics
	base      cgroup // where this worker's runs' cgroups are, or were in an earlier life; "" if nowhere
	mode      string // killModeCgroup (runs in cgroups beneath base) or killModeSubreaper

	// The base cgroup exists only while runs are in it, so that a worker killed while
	// idle leaves no cgroup behind (and one killed while busy, none once its
	// supervisors have removed theirs). Supervisors make their run's cgroup, and the
	// base if missing; the worker removes the base with its last run.
	mu   sync.Mutex
	runs int // runs in cgroups beneath base; guarded by mu
}

// newRunner checks who tasks are to run as (checkIdentity's rules); it starts nothing.
func newRunner(cfg Config, key string, m *procMetrics, logger *slog.Logger) (*runner, error) {
	if !supervisorReady.Load() {
		return nil, errors.New("worker: this program cannot supervise tasks: its main (or TestMain) must call worker.SupervisorMain first")
	}
	id, err := resolveRunAs(cfg.RunAs)
	if err != nil {
		return nil, fmt.Errorf("worker: run_as = %s: %w", cfg.RunAs, err)
	}
	if id, err = checkIdentity(id, cfg.RunAs, cfg.AllowRoot, os.Geteuid(), os.Getegid()); err != nil {
		return nil, err
	}
	return &runner{id: id, key: key, useCgroup: cfg.UseCgroup, logger: logger, metrics: m}, nil
}

// setUp picks how runs are killed: in a cgroup v2 of their own where the worker can
// make one and start a process into it, by their supervisor alone otherwise. It starts
// a supervisor as a probe either way, and fails if that does not answer: the worker
// could run no task.
func (r *runner) setUp() error {
	base, rel, err := cgroupBase(r.key)
	r.base = base
	switch {
	case err == nil && !r.useCgroup:
		err = errors.New("use_cgroup is false")
	case err == nil:
		err = r.probeCgroup(base, rel)
	}
	if err == nil {
		r.mode = killModeCgroup
		os.Remove(string(base)) // made again by the first run; an earlier life's leftovers keep it for sweep
		r.logger.Info("task processes are killed through their cgroup", "mode", r.mode, "cgroup", string(base), "run_as", r.id.String())
	} else {
		if r.base != "" {
			os.Remove(string(r.base)) // if this life made it; an earlier life's leftovers keep it for sweep
		}
		if _, perr := r.probe(-1); perr != nil {
			return fmt.Errorf("worker: cannot start a task supervisor: %w", perr)
		}
		r.mode = killModeSubreaper
		r.logger.Info("task processes are killed by their supervisor: no cgroup v2 of the worker's own", "mode", r.mode, "why", err, "run_as", r.id.String())
	}
	r.metrics.setMode(r.mode)
	return nil
}

// probeCgroup makes the worker's base cgroup and checks that a process can be started
// into a cgroup beneath it; it leaves the base for setUp to remove.
func (r *runner) probeCgroup(base cgroup, rel string) error {
	if err := os.Mkdir(string(base), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cannot make a cgroup: %w", err)
	}
	if _, err := os.Stat(string(base.child("cgroup.kill"))); err != nil {
		return errors.New("the kernel has no cgroup.kill (Linux 5.14)")
	}
	probe := base.child(supervisorProbe)
	if err := probe.make(); err != nil {
		return err
	}
	defer probe.remove()
	dir, err := os.Open(string(probe))
	if err != nil {
		return err
	}
	defer dir.Close()
	ev, err := r.probe(int(dir.Fd()))
	if err != nil {
		return fmt.Errorf("cannot start a process into a cgroup: %w", err)
	}
	if want := rel + "/" + supervisorProbe; ev.Cgroup != want {
		return fmt.Errorf("a process started into cgroup %s runs in %s", want, ev.Cgroup)
	}
	return nil
}

// probe starts a supervisor that only answers, in cgroup fd if fd >= 0.
func (r *runner) probe(cgroupFD int) (supervisorEvent, error) {
	s, err := r.spawn(supervisorProbe, nil, cgroupFD)
	if err != nil {
		return supervisorEvent{}, err
	}
	defer s.ctrl.Close()
	ev, err := readEvent(s.events)
	werr := s.cmd.Wait()
	s.statusR.Close()
	switch {
	case err != nil:
		return ev, fmt.Errorf("the supervisor did not answer (%v): %w", werr, err)
	case ev.Event != evReady:
		return ev, fmt.Errorf("the supervisor failed: %s", ev.Error)
	}
	return ev, nil
}

// supervised is a run under its supervisor: the taskProc of Linux.
type supervised struct {
	r       *runner
	run     string
	cg      cgroup // the run's cgroup, "" if none
	cmd     *exec.Cmd
	ctrl    *os.File      // the control pipe's write end; its close tells the supervisor to kill
	statusR *os.File      // the status pipe's read end
	events  *bufio.Reader // on statusR
	pid     int
	done    chan struct{} // closed when the supervisor has exited, and end is set
	end     taskEnd
}

// spawn starts a supervisor with arg, its stdout and stderr out (nil for /dev/null),
// in cgroup fd cgroupFD if >= 0; it sends nothing yet. The supervisor is in a process
// group of its own, so that a signal to the worker's group (a terminal's Ctrl-C) goes
// to the worker alone, which then ends its tasks its own way.
func (r *runner) spawn(arg string, out *os.File, cgroupFD int) (*supervised, error) {
	ctrlR, ctrlW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("control pipe: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		ctrlR.Close()
		ctrlW.Close()
		return nil, fmt.Errorf("status pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path: "/proc/self/exe", Args: []string{supervisorArg0, arg}, // this very program, even if its file was replaced
		ExtraFiles:  []*os.File{ctrlR, statusW}, // controlFD, statusFD
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGUSR1},
	}
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	if cgroupFD >= 0 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cgroupFD
	}
	err = cmd.Start()
	ctrlR.Close()
	statusW.Close()
	if err != nil {
		ctrlW.Close()
		statusR.Close()
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	return &supervised{r: r, cmd: cmd, ctrl: ctrlW, statusR: statusR, events: bufio.NewReader(statusR), done: make(chan struct{})}, nil
}

// start runs l under a supervisor, in a cgroup of its own where the worker makes them.
// It returns once the task's first process runs, or with the reason it could not.
func (r *runner) start(l launch) (taskProc, error) {
	spec := &supervisorSpec{Path: l.path, Args: l.args, Dir: l.dir, Env: l.env, Parent: os.Getpid()}
	if r.id.set {
		spec.Cred = &credSpec{UID: r.id.uid, GID: r.id.gid, Groups: r.id.groups}
	}
	var cg cgroup
	if r.mode == killModeCgroup {
		cg = r.enter(l.run)
		spec.Cgroup = string(cg)
	}
	s, err := r.spawn(runMark(r.key, l.run), l.out, -1)
	if err != nil {
		r.leave(cg)
		return nil, err
	}
	s.run, s.cg = l.run, cg
	if err := s.begin(spec); err != nil {
		return nil, err
	}
	go s.wait()
	return s, nil
}

// begin sends the spec and reads whether the task started; on an error nothing of the
// run is left.
func (s *supervised) begin(spec *supervisorSpec) error {
	err := writeSpec(s.ctrl, spec)
	var ev supervisorEvent
	if err == nil {
		ev, err = readEvent(s.events)
	}
	if err == nil && ev.Event == evStarted {
		s.pid = ev.PID
		return nil
	}
	s.ctrl.Close() // a supervisor still waiting for its spec gives up
	werr := s.cmd.Wait()
	s.statusR.Close()
	s.r.leave(s.cg)
	switch {
	case err != nil:
		return fmt.Errorf("task supervisor (%v): %w", werr, err)
	case ev.Event == evFailed && s.r.id.set:
		return fmt.Errorf("start as %s: %s", s.r.id, ev.Error)
	case ev.Event == evFailed:
		return errors.New(ev.Error)
	}
	return fmt.Errorf("task supervisor: unexpected %q", ev.Event)
}

// wait follows the supervisor to its end. A supervisor that ended without saying how
// the task did — killed, or crashed — may have left the task's processes: they are
// killed here, by the run's cgroup and its mark.
func (s *supervised) wait() {
	defer close(s.done)
	ev, err := readEvent(s.events)
	werr := s.cmd.Wait()
	s.ctrl.Close()
	s.statusR.Close()
	if err == nil && ev.Event == evExited {
		s.end = endOf(syscall.WaitStatus(ev.Status))
		if ev.Left > 0 {
			s.r.logger.Info("task's first process exited: killed the processes it left", "run", s.run, "pid", s.pid, "left", ev.Left)
		}
		s.r.leave(s.cg)
		return
	}
	n := s.r.killRun(s.run, s.cg)
	s.r.leave(s.cg)
	s.r.metrics.leftovers.WithLabelValues(leftoversOfRun).Add(float64(n))
	s.r.logger.Warn("task supervisor ended before the task: killed what the task left", "run", s.run, "pid", s.pid,
		"supervisor", werr, "killed", n)
	s.end = taskEnd{exitCode: -1, err: fmt.Errorf("the task's supervisor ended (%v); the task's processes were killed", werr)}
}

func (s *supervised) PID() int              { return s.pid }
func (s *supervised) Done() <-chan struct{} { return s.done }
func (s *supervised) End() taskEnd          { return s.end }

// Signal asks the supervisor to signal every process of the task. A supervisor
// already gone is not an error: wait kills what it left.
func (s *supervised) Signal(hard bool) error {
	cmd := byte(cmdTerminate)
	if hard {
		cmd = cmdKill
	}
	_, err := s.ctrl.Write([]byte{cmd})
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

// killRun kills what is left of run: its cgroup, if it has one, and every process
// that carries its mark. It returns how many processes it killed.
func (r *runner) killRun(run string, cg cgroup) int {
	n := 0
	if cg != "" {
		killed, err := cg.remove()
		if err != nil {
			r.logger.Warn("cannot empty a run's cgroup", "run", run, "err", err)
		}
		n += killed
	}
	return n + killMarked(runMarkEnv+"="+runMark(r.key, run))
}

// enter counts a run in, and names its cgroup, which its supervisor makes: a worker
// killed before the supervisor has its spec leaves none behind.
func (r *runner) enter(run string) cgroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs++
	return r.base.child(run)
}

// leave removes a run's cgroup if its supervisor could not (emptying it first), and
// the base cgroup with the last run; cg "" is a run without one.
func (r *runner) leave(cg cgroup) {
	if cg == "" {
		return
	}
	if _, err := cg.remove(); err != nil {
		r.logger.Warn("cannot remove a run's cgroup", "cgroup", string(cg), "err", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs--
	r.removeBaseLocked()
}

func (r *runner) removeBaseLocked() {
	if r.runs == 0 {
		os.Remove(string(r.base)) // fails, and stays, if a run's cgroup could not be removed; the next run's supervisor makes it again
	}
}

// sweep kills what earlier lives of this worker left running — supervisors, the
// runs' cgroups, every process carrying this worker's mark — until none is left. Run
// calls it once its registration is its own (no other life of it is live) and before
// it claims anything.
func (r *runner) sweep() {
	n := 0
	if pids, err := listPIDs(); err == nil {
		for _, pid := range pids {
			if signalChecked(pid, syscall.SIGKILL, r.ownSupervisor) {
				n++
			}
		}
	}
	if r.base != "" { // an earlier life may have used cgroups where this one does not
		subs, _ := os.ReadDir(string(r.base))
		for _, e := range subs {
			if e.IsDir() {
				killed, err := r.base.child(e.Name()).remove()
				if err != nil {
					r.logger.Warn("cannot empty the cgroup of an earlier run", "cgroup", e.Name(), "err", err)
				}
				n += killed
			}
		}
		os.Remove(string(r.base))
	}
	n += killMarked(runMarkEnv + "=" + r.key + "/")
	if n > 0 {
		r.metrics.leftovers.WithLabelValues(leftoversAtStart).Add(float64(n))
		r.logger.Warn("killed what an earlier life of this worker left running", "processes", n)
	}
}

// ownSupervisor reports whether pid is a supervisor of one of this worker's runs.
func (r *runner) ownSupervisor(pid int) bool {
	args := cmdline(pid)
	return len(args) == 2 && args[0] == supervisorArg0 && strings.HasPrefix(args[1], r.key+"/") && alive(pid)
}

// userEnv is what the task's environment says of its user.
func (r *runner) userEnv() []string { return r.id.userEnv() }

// markedPasses bounds killMarked: a process that keeps starting others faster than
// they are killed is given up on, with its mark, after this many passes.
const markedPasses = 500

// killMarked kills every process, but this one, whose environment holds the entry
// prefix, pass after pass until a pass finds none alive. It returns how many it killed.
func killMarked(prefix string) int {
	self := os.Getpid()
	killed := make(map[int]bool)
	marked := func(pid int) bool { return pid != self && alive(pid) && environHas(pid, prefix) }
	for range markedPasses {
		pids, err := listPIDs()
		if err != nil {
			break
		}
		found := false
		for _, pid := range pids {
			if signalChecked(pid, syscall.SIGKILL, marked) {
				killed[pid], found = true, true
			}
		}
		if !found {
			break
		}
		time.Sleep(5 * time.Millisecond) // let the kernel end them before looking again
	}
	return len(killed)
}

// endOf reads a wait status as os.ProcessState would: the same words in errors.
func endOf(ws syscall.WaitStatus) taskEnd {
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		return taskEnd{}
	case ws.Exited():
		return taskEnd{exitCode: ws.ExitStatus(), err: fmt.Errorf("exit status %d", ws.ExitStatus())}
	case ws.Signaled():
		msg := "signal: " + ws.Signal().String()
		if ws.CoreDump() {
			msg += " (core dumped)"
		}
		return taskEnd{exitCode: -1, signal: signalName(ws.Signal()), err: errors.New(msg)}
	}
	return taskEnd{exitCode: -1, err: fmt.Errorf("wait status %#x", uint32(ws))}
}

// signalName names a signal as records do: "SIGKILL".
func signalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return fmt.Sprintf("signal %d (%v)", int(sig), sig)
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "SIGKILL", syscall.SIGINT: "SIGINT",
	syscall.SIGHUP: "SIGHUP", syscall.SIGQUIT: "SIGQUIT", syscall.SIGABRT: "SIGABRT",
	syscall.SIGSEGV: "SIGSEGV", syscall.SIGBUS: "SIGBUS", syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGFPE: "SIGFPE",
}
