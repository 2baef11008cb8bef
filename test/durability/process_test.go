package durability

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// startTimeout bounds how long a restarted server may take to serve: recovery replays
// everything since the last snapshot, and the data of these tests is a few megabytes.
// Starts take about a second with the race detector (the tests log the longest); the
// bound leaves room for a machine loaded by other test packages, which was seen to make
// one take ten.
const startTimeout = 30 * time.Second

// paddockProcess is one `paddock server` child process.
type paddockProcess struct {
	Addr    string        // client address, 127.0.0.1:port
	Started time.Time     // when the process was started
	Ready   time.Duration // how long it took to answer srvr as a serving server
	LogPath string        // its stderr: the server log, and any race report

	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited and waitErr is set
	waitErr error
}

// processOptions say how to start a server.
type processOptions struct {
	DataDir string
	Port    int      // 0 picks a free port
	Fixed   bool     // if Port is taken, fail rather than pick another
	Env     []string // PADDOCK_SERVER_* settings, "NAME=value"
	LogPath string   // created or truncated
}

// startPaddock starts the binary and waits until it serves. If another process took the
// port, it tries again, with a fresh port unless opts.Fixed.
func startPaddock(tb testing.TB, opts processOptions) *paddockProcess {
	tb.Helper()
	for attempt := 0; ; attempt++ {
		port := opts.Port
		if port == 0 || (attempt > 0 && !opts.Fixed) {
			var err error
			if port, err = testutil.FreePort(); err != nil {
				tb.Fatal(err)
			}
		}
		p, err := startPaddockOnce(tb, opts, port)
		if err == nil {
			return p
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			tb.Fatal(err)
		}
	}
}

var errPortTaken = errors.New("client port already in use")

func startPaddockOnce(tb testing.TB, opts processOptions, port int) (*paddockProcess, error) {
	tb.Helper()
	p, err := launchPaddock(tb, opts, port)
	if err != nil {
		return nil, err
	}
	if err := p.waitServing(); err != nil {
		p.Kill()
		return nil, err
	}
	p.Ready = time.Since(p.Started)
	return p, nil
}

// launchPaddock starts the binary on port without waiting for it to serve. The process is
// killed when the test ends, if it has not been stopped before.
func launchPaddock(tb testing.TB, opts processOptions, port int) (*paddockProcess, error) {
	tb.Helper()
	p := &paddockProcess{
		Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		LogPath: opts.LogPath,
		exited:  make(chan struct{}),
	}
	logFile, err := os.Create(opts.LogPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	p.cmd = exec.Command(paddockBinary(tb), "server", "--data-dir", opts.DataDir,
		"--client-addr", p.Addr, "--admin-addr=")
	p.cmd.Env = append(environWithoutPaddock(), opts.Env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = childProcAttr()
	p.Started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start paddock: %w", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(p.Kill)
	return p, nil
}

// Port returns the client port.
func (p *paddockProcess) Port() int {
	_, port, _ := net.SplitHostPort(p.Addr)
	n, _ := strconv.Atoi(port)
	return n
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

// waitServing polls srvr until the server answers it, the process exits, or startTimeout
// passes. paddock binds the client port only once recovery is done, so an answer means
// it serves.
func (p *paddockProcess) waitServing() error {
	deadline := p.Started.Add(startTimeout)
	for {
		select {
		case <-p.exited:
			tail := p.LogTail(30)
			if strings.Contains(tail, "address already in use") {
				return fmt.Errorf("%w: %s", errPortTaken, p.Addr)
			}
			return fmt.Errorf("paddock exited during start-up (%v); log tail:\n%s", p.waitErr, tail)
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
			return fmt.Errorf("paddock at %s did not serve within %v of starting; its log and goroutines (SIGQUIT):\n%s",
				p.Addr, startTimeout, p.LogTail(300))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Zxid asks srvr for the server's last zxid.
func (p *paddockProcess) Zxid() (int64, error) {
	out, err := testutil.FourLetterWord(p.Addr, "srvr", 2*time.Second)
	if err != nil {
		return 0, err
	}
	return parseSrvrZxid(out)
}

func parseSrvrZxid(out string) (int64, error) {
	for line := range strings.SplitSeq(out, "\n") {
		if hex, ok := strings.CutPrefix(line, "Zxid: 0x"); ok {
			return strconv.ParseInt(strings.TrimSpace(hex), 16, 64)
		}
	}
	return 0, fmt.Errorf("no Zxid line in srvr output %q", out)
}

// Kill sends SIGKILL and waits for the process to be gone. Idempotent.
func (p *paddockProcess) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL) // fails only if it has already exited
	<-p.exited
}

// Stop asks the server to shut down with SIGTERM and returns its exit error, or an error
// if it has not exited within timeout (it is then killed).
func (p *paddockProcess) Stop(timeout time.Duration) error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("paddock did not exit within %v of SIGTERM", timeout)
	}
}

// LogTail returns the last n lines of the server's log, for failure messages.
func (p *paddockProcess) LogTail(n int) string {
	b, err := os.ReadFile(p.LogPath)
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
func (p *paddockProcess) LogProblems() ([]string, error) {
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

// checkLog fails tb if the server's log shows a problem (see LogProblems), and copies the
// log to the test log when PADDOCK_TEST_LOG is set.
func (p *paddockProcess) checkLog(tb testing.TB, what string) {
	tb.Helper()
	if os.Getenv("PADDOCK_TEST_LOG") != "" {
		tb.Logf("%s: server log:\n%s", what, p.LogTail(1000))
	}
	problems, err := p.LogProblems()
	if err != nil {
		tb.Errorf("%s: read server log: %v", what, err)
		return
	}
	if len(problems) > 0 {
		tb.Errorf("%s: the server logged problems:\n%s", what, strings.Join(problems, "\n"))
	}
}
