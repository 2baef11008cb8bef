package server

import "testing"

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, maxGCPercent},
		{1 << 20, maxGCPercent},  // a small tree: 40 MiB of headroom would be 4000 %
		{100 << 20, 40},          // 40 MiB of headroom
		{1 << 30, minGCPercent},  // a large tree: 15 % of it
		{10 << 30, minGCPercent}, // never below the floor
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

func TestMemoryLimitFor(t *testing.T) {
	for _, live := range []uint64{0, 5 << 20, 256 << 20, 4 << 30} {
		limit := uint64(memoryLimitFor(live))
		// Far above what GOGC lets the heap reach in the steady state: it must not bind.
		if goal := live + live*uint64(gcPercentFor(live))/100; limit <= goal {
			t.Errorf("live %d MiB: limit %d MiB is not above GOGC's goal %d MiB", live>>20, limit>>20, goal>>20)
		}
		if limit > 2*live+memoryLimitSlack {
			t.Errorf("live %d MiB: limit %d MiB", live>>20, limit>>20)
		}
	}
}
