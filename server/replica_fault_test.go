package server

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/faultfs"
)

// freePort returns a port free on 127.0.0.1 now (internal/testutil imports this
// package).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// memberTestConfig is testConfig for the one member of an ensemble of one.
func memberTestConfig(t *testing.T) Config {
	t.Helper()
	peer, client := freePort(t), freePort(t)
	cfg := testConfig(t)
	cfg.ClientAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(client))
	cfg.ServerID = 1
	cfg.Ensemble = []string{fmt.Sprintf("1=127.0.0.1:%d:%d;%s", peer, peer, cfg.ClientAddr)}
	cfg.ElectionTimeout = 200 * time.Millisecond
	return cfg
}

// TestMemberFailStop is TestFailStop for an ensemble member on faultfs: when a write of
// its Raft log or of a snapshot fails, it stops, and a restart on what the disk kept
// (each crash mode) has every acknowledged write.
func TestMemberFailStop(t *testing.T) {
	for i, mode := range faultfs.CrashModes {
		for _, target := range []string{"*.wal", "snapshot.*"} {
			t.Run(mode.String()+" "+target, func(t *testing.T) {
				fsys := faultfs.New(uint64(i) + 11)
				cfg := memberTestConfig(t)
				cfg.DataDir = "/data"
				cfg.SnapCount = 20
				s := startTest(t, cfg, WithFS(fsys))
				waitFor(t, "the member serving", func() bool { return !s.Stats().NotServing })
				ops := faultfs.OpSync
				if target == "snapshot.*" {
					ops = faultfs.OpRename // the snapshot's commit: the member stops at its next log write
				}
				after := 60 // syncs of the log: well into the load
				if target == "snapshot.*" {
					after = 3 // renames of snapshots: the fourth commit
				}
				fault := fsys.Inject(faultfs.Rule{Ops: ops, Path: target, After: after, Halt: true})
				a := writeLoad(t, s.Addr().String(), 4, 150)
				select {
				case <-s.Done():
				case <-time.After(20 * time.Second):
					t.Fatal("the member kept running after its disk failed")
				}
				if fault.Fired() == 0 || !errors.Is(s.Err(), faultfs.ErrHalted) && !errors.Is(s.Err(), faultfs.ErrInjected) {
					t.Fatalf("fault fired %d times; member error %v", fault.Fired(), s.Err())
				}
				s.Close()
				fsys.Crash(mode)
				r := startTest(t, cfg, WithFS(fsys))
				// Entries whose commit was not yet on disk are committed again by the
				// new leader (itself) before the member serves.
				waitFor(t, "the restarted member serving", func() bool { return !r.Stats().NotServing })
				a.check(t, r)
				if a.acknowledged() == 0 {
					t.Fatal("nothing was acknowledged before the fault: the test proves nothing")
				}
			})
		}
	}
}
