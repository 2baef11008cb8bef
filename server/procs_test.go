package server

import (
	"runtime"
	"testing"
)

func TestProcsFor(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	if got := ProcsFor(3); got != 3 {
		t.Errorf("ProcsFor(3) = %d, want the configured 3", got)
	}
	want := runtime.NumCPU() + spareProcs
	if runtime.GOMAXPROCS(0) < runtime.NumCPU() { // a CPU limit: keep Go's default
		want = runtime.GOMAXPROCS(0)
	}
	if got := ProcsFor(0); got != want {
		t.Errorf("ProcsFor(0) = %d, want %d (%d cores)", got, want, runtime.NumCPU())
	}
	t.Setenv("GOMAXPROCS", "5")
	if got := ProcsFor(3); got != runtime.GOMAXPROCS(0) {
		t.Errorf("with GOMAXPROCS set, ProcsFor(3) = %d, want the runtime's %d", got, runtime.GOMAXPROCS(0))
	}
}
