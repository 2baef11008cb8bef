package quorum

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/faultfs"
)

// TestMemberCrashKeepsAcknowledged crashes a member, on faultfs, at a random point of
// its WAL writes or snapshot writes, restarts it with an empty state machine, and
// checks that every proposal Propose acknowledged is applied again, from the snapshot
// and the log after it.
func TestMemberCrashKeepsAcknowledged(t *testing.T) {
	ops := []faultfs.Op{faultfs.OpWrite, faultfs.OpSync, faultfs.OpRename, faultfs.OpSyncDir}
	for seed := uint64(1); seed <= 6; seed++ {
		mode := faultfs.CrashModes[seed%uint64(len(faultfs.CrashModes))]
		t.Run(fmt.Sprintf("seed %d %s", seed, mode), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			fsys := faultfs.New(seed)
			c := newClusterWith(t, 1, 0, func(c *cluster) { c.snapEvery, c.keep, c.fs = 6, 2, fsys })
			m := c.members[1]
			var acked []string
			for round := range 3 {
				c.leader(5 * time.Second)
				fsys.Inject(faultfs.Rule{Ops: ops[rng.IntN(len(ops))], After: 1 + rng.IntN(20), Count: 1, Torn: true, Halt: true})
				for i := 0; ; i++ {
					data := fmt.Sprintf("r%d-%d", round, i)
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					_, err := m.node.Propose(ctx, []byte(data))
					cancel()
					if err != nil {
						break
					}
					acked = append(acked, data)
					if i > 1000 {
						t.Fatal("the fault never stopped the member")
					}
				}
				if err := m.node.Close(); err != nil && !errors.Is(err, faultfs.ErrHalted) {
					t.Logf("close after the fault: %v", err)
				}
				m.node = nil
				fsys.Crash(mode)
				m.mu.Lock()
				m.records = nil // everything comes back from the member's disk
				m.mu.Unlock()
				c.start(1, nil)
				c.leader(5 * time.Second)
				got := map[string]bool{}
				eventually(t, 5*time.Second, func() error {
					clear(got)
					for _, r := range m.snapshot() {
						got[r.data] = true
					}
					for _, d := range acked {
						if !got[d] {
							return fmt.Errorf("round %d: acknowledged %q lost (%d of %d applied)", round, d, len(got), len(acked))
						}
					}
					return nil
				})
			}
			if m.restoreCount() == 0 {
				t.Fatal("no restart restored a snapshot: the snapshot writes were not tested")
			}
		})
	}
}
