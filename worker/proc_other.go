//go:build !linux

package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
)

// runner starts each run as a plain child process. Outside Linux there is no
// subreaper, no parent-death signal and no cgroup: a task's first process is killed,
// not what it started, and a worker killed outright leaves its tasks running.
type runner struct {
	logger  *slog.Logger
	metrics *procMetrics
}

// newRunner refuses run_as, which needs Linux's credentials handling here, and a
// worker running as root without allow_root.
func newRunner(cfg Config, key string, m *procMetrics, logger *slog.Logger) (*runner, error) {
	if cfg.RunAs != "" {
		return nil, fmt.Errorf("worker: run_as = %s: tasks run as another user on Linux only; remove run_as", cfg.RunAs)
	}
	if _, err := checkIdentity(identity{}, "", cfg.AllowRoot, os.Geteuid(), os.Getegid()); err != nil {
		return nil, err
	}
	return &runner{logger: logger, metrics: m}, nil
}

func (r *runner) setUp() error {
	r.metrics.setMode(killModeGroup)
	r.logger.Info("task processes are killed one by one: not Linux", "mode", killModeGroup)
	return nil
}

func (r *runner) sweep()            {}
func (r *runner) userEnv() []string { return nil }

// start runs l's command as a child.
func (r *runner) start(l launch) (taskProc, error) {
	cmd := &exec.Cmd{Path: l.path, Args: l.args, Dir: l.dir, Env: l.env, Stdout: l.out, Stderr: l.out}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		c.end = taskEnd{exitCode: cmd.ProcessState.ExitCode(), err: err}
		if !cmd.ProcessState.Exited() {
			c.end.signal = "killed"
		}
		close(c.done)
	}()
	return c, nil
}

// child is a run as a plain child process.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
	end  taskEnd
}

func (c *child) PID() int              { return c.cmd.Process.Pid }
func (c *child) Done() <-chan struct{} { return c.done }
func (c *child) End() taskEnd          { return c.end }

// Signal kills the process: without process groups there is no polite stop to ask for.
func (c *child) Signal(hard bool) error {
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// SupervisorMain does nothing outside Linux, where tasks run without a supervisor.
func SupervisorMain() {}
