package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// preallocate makes f at least size bytes long, the new bytes reading as zeros.
// fallocate reserves the blocks without writing them; where the file system cannot,
// zeros are written instead.
func preallocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return fillZeros(f, size)
	}
	return err
}

// fdatasync flushes f's data and the metadata needed to read it back (its size), not
// its timestamps: in a preallocated segment that is the data alone.
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// syncDir makes creations, renames and removals in dir durable.
func syncDir(dir *os.File) error { return dir.Sync() }

// lockDir takes an exclusive, non-blocking lock on the open directory; it is released
// when dir is closed.
func lockDir(dir *os.File) error {
	err := unix.Flock(int(dir.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return fmt.Errorf("%w: %s", ErrLocked, dir.Name())
	}
	return err
}

// directIOFlag opens a file for writes around the page cache; directIOAlign is the
// alignment they need: a multiple of the logical block size of the disks of today.
const (
	directIOFlag  = unix.O_DIRECT
	directIOAlign = 4096
)

// clearDirectIO turns O_DIRECT off on an open file.
func clearDirectIO(f *os.File) error {
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(f.Fd(), unix.F_SETFL, flags&^unix.O_DIRECT)
	}
	return err
}
