package durability

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// binDir holds the paddock binary built for this run; TestMain removes it.
var binDir string

var build struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "paddock-durability-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, "durability:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// paddockBinary builds cmd/paddock on first use and returns its path. It is built with
// -race when the tests are: `go test -race ./...` is how CI runs them, and a data race in
// recovery or in a half-finished shutdown is exactly what a crash test can provoke. The
// race-instrumented packages are already in the build cache from compiling the tests, so
// this costs a link, and the slower server still does a few thousand durable writes a second.
func paddockBinary(tb testing.TB) string {
	tb.Helper()
	build.once.Do(func() {
		start := time.Now()
		build.path, build.err = testutil.BuildPaddock(binDir, testutil.RaceEnabled)
		if build.err == nil {
			tb.Logf("built paddock (race detector: %v) in %v", testutil.RaceEnabled, time.Since(start).Round(time.Millisecond))
		}
	})
	if build.err != nil {
		tb.Fatal(build.err)
	}
	return build.path
}

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
