package worker

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs a task supervisor if the binary was started as one (the workers under
// test start this binary as theirs); otherwise it runs the tests and fails them if any
// goroutine they started outlives them.
func TestMain(m *testing.M) {
	SupervisorMain()
	goleak.VerifyTestMain(m)
}
