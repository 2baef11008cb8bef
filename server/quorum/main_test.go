package quorum

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a Node, a
// Transport or an Inmem link that was not closed, or one whose Close left work behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
