//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package admin

import (
	"os"
	"syscall"
)

// fileDescriptors returns the process's open descriptors and its RLIMIT_NOFILE soft limit,
// the figures of ZooKeeper's open/max_file_descriptor_count (which it also only reports on
// Unix).
func fileDescriptors() (open, limit int64, ok bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if f, err := os.Open(dir); err == nil {
			names, err := f.Readdirnames(-1)
			f.Close()
			if err == nil {
				// The descriptor that read the directory is listed too.
				return int64(len(names)) - 1, int64(rl.Cur), true
			}
		}
	}
	return 0, 0, false
}
