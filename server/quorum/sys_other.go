//go:build !linux

package quorum

import "os"

// fdatasync falls back to a full fsync where fdatasync is not wired up.
func fdatasync(f *os.File) error { return f.Sync() }
