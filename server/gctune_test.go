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
