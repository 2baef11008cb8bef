package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Child is a child process of a test — a paddock server, master or worker — whose
// stdout and stderr go to a log file. It runs with the test's environment minus its
// PADDOCK_ variables, plus the ones given. The kernel kills it if the test binary dies,
// and the test's cleanup kills it if it still runs.
type Child struct {
	LogPath string    // its stdout and stderr
	Started time.Time // just before the process was started

	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited and waitErr is set
	waitErr error
}

// StartChild starts binary with args, its output going to logPath (created or
// truncated).
func StartChild(tb testing.TB, logPath string, env []string, binary string, args ...string) (*Child, error) {
	tb.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	c := &Child{LogPath: logPath, exited: make(chan struct{})}
	c.cmd = exec.Command(binary, args...)
	c.cmd.Env = append(environWithoutPaddock(), env...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	c.cmd.SysProcAttr = childProcAttr()
	c.Started = time.Now()
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	tb.Cleanup(c.Kill)
	return c, nil
}

// PID returns the process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Exited is closed when the process has exited; ExitErr then says how.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// ExitErr returns the process's exit error; call it only after Exited is closed.
func (c *Child) ExitErr() error { return c.waitErr }

// Kill sends SIGKILL and waits for the process to be gone. Idempotent.
func (c *Child) Kill() {
	c.cmd.Process.Signal(syscall.SIGKILL) // fails only if it has already exited
	<-c.exited
}

// Stop asks the process to shut down with SIGTERM and returns its exit error, or an
// error if it has not exited within timeout (it is then killed).
func (c *Child) Stop(timeout time.Duration) error {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		return c.waitErr
	case <-time.After(timeout):
		c.Kill()
		return fmt.Errorf("testutil: %s did not exit within %v of SIGTERM", c.cmd.Args[0], timeout)
	}
}

// LogTail returns the last n lines of the log, for failure messages.
func (c *Child) LogTail(n int) string { return logTail(c.LogPath, n) }

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

// LogProblems returns the lines of the log that no run should have: race reports,
// panics, Go runtime errors and log records at level ERROR, with a few lines of context.
func (c *Child) LogProblems() ([]string, error) {
	b, err := os.ReadFile(c.LogPath)
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
