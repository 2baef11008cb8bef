package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	// Every bucket's values map back to it, buckets tile the range without gaps, and a
	// bucket is at most 1/128 of its values wide.
	prevHigh := int64(-1)
	for i := range histBuckets {
		high := bucketHigh(i)
		low := prevHigh + 1
		if bucketOf(low) != i || bucketOf(high) != i {
			t.Fatalf("bucket %d = [%d, %d]: bucketOf gives %d and %d", i, low, high, bucketOf(low), bucketOf(high))
		}
		if width := high - low + 1; low >= histLinear && width*histHalf > low {
			t.Fatalf("bucket %d = [%d, %d] is wider than 1/128 of its values", i, low, high)
		}
		prevHigh = high
	}
	if prevHigh != 1<<histMaxBits-1 {
		t.Errorf("the last bucket ends at %d, want 2^%d-1", prevHigh, histMaxBits)
	}
	if bucketOf(1<<60) != histBuckets-1 {
		t.Error("huge values do not land in the last bucket")
	}
}

func TestHistogramQuantilesMatchSortedValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 100, 10007} {
		h := NewHistogram()
		vals := make([]int64, n)
		for i := range vals {
			// log-uniform from 1 µs to 1 s, as latencies spread
			vals[i] = int64(1000 * float64(1e6) * r.Float64() * r.Float64() * r.Float64())
			h.Record(vals[i])
		}
		slices.Sort(vals)
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
			rank := max(int(q*float64(n)+0.999999999), 1)
			exact := vals[rank-1]
			got := int64(h.Quantile(q))
			if got < exact || float64(got-exact) > float64(exact)/histHalf+1 {
				t.Errorf("n %d q %v: got %d, exact %d", n, q, got, exact)
			}
		}
		s := h.Summary()
		if s.Min != time.Duration(vals[0]) || s.Max != time.Duration(vals[n-1]) || s.Count != int64(n) {
			t.Errorf("n %d: summary %+v, want min %d max %d", n, s, vals[0], vals[n-1])
		}
	}
}

func TestHistogramMerge(t *testing.T) {
	a, b, all := NewHistogram(), NewHistogram(), NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		v := i * 997 % 5000 * 1000
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
		all.Record(v)
	}
	merged := NewHistogram()
	merged.Merge(a)
	merged.Merge(b)
	merged.Merge(NewHistogram())
	if merged.Summary() != all.Summary() {
		t.Errorf("merged %+v, want %+v", merged.Summary(), all.Summary())
	}
	if (&Histogram{}).Summary() != (Summary{}) {
		t.Error("an empty histogram has a non-zero summary")
	}
}
