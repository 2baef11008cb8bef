//go:build !linux

package store

import (
	"errors"
	"os"
)

// preallocate makes f at least size bytes long by writing zeros.
func preallocate(f *os.File, size int64) error { return fillZeros(f, size) }

// fdatasync falls back to a full fsync where fdatasync is not wired up.
func fdatasync(f *os.File) error { return f.Sync() }

// syncDir makes creations, renames and removals in dir durable where the platform
// allows syncing a directory; elsewhere it is a no-op.
func syncDir(dir *os.File) error {
	_ = dir.Sync() // Windows and some others refuse: nothing more can be done there.
	return nil
}

// lockDir is a no-op off Linux: two servers on one log directory are not detected.
func lockDir(dir *os.File) error { return nil }

// directIOFlag is 0 off Linux: snapshots are written through the page cache.
const (
	directIOFlag  = 0
	directIOAlign = 0
)

func clearDirectIO(f *os.File) error { return errors.ErrUnsupported }
