package testutil

import (
	"fmt"
	"testing"
	"time"
)

// Eventually calls cond every tick until it returns true or timeout passes, and then fails
// tb with msgAndArgs (a format string and its arguments) if cond never held. It is the
// replacement for "sleep and hope": the wait is as short as the condition allows.
func Eventually(tb testing.TB, timeout, tick time.Duration, cond func() bool, msgAndArgs ...any) {
	tb.Helper()
	if WaitFor(timeout, tick, cond) {
		return
	}
	msg := "condition not met"
	if len(msgAndArgs) > 0 {
		if f, ok := msgAndArgs[0].(string); ok {
			msg = fmt.Sprintf(f, msgAndArgs[1:]...)
		}
	}
	tb.Fatalf("after %v: %s", timeout, msg)
}

// WaitFor polls cond every tick until it returns true (reporting true) or timeout passes
// (reporting false). It is Eventually for code without a testing.TB, such as TestMain.
func WaitFor(timeout, tick time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(tick)
	}
}
