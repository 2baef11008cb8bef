// Package backoff is the one retry policy of paddock's services: exponential backoff
// with jitter, capped. Wherever a service tries again something that failed — a job
// the master could not fire, an outcome a worker could not record, a read that a
// replicator or a collector could not make — it waits Policy.Delay after each failure
// in a row, so that no failure, however persistent, turns into a loop that spins.
//
// Delay is a pure function of the number of failures and a number drawn in [0,1), so
// that it is tested as one; Retry keeps the count and the draws for one item.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy says how long to wait after failures: Base after the first, twice as long
// after each further one, never more than Cap.
type Policy struct {
	Base time.Duration
	Cap  time.Duration
}

// Default is the policy the services use for an item that failed: from half a second
// up to a minute, so that a failure that lasts costs one try a minute and one that
// clears (the item is fixed) is seen soon.
var Default = Policy{Base: 500 * time.Millisecond, Cap: time.Minute}

// Delay returns the wait after the n-th failure in a row (n ≥ 1; below 1 counts as 1):
// d = min(Base·2^(n−1), Cap), of which the upper half is drawn from u ∈ [0,1): d/2 +
// u·d/2 ("equal jitter"; u is clamped to [0,1], NaN taken as 0). The floor of d/2
// bounds how often a failure is tried again — at most log₂(2T/Base)+1 tries in a time T
// while d grows, one per Cap/2 after — and the drawn half keeps the services that
// failed together from trying again together. A Policy with Base ≤ 0 waits nothing; a
// Cap below Base is taken as Base.
func (p Policy) Delay(n int, u float64) time.Duration {
	if p.Base <= 0 {
		return 0
	}
	limit := max(p.Cap, p.Base)
	d := p.Base
	for i := 1; i < n && d < limit; i++ {
		if d > limit/2 {
			d = limit // doubling would pass the cap (and could overflow)
			break
		}
		d *= 2
	}
	switch {
	case !(u >= 0): // below 0, or NaN
		u = 0
	case u > 1:
		u = 1
	}
	return d/2 + time.Duration(u*float64(d/2))
}

// Retry is the backoff state of one item: how many times in a row it failed, and the
// source of the jitter. The zero Retry uses Default and the process's random source;
// it is not safe for concurrent use.
type Retry struct {
	Policy Policy     // Default if zero
	Rand   *rand.Rand // the jitter's source; nil: math/rand/v2's global one
	n      int
}

// Fail counts a failure and returns how long to wait before the next try.
func (r *Retry) Fail() time.Duration {
	r.n++
	u := rand.Float64()
	if r.Rand != nil {
		u = r.Rand.Float64()
	}
	p := r.Policy
	if p == (Policy{}) {
		p = Default
	}
	return p.Delay(r.n, u)
}

// Reset forgets the failures: the item succeeded, or changed.
func (r *Retry) Reset() { r.n = 0 }

// Failures returns the failures in a row counted since the last Reset.
func (r *Retry) Failures() int { return r.n }

// Sleep waits d, or until ctx ends: false if it ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
