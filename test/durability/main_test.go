package durability

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// paddock is the binary under test, built on first use.
var paddock testutil.Binary

func TestMain(m *testing.M) {
	code := m.Run()
	paddock.Remove()
	os.Exit(code)
}

// paddockBinary returns the binary under test. It has the race detector when the tests
// do: a data race in recovery or in a half-finished shutdown is exactly what a crash test
// can provoke, and the slower server still does a few thousand durable writes a second.
func paddockBinary(tb testing.TB) string { return paddock.Path(tb) }

// testSeed returns the seed of a test's random choices, PADDOCK_DURABILITY_SEED if set,
// and logs it so that a failure can be replayed.
func testSeed(tb testing.TB) uint64 {
	tb.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PADDOCK_DURABILITY_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			tb.Fatalf("PADDOCK_DURABILITY_SEED=%q: want an unsigned integer", s)
		}
		seed = v
	}
	tb.Logf("seed %d (replay with PADDOCK_DURABILITY_SEED=%d)", seed, seed)
	return seed
}

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
