package durability

import "syscall"

// childProcAttr makes the kernel kill a server process if the test binary dies without
// stopping it (a panic, a -timeout), so no paddock outlives its test run.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
