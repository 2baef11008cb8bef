//go:build !linux

package worker

import (
	"errors"
	"os"
	"os/exec"
)

// ownGroup does nothing: process groups are handled on Linux only; elsewhere a task's
// own process is signalled, not what it started.
func ownGroup(cmd *exec.Cmd) {}

// signalGroup kills p: without process groups there is no polite stop to ask for.
func signalGroup(p *os.Process, hard bool) error {
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// signalOf names the signal that ended the process, where the platform says.
func signalOf(ps *os.ProcessState) string {
	if ps != nil && !ps.Exited() {
		return "killed"
	}
	return ""
}
