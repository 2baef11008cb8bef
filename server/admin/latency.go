package admin

import (
	"math"
	"sync/atomic"
)

// avgMinMax is ZooKeeper's AvgMinMaxCounter: count, sum, min and max of millisecond values,
// lock-free. As in ZooKeeper, a reset racing an observation may leave the figures slightly
// off for that one sample; monitoring figures need not be exact. Call reset before first use.
type avgMinMax struct {
	count, sum atomic.Int64
	min, max   atomic.Int64 // min is math.MaxInt64 while count is 0
}

func (s *avgMinMax) observe(ms int64) {
	s.count.Add(1)
	s.sum.Add(ms)
	for cur := s.min.Load(); ms < cur && !s.min.CompareAndSwap(cur, ms); cur = s.min.Load() {
	}
	for cur := s.max.Load(); ms > cur && !s.max.CompareAndSwap(cur, ms); cur = s.max.Load() {
	}
}

func (s *avgMinMax) reset() {
	s.count.Store(0)
	s.sum.Store(0)
	s.min.Store(math.MaxInt64)
	s.max.Store(0)
}

type amm struct {
	count, sum, min, max int64
	avg                  float64 // rounded half up to 4 decimals, as ZooKeeper's getAvg
}

func (s *avgMinMax) snapshot() amm {
	r := amm{count: s.count.Load(), sum: s.sum.Load(), min: s.min.Load(), max: s.max.Load()}
	if r.min == math.MaxInt64 {
		r.min = 0
	}
	if r.count > 0 {
		r.avg = round4(float64(r.sum) / float64(r.count))
	}
	return r
}

// appendSummary appends the avg_, min_, max_, cnt_ and sum_ values of a ZooKeeper summary
// metric, in the order mntr prints them.
func (s *avgMinMax) appendSummary(o object, name string) object {
	r := s.snapshot()
	return append(o,
		field{"avg_" + name, r.avg},
		field{"min_" + name, r.min},
		field{"max_" + name, r.max},
		field{"cnt_" + name, r.count},
		field{"sum_" + name, r.sum})
}

// counter is a resettable event count.
type counter struct{ n atomic.Int64 }

func (c *counter) inc()        { c.n.Add(1) }
func (c *counter) load() int64 { return c.n.Load() }
func (c *counter) reset()      { c.n.Store(0) }
