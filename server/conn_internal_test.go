package server

import "testing"

func TestRequestWeight(t *testing.T) {
	for _, tc := range []struct {
		size int
		want int64
	}{{0, 1}, {100, 1}, {requestUnit - 1, 1}, {requestUnit, 2}, {1 << 20, 17}} {
		if got := requestWeight(tc.size); got != tc.want {
			t.Errorf("requestWeight(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}
