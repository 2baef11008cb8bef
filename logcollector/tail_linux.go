//go:build linux

package logcollector

import (
	"os"
	"syscall"
)

// inodeOf returns the inode number of the file fi describes, 0 if unknown.
func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
