package server

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is still running once they are
// done: every goroutine a Server starts must end with its Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
