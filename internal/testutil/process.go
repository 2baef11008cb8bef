package testutil

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BuildPaddock builds cmd/paddock into dir and returns the binary's path. With race it is
// built with the race detector (pass RaceEnabled to match the test binary): the packages
// are then already in the build cache from compiling the tests, so this costs a link.
func BuildPaddock(dir string, race bool) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	path := filepath.Join(dir, "paddock")
	args := []string{"build", "-o", path}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "github.com/paddock/paddock/cmd/paddock")
	if out, err := exec.Command(goTool, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("testutil: go %v: %v\n%s", args, err, out)
	}
	return path, nil
}

// DefaultProcessStartTimeout bounds how long a started paddock may take to serve, unless
// PaddockProcessOptions.StartTimeout says otherwise: recovery replays everything since the
// last snapshot, and a machine loaded by other test packages was seen to make a start of
// a few megabytes of data take ten seconds.
const DefaultProcessStartTimeout = 30 * time.Second

// PaddockProcessOptions say how to start a `paddock server` child process.
type PaddockProcessOptions struct {
	Binary  string   // the paddock binary, from BuildPaddock
	DataDir string   // --data-dir
	Port    int      // client port on 127.0.0.1; 0 picks a free port
	Fixed   bool     // if Port is taken, fail rather than pick another
	Env     []string // PADDOCK_SERVER_* settings, "NAME=value"; the test's own PADDOCK_ variables are dropped
	Args    []string // more arguments for `paddock server`, e.g. --zoo-cfg FILE (after the flags above: a repeated flag here wins)
	LogPath string   // the server's stdout and stderr; created or truncated
	// StartTimeout bounds the wait for the server to serve; zero means DefaultProcessStartTimeout.
	StartTimeout time.Duration
}

// PaddockProcess is one `paddock server` child process. The kernel kills it if the test
// binary dies first.
type PaddockProcess struct {
	Addr    string        // client address, 127.0.0.1:port
	Started time.Time     // just before the process was started
	Ready   time.Duration // how long it took to answer srvr as a serving server
	LogPath string        // its stdout and stderr: the server log, and any race report

	cmd          *exec.Cmd
	exited       chan struct{} // closed when the process has exited and waitErr is set
	waitErr      error
	startTimeout time.Duration
}

// errProcessPortTaken says that another process took the client port.
var errProcessPortTaken = errors.New("testutil: client port already in use")

// StartPaddockProcess starts the binary and waits until it serves. If another process took
// the port, it tries again, with a fresh port unless opts.Fixed. The process is killed when
// the test ends, if it has not been stopped before.
func StartPaddockProcess(tb testing.TB, opts PaddockProcessOptions) *PaddockProcess {
	tb.Helper()
	for attempt := 0; ; attempt++ {
		port := opts.Port
		if port == 0 || (attempt > 0 && !opts.Fixed) {
			var err error
			if port, err = FreePort(); err != nil {
				tb.Fatal(err)
			}
		}
		p, err := LaunchPaddockProcess(tb, opts, port)
		if err == nil {
			if err = p.WaitServing(); err == nil {
				p.Ready = time.Since(p.Started)
				return p
			}
			p.Kill()
		}
		if !errors.Is(err, errProcessPortTaken) || attempt == 3 {
			tb.Fatal(err)
		}
	}
}

// LaunchPaddockProcess starts the binary on port without waiting for it to serve. The
// process is killed when the test ends, if it has not been stopped before.
func LaunchPaddockProcess(tb testing.TB, opts PaddockProcessOptions, port int) (*PaddockProcess, error) {
	tb.Helper()
	p := &PaddockProcess{
		Addr:         net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		LogPath:      opts.LogPath,
		exited:       make(chan struct{}),
		startTimeout: opts.StartTimeout,
	}
	if p.startTimeout <= 0 {
		p.startTimeout = DefaultProcessStartTimeout
	}
	logFile, err := os.Create(opts.LogPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	args := append([]string{"server", "--data-dir", opts.DataDir, "--client-addr", p.Addr, "--admin-addr="}, opts.Args...)
	p.cmd = exec.Command(opts.Binary, args...)
	p.cmd.Env = append(environWithoutPaddock(), opts.Env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = childProcAttr()
	p.Started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("testutil: start paddock: %w", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(p.Kill)
	return p, nil
}

// environWithoutPaddock is the test's environment without PADDOCK_ variables, so that
// only what a test sets configures the server.
func environWithoutPaddock() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PADDOCK_") {
			env = append(env, kv)
		}
	}
	return env
}

// Port returns the client port.
func (p *PaddockProcess) Port() int {
	_, port, _ := net.SplitHostPort(p.Addr)
	n, _ := strconv.Atoi(port)
	return n
}

// PID returns the process id.
func (p *PaddockProcess) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited; ExitErr then says how.
func (p *PaddockProcess) Exited() <-chan struct{} { return p.exited }

// ExitErr returns the process's exit error; call it only after Exited is closed.
func (p *PaddockProcess) ExitErr() error { return p.waitErr }

// WaitServing polls srvr every 10 ms until the server answers it, the process exits, or
// the start timeout passes (from Started). paddock binds the client port only once
// recovery is done, so an answer means it serves. A server that overruns the timeout is
// sent SIGQUIT, so that the error shows every goroutine's stack.
func (p *PaddockProcess) WaitServing() error {
	deadline := p.Started.Add(p.startTimeout)
	for {
		select {
		case <-p.exited:
			tail := p.LogTail(30)
			if strings.Contains(tail, "address already in use") {
				return fmt.Errorf("%w: %s", errProcessPortTaken, p.Addr)
			}
			return fmt.Errorf("testutil: paddock exited during start-up (%v); log tail:\n%s", p.waitErr, tail)
		default:
		}
		if _, err := p.Zxid(); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			p.cmd.Process.Signal(syscall.SIGQUIT) // the Go runtime prints every goroutine's stack and exits
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
			}
			return fmt.Errorf("testutil: paddock at %s did not serve within %v of starting; its log and goroutines (SIGQUIT):\n%s",
				p.Addr, p.startTimeout, p.LogTail(300))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Zxid asks srvr for the server's last zxid.
func (p *PaddockProcess) Zxid() (int64, error) {
	out, err := FourLetterWord(p.Addr, "srvr", 2*time.Second)
	if err != nil {
		return 0, err
	}
	return ParseSrvrZxid(out)
}

// ParseSrvrZxid returns the zxid of srvr output's "Zxid: 0x..." line.
func ParseSrvrZxid(out string) (int64, error) {
	for line := range strings.SplitSeq(out, "\n") {
		if hex, ok := strings.CutPrefix(line, "Zxid: 0x"); ok {
			return strconv.ParseInt(strings.TrimSpace(hex), 16, 64)
		}
	}
	return 0, fmt.Errorf("testutil: no Zxid line in srvr output %q", out)
}

// Kill sends SIGKILL and waits for the process to be gone. Idempotent.
func (p *PaddockProcess) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL) // fails only if it has already exited
	<-p.exited
}

// Stop asks the server to shut down with SIGTERM and returns its exit error, or an error
// if it has not exited within timeout (it is then killed).
func (p *PaddockProcess) Stop(timeout time.Duration) error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("testutil: paddock did not exit within %v of SIGTERM", timeout)
	}
}

// LogTail returns the last n lines of the server's log, for failure messages.
func (p *PaddockProcess) LogTail(n int) string { return logTail(p.LogPath, n) }

// logTail returns the last n lines of the log file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// LogProblems returns the lines of the server's log that no run should have: race reports,
// panics, Go runtime errors and log records at level ERROR, with a few lines of context.
func (p *PaddockProcess) LogProblems() ([]string, error) {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return nil, err
	}
	var problems []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for after := 0; sc.Scan(); {
		line := sc.Text()
		switch {
		case strings.Contains(line, "WARNING: DATA RACE"), strings.HasPrefix(line, "panic:"),
			strings.HasPrefix(line, "fatal error:"):
			after = 40 // the report follows
			problems = append(problems, line)
		case strings.Contains(line, "level=ERROR"):
			problems = append(problems, line)
		case after > 0:
			after--
			problems = append(problems, line)
		}
	}
	return problems, sc.Err()
}
