package testutil

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Seed returns the seed of a test's random choices: the environment variable env if
// set, else the clock. It logs it, so that a failure can be replayed with env.
func Seed(tb testing.TB, env string) uint64 {
	tb.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(env); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			tb.Fatalf("%s=%q: want an unsigned integer", env, s)
		}
		seed = v
	}
	tb.Logf("seed %d (replay with %s=%d)", seed, env, seed)
	return seed
}

// ArtifactDir is where a test keeps files for people to look at (screenshots,
// drawings of failed histories): PADDOCK_ARTIFACTS, made if missing and kept (make
// test sets it, for CI), else a temp dir of the test.
func ArtifactDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("PADDOCK_ARTIFACTS")
	if dir == "" {
		return tb.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("PADDOCK_ARTIFACTS = %s: %v", dir, err)
	}
	return dir
}
