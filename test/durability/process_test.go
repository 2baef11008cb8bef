package durability

import (
	"os"
	"strings"
	"testing"

	"github.com/paddock/paddock/internal/testutil"
)

// startPaddock starts the binary under test (paddockBinary) as opts say and waits until
// it serves.
func startPaddock(tb testing.TB, opts testutil.PaddockProcessOptions) *testutil.PaddockProcess {
	tb.Helper()
	opts.Binary = paddockBinary(tb)
	return testutil.StartPaddockProcess(tb, opts)
}

// launchPaddock starts the binary under test on port without waiting for it to serve.
func launchPaddock(tb testing.TB, opts testutil.PaddockProcessOptions, port int) (*testutil.PaddockProcess, error) {
	tb.Helper()
	opts.Binary = paddockBinary(tb)
	return testutil.LaunchPaddockProcess(tb, opts, port)
}

// checkLog fails tb if the server's log shows a problem (see LogProblems), and copies the
// log to the test log when PADDOCK_TEST_LOG is set.
func checkLog(tb testing.TB, p *testutil.PaddockProcess, what string) {
	tb.Helper()
	if os.Getenv("PADDOCK_TEST_LOG") != "" {
		tb.Logf("%s: server log:\n%s", what, p.LogTail(1000))
	}
	problems, err := p.LogProblems()
	if err != nil {
		tb.Errorf("%s: read server log: %v", what, err)
		return
	}
	if len(problems) > 0 {
		tb.Errorf("%s: the server logged problems:\n%s", what, strings.Join(problems, "\n"))
	}
}
