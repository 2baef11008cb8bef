package durability

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/paddock/paddock/internal/testutil"
)

// paddock is the binary under test, built on first use.
var paddock testutil.Binary

func TestMain(m *testing.M) { paddock.Main(m) }

// paddockBinary returns the binary under test. It has the race detector when the tests
// do: a data race in recovery or in a half-finished shutdown is exactly what a crash test
// can provoke, and the slower server still does a few thousand durable writes a second.
func paddockBinary(tb testing.TB) string { return paddock.Path(tb) }

// newRand returns a generator for one stream of choices of a seeded test.
func newRand(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// envInt returns the integer in environment variable name, or def if it is unset.
func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		tb.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}
