package worker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A task supervisor is the worker's program re-executed (/proc/self/exe, argv[0]
// supervisorArg0) as the parent of one run. It is the guard that a task's processes
// end with it and with its worker:
//
//   - it is a child subreaper (PR_SET_CHILD_SUBREAPER): every process the task starts,
//     in its own session or not, stays beneath it when its parent dies, so its tree is
//     the whole task and it can kill all of it;
//   - it starts the task's first process in a process group of its own, as the run_as
//     user, in the run's cgroup where there is one, with PR_SET_PDEATHSIG SIGKILL;
//   - it reads a control pipe from the worker: 'T' sends SIGTERM to every process of the
//     task, 'K' kills them all; the pipe's end — the worker has died, however: its
//     descriptors close with it — kills them all. PR_SET_PDEATHSIG (SIGUSR1, checked
//     against getppid, since Go's threads may end before the worker does: golang/go#27505)
//     is a second way to hear it;
//   - when the first process exits, it kills the rest (a task's processes end with it),
//     and once none is left it reports the first process's wait status and exits.
//
// Its stdout and stderr are the run's output pipe, which the task inherits; it
// reports to the worker on a status pipe, one JSON object a line.
const supervisorArg0 = "paddock-task-supervisor"

// supervisorProbe, as the supervisor's argument, asks it only to say it works and in
// which cgroup it runs.
const supervisorProbe = "probe"

// The supervisor's descriptors beside stdin, stdout and stderr.
const (
	controlFD = 3 // from the worker: the spec, then commands
	statusFD  = 4 // to the worker: events
)

// Commands on the control pipe.
const (
	cmdTerminate = 'T'
	cmdKill      = 'K'
)

// supervisorReady says SupervisorMain was called: the worker may re-execute this
// program as a supervisor.
var supervisorReady atomic.Bool

// SupervisorMain runs a task supervisor and exits if the process was started as one;
// otherwise it returns at once. A program that runs workers calls it first thing in
// main (a test binary in TestMain, before anything else): a worker re-executes its
// own program as the supervisor of each task, and New refuses to make a worker in a
// program that has not called it, which would start itself again as a whole.
func SupervisorMain() {
	if len(os.Args) != 2 || os.Args[0] != supervisorArg0 {
		supervisorReady.Store(true)
		return
	}
	// exit_group at once: the supervisor buffers nothing, and os.Exit in a binary built
	// with the race detector sleeps a second first (GORACE's atexit_sleep_ms), which
	// would hold every run's end that long.
	syscall.Exit(supervise(os.Args[1]))
}

// supervisorSpec is what the worker sends the supervisor of a run: a frame of a
// 4-byte big-endian length and the spec in JSON.
type supervisorSpec struct {
	Path   string    `json:"path"`
	Args   []string  `json:"args"`
	Dir    string    `json:"dir,omitempty"`
	Env    []string  `json:"env"`
	Cred   *credSpec `json:"cred,omitempty"`   // nil: the supervisor's own user
	Cgroup string    `json:"cgroup,omitempty"` // the run's cgroup directory, if any
	Parent int       `json:"parent"`           // the worker's pid
}

// credSpec is the user a task's first process takes before exec.
type credSpec struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups"`
}

// maxSpecFrame bounds a spec: a task's spec comes through ZooKeeper, whose largest
// request paddock takes is 512 MiB; the environment adds the worker's.
const maxSpecFrame = 1 << 30

// maxGroups is the kernel's NGROUPS_MAX.
const maxGroups = 65536

// supervisorEvent is a line on the status pipe.
type supervisorEvent struct {
	Event  string `json:"event"`            // one of the ev* values
	PID    int    `json:"pid,omitempty"`    // started: the task's first process
	Status uint32 `json:"status,omitempty"` // exited: its wait status
	Left   int    `json:"left,omitempty"`   // exited: processes killed after it exited
	Cgroup string `json:"cgroup,omitempty"` // ready: the supervisor's own cgroup
	Error  string `json:"error,omitempty"`  // failed: why
}

const (
	evReady   = "ready"   // the probe works
	evStarted = "started" // the task's first process runs
	evFailed  = "failed"  // the task could not start; nothing of it runs
	evExited  = "exited"  // the first process exited and none of the task's is left
)

// writeSpec sends spec as one frame.
func writeSpec(w io.Writer, spec *supervisorSpec) error {
	body, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if len(body) > maxSpecFrame {
		return fmt.Errorf("spec of %d bytes: more than %d", len(body), maxSpecFrame)
	}
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	_, err = w.Write(append(frame, body...))
	return err
}

// readSpec reads one frame and checks the spec: any error names what was wrong.
func readSpec(r io.Reader) (*supervisorSpec, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("spec length: %w", err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxSpecFrame {
		return nil, fmt.Errorf("spec of %d bytes: more than %d", size, maxSpecFrame)
	}
	// Read as it comes, never more than was sent: a length alone allocates nothing.
	body, err := io.ReadAll(io.LimitReader(r, int64(size)))
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if len(body) != int(size) {
		return nil, fmt.Errorf("spec: %d of %d bytes", len(body), size)
	}
	var spec supervisorSpec
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if dec.More() {
		return nil, errors.New("spec: more after the object")
	}
	return &spec, spec.check()
}

// check reports the first field of s that cannot be what it says.
func (s *supervisorSpec) check() error {
	switch {
	case s.Path == "" || strings.IndexByte(s.Path, 0) >= 0:
		return fmt.Errorf("spec: path %q: want a program", s.Path)
	case len(s.Args) == 0:
		return errors.New("spec: args: want the program's name first")
	case strings.IndexByte(s.Dir, 0) >= 0:
		return fmt.Errorf("spec: dir %q: contains a NUL byte", s.Dir)
	case s.Cgroup != "" && (!filepath.IsAbs(s.Cgroup) || strings.IndexByte(s.Cgroup, 0) >= 0):
		return fmt.Errorf("spec: cgroup %q: want an absolute path", s.Cgroup)
	case s.Parent <= 0:
		return fmt.Errorf("spec: parent %d: want the worker's pid", s.Parent)
	case s.Cred != nil && (s.Cred.UID == 1<<32-1 || s.Cred.GID == 1<<32-1 || len(s.Cred.Groups) > maxGroups):
		return fmt.Errorf("spec: cred %+v: want ids below 4294967295 and at most %d groups", *s.Cred, maxGroups)
	}
	for i, a := range s.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("spec: args[%d]: contains a NUL byte", i)
		}
	}
	for i, kv := range s.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" || strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("spec: env[%d] %q: want NAME=value", i, kv)
		}
	}
	return nil
}

// reporter writes events on the status pipe. A worker gone makes the writes fail,
// which is no matter: the supervisor is killing the task then.
type reporter struct{ w io.Writer }

func (r reporter) send(ev supervisorEvent) {
	line, _ := json.Marshal(ev)
	r.w.Write(append(line, '\n'))
}

// readEvent reads the next event from the status pipe.
func readEvent(r *bufio.Reader) (supervisorEvent, error) {
	var ev supervisorEvent
	line, err := r.ReadBytes('\n')
	if err != nil {
		return ev, err
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return ev, fmt.Errorf("status pipe: %w", err)
	}
	return ev, nil
}

// supervise is the supervisor's life; it returns the process's exit status.
func supervise(arg string) int {
	// PR_SET_PDEATHSIG follows the thread that forks: the task's is this thread, which
	// lives as long as the process once locked here.
	runtime.LockOSThread()
	for _, fd := range []int{controlFD, statusFD} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			fmt.Fprintf(os.Stderr, "%s: started without the worker's pipes (descriptor %d: %v): only a paddock worker starts it\n", supervisorArg0, fd, err)
			return 2
		}
		syscall.CloseOnExec(fd) // the task inherits neither
	}
	ctrl, rep := os.NewFile(controlFD, "control"), reporter{os.NewFile(statusFD, "status")}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		rep.send(supervisorEvent{Event: evFailed, Error: "PR_SET_CHILD_SUBREAPER: " + err.Error()})
		return 1
	}
	if arg == supervisorProbe {
		data, _ := os.ReadFile("/proc/self/cgroup")
		own, _ := parseOwnCgroup(data)
		rep.send(supervisorEvent{Event: evReady, Cgroup: own})
		return 0
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	spec, err := readSpec(ctrl)
	if err != nil {
		rep.send(supervisorEvent{Event: evFailed, Error: err.Error()})
		return 1
	}
	if os.Getppid() != spec.Parent {
		return 1 // the worker died before the task started: nothing to do
	}
	pid, err := startTask(spec)
	if err != nil {
		if spec.Cgroup != "" {
			cgroup(spec.Cgroup).remove()
		}
		rep.send(supervisorEvent{Event: evFailed, Error: err.Error()})
		return 0
	}
	rep.send(supervisorEvent{Event: evStarted, PID: pid})
	s := &supervisor{self: os.Getpid(), leader: pid, cg: cgroup(spec.Cgroup), parent: spec.Parent}
	rep.send(s.run(ctrl, sigs))
	return 0
}

// startTask starts the task's first process: in a group of its own, as the user of
// spec.Cred, in spec.Cgroup, made here (clone3 CLONE_INTO_CGROUP: it never runs outside it), with
// SIGKILL as its parent-death signal (set after the user change, which clears it).
func startTask(spec *supervisorSpec) (int, error) {
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if c := spec.Cred; c != nil {
		sys.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
	}
	if spec.Cgroup != "" {
		if err := cgroup(spec.Cgroup).make(); err != nil {
			return 0, err
		}
		fd, err := unix.Open(spec.Cgroup, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, fmt.Errorf("cgroup %s: %w", spec.Cgroup, err)
		}
		defer unix.Close(fd)
		sys.UseCgroupFD, sys.CgroupFD = true, fd
	}
	p, err := os.StartProcess(spec.Path, spec.Args, &os.ProcAttr{
		Dir: spec.Dir, Env: spec.Env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Sys: sys,
	})
	switch {
	case errors.Is(err, fs.ErrPermission) && spec.Cred != nil && spec.Dir != "":
		// The child's chdir and exec fail alike, after the user change: say both.
		return 0, fmt.Errorf("%w (the user may not enter dir %s, or not run %s)", err, spec.Dir, spec.Path)
	case err != nil:
		return 0, err
	}
	pid := p.Pid
	p.Release() // reapLoop waits for it, with the rest of the tree
	return pid, nil
}

// supervisor follows one started task; its fields are its run loop's.
type supervisor struct {
	self, leader, parent int
	cg                   cgroup       // "" if the run has none
	status               uint32       // the leader's wait status, once reaped
	killing              *time.Ticker // set once the task is being killed: passes repeat until none is left
	left                 int          // processes of the task alive when the leader was reaped
	leaderGone           bool         // the leader was reaped: its pid, and group id, may be another's
	orphaned             bool         // the worker is gone
}

// killPass is how often the supervisor kills again what a kill left: processes forked
// between its listing and its signals.
const killPass = 20 * time.Millisecond

// run follows the task until none of its processes is left, and returns the event
// that says how its first process ended.
func (s *supervisor) run(ctrl io.Reader, sigs <-chan os.Signal) supervisorEvent {
	cmds := make(chan byte)
	go readCommands(ctrl, cmds)
	reaped := make(chan reaping)
	go reapLoop(reaped)
	var tick <-chan time.Time
	for {
		select {
		case r, ok := <-reaped:
			if !ok { // no child left: the whole tree is gone
				s.cleanUp()
				return supervisorEvent{Event: evExited, Status: s.status, Left: s.left}
			}
			if r.pid == s.leader {
				s.status, s.left, s.leaderGone = uint32(r.status), len(descendants(s.self)), true
				tick = s.kill()
			}
		case c, ok := <-cmds:
			switch {
			case !ok: // the worker is gone
				cmds, s.orphaned = nil, true
				tick = s.kill()
			case c == cmdTerminate:
				s.signalAll(syscall.SIGTERM)
			case c == cmdKill:
				tick = s.kill()
			}
		case sig := <-sigs:
			if sig == syscall.SIGUSR1 && os.Getppid() != s.parent {
				s.orphaned = true
			}
			if sig == syscall.SIGTERM || sig == syscall.SIGINT || s.orphaned {
				tick = s.kill()
			}
		case <-tick:
			s.killAll()
		}
	}
}

// cleanUp removes the run's cgroup, empty now, before the supervisor reports: a worker
// killed right after the report leaves no run's cgroup behind. Where the worker is gone
// it also removes the worker's base cgroup if it is the last run in it: a worker killed
// while it ran tasks leaves no cgroup behind. A live worker removes the base itself,
// with its last run.
func (s *supervisor) cleanUp() {
	if s.cg == "" {
		return
	}
	s.cg.remove()
	if s.orphaned {
		os.Remove(filepath.Dir(string(s.cg)))
	}
}

// kill kills every process of the task now, and again every killPass until none is
// left; it returns the ticker's channel.
func (s *supervisor) kill() <-chan time.Time {
	if s.killing == nil {
		s.killing = time.NewTicker(killPass)
	}
	s.killAll()
	return s.killing.C
}

// killAll sends SIGKILL to the run's cgroup, at once, and to every process below the
// supervisor.
func (s *supervisor) killAll() {
	if s.cg != "" {
		s.cg.kill()
	}
	s.signalAll(syscall.SIGKILL)
}

// signalAll sends sig to every process below the supervisor: the task's, whatever
// session or group they are in, since it reaps them all. The task's own group gets it
// first, at once, as before there were supervisors: a shell then hears SIGTERM no later
// than the command it waits for, and cannot outlive it to carry on with its script.
// The rest get it parents first, for the same reason.
func (s *supervisor) signalAll(sig syscall.Signal) {
	if !s.leaderGone { // unreaped, the leader keeps its pid, and so its group id, its own
		syscall.Kill(-s.leader, sig)
	}
	below := descendants(s.self)
	in := make(map[int]bool, len(below)+1)
	in[s.self] = true
	for _, pid := range below {
		in[pid] = true
	}
	for _, pid := range below {
		signalChecked(pid, sig, func(pid int) bool {
			st, err := readStat(pid)
			return err == nil && in[st.ppid]
		})
	}
}

// readCommands passes the control pipe's commands on, and closes cmds at its end.
func readCommands(r io.Reader, cmds chan<- byte) {
	defer close(cmds)
	buf := make([]byte, 64)
	for {
		n, err := r.Read(buf)
		for _, c := range buf[:n] {
			cmds <- c
		}
		if err != nil {
			return
		}
	}
}

// reaping is a child the supervisor reaped.
type reaping struct {
	pid    int
	status syscall.WaitStatus
}

// reapLoop reaps the supervisor's children — the task's first process and every
// orphan of the task, which come to it as their subreaper — and closes out when it
// has none: then no process of the task is left.
func reapLoop(out chan<- reaping) {
	defer close(out)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD
		}
		out <- reaping{pid, ws}
	}
}
