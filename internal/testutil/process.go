package testutil

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
	*Child               // LogPath: the server log, and any race report
	Addr   string        // client address, 127.0.0.1:port
	Ready  time.Duration // how long it took to answer srvr as a serving server

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
		startTimeout: opts.StartTimeout,
	}
	if p.startTimeout <= 0 {
		p.startTimeout = DefaultProcessStartTimeout
	}
	args := append([]string{"server", "--data-dir", opts.DataDir, "--client-addr", p.Addr, "--admin-addr="}, opts.Args...)
	var err error
	p.Child, err = StartChild(tb, opts.LogPath, opts.Env, opts.Binary, args...)
	if err != nil {
		return nil, fmt.Errorf("testutil: start paddock: %w", err)
	}
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
			if PortTakenAtStart(tail) {
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

// PortTakenAtStart reports whether the log of a paddock that exited during start-up says
// that a port it needed was in use. The warning of a taken admin port does not count:
// the server runs on without it.
func PortTakenAtStart(log string) bool {
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, "address already in use") && !strings.Contains(line, "admin port not served") {
			return true
		}
	}
	return false
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

// Binary builds cmd/paddock once per test binary, on first use, with the race detector
// when the tests have it: `go test -race ./...` is how CI runs them, and the
// instrumented packages are already in the build cache, so this costs a link. A
// package's TestMain calls Remove after m.Run.
type Binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Path returns the binary's path, building it first if needed.
func (b *Binary) Path(tb testing.TB) string {
	tb.Helper()
	b.once.Do(func() {
		start := time.Now()
		if b.dir, b.err = os.MkdirTemp("", "paddock-test-bin-"); b.err != nil {
			return
		}
		b.path, b.err = BuildPaddock(b.dir, RaceEnabled)
		if b.err == nil {
			tb.Logf("built paddock (race detector: %v) in %v", RaceEnabled, time.Since(start).Round(time.Millisecond))
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// Remove deletes the binary.
func (b *Binary) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// Main runs a test binary's tests (a TestMain's body) and removes b afterwards.
func (b *Binary) Main(m *testing.M) {
	code := m.Run()
	b.Remove()
	os.Exit(code)
}
