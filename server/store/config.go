package store

import "fmt"

const (
	// DefaultSegmentSize is the size each segment file is preallocated to: ZooKeeper's
	// preAllocSize default, large enough that rotations (and their fsyncs) are rare.
	DefaultSegmentSize = 64 << 20
	// MinSegmentSize and MaxSegmentSize bound Config.SegmentSize. The upper bound keeps
	// every record start offset, and so every sync mark, within a uint32.
	MinSegmentSize = 1 << 10
	MaxSegmentSize = 1 << 30
)

// Config is the configuration of a write-ahead log. It is immutable after Open.
type Config struct {
	// Dir holds the segment files. It is created if missing. Files in it that are not
	// segments are left alone, but no other process may open the same Dir as a log:
	// Open takes an exclusive lock on it.
	Dir string
	// SegmentSize is the size, in bytes, each new segment file is preallocated to, and
	// the size at which the log rotates to a new segment. A record larger than a segment
	// gets a segment of its own, grown to fit.
	SegmentSize int64
	// ForceSync makes Sync fdatasync the segment (zoo.cfg forceSync). Turning it off
	// keeps a write safe from a crash of the process but not from a crash of the
	// machine; it exists for tests and benchmarks.
	ForceSync bool
	// FS is the file system the log lives on; nil means the operating system's.
	FS FS
	// PrepareSegments zero-fills the next segment in the background while the current
	// one fills (prepare.go says why). Off, segments are allocated with fallocate when
	// the log rotates; tests that count file operations leave it off to stay exact.
	PrepareSegments bool
}

// DefaultConfig returns the defaults: 64 MiB segments under data/log, fsync on.
// The server sets Dir from dataLogDir or dataDir.
func DefaultConfig() Config {
	return Config{
		Dir:             "data/log",
		SegmentSize:     DefaultSegmentSize,
		ForceSync:       true,
		PrepareSegments: true,
	}
}

// Validate reports the first setting that is out of range.
func (c Config) Validate() error {
	if c.Dir == "" {
		return fmt.Errorf("store: config: dir %q: must name a directory", c.Dir)
	}
	if c.SegmentSize < MinSegmentSize || c.SegmentSize > MaxSegmentSize {
		return fmt.Errorf("store: config: segment size %d: must be between %d and %d bytes",
			c.SegmentSize, MinSegmentSize, MaxSegmentSize)
	}
	return nil
}
