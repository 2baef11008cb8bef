package bench

import (
	"math/bits"
	"time"
)

// Histogram is a log-linear histogram of durations in nanoseconds, in the manner of
// HdrHistogram: values below 256 ns each have a bucket, and every power-of-two range
// above is split into 128 equal buckets, so a recorded value is known to within 1/128
// (0.8 %) of itself. Values up to 2^43 ns (about 2.4 hours) are kept apart; larger ones
// share the last bucket. Count, sum, min and max are exact.
//
// Record is an array increment: no allocation, no lock. A Histogram is not safe for
// concurrent use; each session records into its own and they are merged at the end.
type Histogram struct {
	counts   [histBuckets]int64
	count    int64
	sum      int64
	min, max int64
}

const (
	histSubBits = 7                                          // 2^7 = 128 buckets per power of two
	histHalf    = 1 << histSubBits                           // 128
	histLinear  = 2 * histHalf                               // values below 256 have a bucket each
	histMaxBits = 43                                         // values of up to 43 bits are distinguished
	histBuckets = (histMaxBits - histSubBits + 1) * histHalf // 4736; 2^43-1 falls in the last
)

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{} }

// bucketOf returns the index of the bucket holding v (v >= 0).
func bucketOf(v int64) int {
	shift := bits.Len64(uint64(v)) - (histSubBits + 1)
	if shift <= 0 {
		return int(v)
	}
	i := shift*histHalf + int(v>>shift)
	if i >= histBuckets {
		return histBuckets - 1
	}
	return i
}

// bucketHigh returns the largest value that falls in bucket i.
func bucketHigh(i int) int64 {
	if i < histLinear {
		return int64(i)
	}
	shift := i/histHalf - 1
	sub := int64(i - shift*histHalf) // in [128, 256)
	return (sub+1)<<shift - 1
}

// Record adds one duration, in nanoseconds. Negative values count as zero.
func (h *Histogram) Record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.counts[bucketOf(ns)]++
	if h.count == 0 || ns < h.min {
		h.min = ns
	}
	if ns > h.max {
		h.max = ns
	}
	h.count++
	h.sum += ns
}

// Merge adds every value recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.count == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.count == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.count += o.count
	h.sum += o.sum
}

// Quantile returns the value at quantile q in [0, 1]: the upper edge of the bucket holding
// the ceil(q×count)-th smallest value, clamped to [min, max]. It is therefore never below
// the true quantile and at most 0.8 % above it, and it grows with q up to Max.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.count == 0 {
		return 0
	}
	rank := int64(q*float64(h.count) + 0.999999999)
	rank = min(max(rank, 1), h.count)
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(max(bucketHigh(i), h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

// Summary returns the count, mean, min, max and the usual percentiles.
func (h *Histogram) Summary() Summary {
	s := Summary{Count: h.count}
	if h.count == 0 {
		return s
	}
	s.Mean = time.Duration(h.sum / h.count)
	s.Min = time.Duration(h.min)
	s.P50 = h.Quantile(0.50)
	s.P90 = h.Quantile(0.90)
	s.P99 = h.Quantile(0.99)
	s.P999 = h.Quantile(0.999)
	s.Max = time.Duration(h.max)
	return s
}

// Summary describes a latency distribution. Durations are in nanoseconds in JSON.
type Summary struct {
	Count int64         `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	Min   time.Duration `json:"min_ns"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
	Max   time.Duration `json:"max_ns"`
}
