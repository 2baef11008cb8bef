package server

import (
	"math/rand/v2"
	"testing"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		state, live uint64
		want        int
	}{
		{0, 0, maxGCPercent},
		{1 << 20, 1 << 20, maxGCPercent},   // a small tree: 40 MiB of headroom would be 4000 %
		{100 << 20, 100 << 20, 40},         // 40 MiB of headroom
		{1 << 30, 1 << 30, minGCPercent},   // a large tree: 15 % of it
		{10 << 30, 10 << 30, minGCPercent}, // never below the floor
		// 128 MiB of replies queued beside a small state: 40 MiB of headroom, not a
		// ratio of the queue too.
		{8 << 20, 136 << 20, 30},
		// beside a large one: 15 % of the state, expressed over the whole heap.
		{1 << 30, 1<<30 + 128<<20, 14},
		{0, 4 << 30, 1}, // a heap of queue alone: never GOGC 0, which would turn the collector off
	} {
		if got := gcPercentFor(c.state, c.live); got != c.want {
			t.Errorf("gcPercentFor(state %d MiB, live %d MiB) = %d, want %d", c.state>>20, c.live>>20, got, c.want)
		}
	}
}

// The soft memory limit is far above what GOGC lets the heap reach in the steady state,
// with or without a queue, so that it binds only when the live heap jumps; and no
// higher than the state twice, the slack and the queue's bound.
func TestMemoryLimitFor(t *testing.T) {
	const maxQueued = 128 << 20
	for _, state := range []uint64{0, 5 << 20, 256 << 20, 4 << 30} {
		for _, queued := range []uint64{0, 1 << 20, maxQueued} {
			live := state + queued
			limit := uint64(memoryLimitFor(state, maxQueued))
			if goal := live + live*uint64(gcPercentFor(state, live))/100; limit <= goal {
				t.Errorf("state %d MiB, queued %d MiB: limit %d MiB is not above GOGC's goal %d MiB",
					state>>20, queued>>20, limit>>20, goal>>20)
			}
			if limit > 2*state+memoryLimitSlack+maxQueued {
				t.Errorf("state %d MiB: limit %d MiB", state>>20, limit>>20)
			}
		}
	}
}

// The tuner's state is the live heap less the queue, the smallest over the last
// gcStateWindow tunings: a spike in one reading (a collection that counted replies
// allocated while it ran) moves neither GOGC nor the limit; a state that stays grown is
// followed once the window has passed. Seeded: random states and spikes.
func TestGCTunerState(t *testing.T) {
	const maxQueued = 32 << 20
	rng := rand.New(rand.NewPCG(31, 5))
	for range 200 {
		tuner := gcTuner{maxQueued: maxQueued}
		state := uint64(rng.IntN(512)) << 20
		var queued int64
		for i := range 3 * gcStateWindow {
			queued = int64(rng.IntN(maxQueued + 1))
			live := state + uint64(queued)
			if i%gcStateWindow == 2 {
				live += uint64(rng.IntN(256)) << 20 // a spike
			}
			_, limit := tuner.settings(live, queued)
			if i >= gcStateWindow-1 && limit != memoryLimitFor(state, maxQueued) {
				t.Fatalf("state %d MiB, tuning %d: limit %d MiB, want %d", state>>20, i, limit>>20,
					memoryLimitFor(state, maxQueued)>>20)
			}
		}
		grown := state + 64<<20
		for i := range gcStateWindow {
			_, limit := tuner.settings(grown+uint64(queued), queued)
			if want := memoryLimitFor(grown, maxQueued); i == gcStateWindow-1 && limit != want {
				t.Fatalf("a state grown to %d MiB: limit %d MiB after %d tunings, want %d", grown>>20, limit>>20, i+1, want>>20)
			}
		}
	}
}
