package backoff

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// TestDelayBounds: for every failure count, the delay lies in [d/2, d] where d is
// Base·2^(n−1) capped at Cap; u = 0 gives d/2, u near 1 gives d; u outside [0,1) is
// clamped. Boundary policies and counts included.
func TestDelayBounds(t *testing.T) {
	policies := []Policy{
		Default,
		{Base: time.Millisecond, Cap: time.Second},
		{Base: time.Second, Cap: time.Second},
		{Base: time.Second, Cap: time.Millisecond}, // a cap below the base is the base
		{Base: 1, Cap: math.MaxInt64},
		{Base: math.MaxInt64 / 3, Cap: math.MaxInt64},
	}
	counts := []int{math.MinInt, -1, 0, 1, 2, 3, 10, 62, 63, 64, 1000, math.MaxInt}
	for _, p := range policies {
		for _, n := range counts {
			want := p.Base
			limit := max(p.Cap, p.Base)
			for i := 1; i < n && want < limit; i++ {
				if want > limit/2 {
					want = limit
					break
				}
				want *= 2
			}
			for _, u := range []float64{-1, 0, 0.25, 0.5, 0.999999, 1, 2, math.NaN()} {
				got := p.Delay(n, u)
				if got < want/2 || got > want || got > limit || got < 0 {
					t.Errorf("%+v.Delay(%d, %v) = %v, want within [%v, %v]", p, n, u, got, want/2, want)
				}
			}
			if got := p.Delay(n, 0); got != want/2 {
				t.Errorf("%+v.Delay(%d, 0) = %v, want %v (the floor)", p, n, got, want/2)
			}
		}
	}
	if d := (Policy{}).Delay(5, 0.5); d != 0 {
		t.Errorf("a zero policy waits %v, want 0", d)
	}
}

// TestDelayProperties: over seeded random policies, counts and draws, the delay never
// falls as failures grow (for a given draw), never passes the cap, and the sum of the
// floors bounds how many tries fit in a time: at most log₂(2T/Base)+1 while the delay
// grows, then one per Cap/2.
func TestDelayProperties(t *testing.T) {
	seed := testutil.Seed(t, "PADDOCK_BACKOFF_SEED")
	rnd := rand.New(rand.NewPCG(seed, 0))
	const seeds = 20000
	for range seeds {
		p := Policy{Base: time.Duration(1 + rnd.Int64N(int64(10*time.Second))), Cap: time.Duration(rnd.Int64N(int64(time.Hour)))}
		u := rnd.Float64()
		prev := time.Duration(0)
		for n := 1; n <= 80; n++ {
			d := p.Delay(n, u)
			if d < prev {
				t.Fatalf("%+v: Delay(%d, %v) = %v after %v: it fell", p, n, u, d, prev)
			}
			if d > max(p.Cap, p.Base) {
				t.Fatalf("%+v: Delay(%d, %v) = %v past the cap", p, n, u, d)
			}
			prev = d
		}
		// Tries within T: each waits at least the floor.
		T := time.Duration(rnd.Int64N(int64(24 * time.Hour)))
		tries, spent := 1, time.Duration(0)
		for n := 1; ; n++ {
			spent += p.Delay(n, rnd.Float64())
			if spent > T {
				break
			}
			tries++
		}
		limit := max(p.Cap, p.Base)
		growth := math.Log2(2*float64(limit)/float64(p.Base)) + 2
		bound := int(growth) + int(T/(limit/2)) + 1
		if tries > bound {
			t.Fatalf("%+v: %d tries in %v, want at most %d", p, tries, T, bound)
		}
	}
}

// TestRetry: Fail counts and returns the policy's delay for the count with the seeded
// draw; Reset starts over; the zero Retry uses Default.
func TestRetry(t *testing.T) {
	seed := testutil.Seed(t, "PADDOCK_BACKOFF_SEED")
	p := Policy{Base: 10 * time.Millisecond, Cap: 80 * time.Millisecond}
	r := Retry{Policy: p, Rand: rand.New(rand.NewPCG(seed, 1))}
	mirror := rand.New(rand.NewPCG(seed, 1))
	for n := 1; n <= 8; n++ {
		if got, want := r.Fail(), p.Delay(n, mirror.Float64()); got != want {
			t.Fatalf("failure %d: %v, want %v", n, got, want)
		}
		if r.Failures() != n {
			t.Fatalf("Failures() = %d, want %d", r.Failures(), n)
		}
	}
	r.Reset()
	if r.Failures() != 0 {
		t.Fatalf("after Reset: %d failures", r.Failures())
	}
	if d := r.Fail(); d < 5*time.Millisecond || d > 10*time.Millisecond {
		t.Fatalf("first failure after Reset waits %v, want within [5ms, 10ms]", d)
	}
	var z Retry
	if d := z.Fail(); d < Default.Base/2 || d > Default.Base {
		t.Fatalf("zero Retry's first wait %v, want Default's [%v, %v]", d, Default.Base/2, Default.Base)
	}
}

// TestSleep: Sleep returns true after the wait, false at once when ctx ends.
func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep without a cancel: false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep with an ended ctx: true")
	}
}
