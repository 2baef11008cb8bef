package worker

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// ownGroup makes the process the leader of a new process group, so that everything it
// starts can be signalled at once.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends SIGTERM (SIGKILL if hard) to the process group p leads. A group
// that is already gone is not an error.
func signalGroup(p *os.Process, hard bool) error {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	if err := syscall.Kill(-p.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
