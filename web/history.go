package web

import (
	"context"
	"sync"
	"time"
)

// The console samples the ensemble and the replication lag itself, every
// sampleInterval, into a ring of historySize samples: the last hour, in about 24 KiB
// (a Sample is under 70 bytes). Nothing is kept across restarts; Prometheus on the
// members' /metrics is the way to longer history.
const (
	sampleInterval = 10 * time.Second
	historySize    = 360
)

// Sample is one point of the overview's charts. A figure is absent (null) when no
// member or task gave it.
type Sample struct {
	Time time.Time `json:"t"`
	// RequestsPerSec is the packets received by every member per second since the
	// previous sample (members answering both times only).
	RequestsPerSec *float64 `json:"requests_per_s"`
	// LatencyAvgMs is the highest average request latency of the members, and
	// LatencyP99Ms the highest p99 (admin ports only), in milliseconds.
	LatencyAvgMs *float64 `json:"latency_avg_ms"`
	LatencyP99Ms *float64 `json:"latency_p99_ms"`
	// Sessions is the client connections of every member together: each session is
	// connected to one member.
	Sessions *float64 `json:"sessions"`
	// ReplLagSeconds is the largest lag of the replication tasks.
	ReplLagSeconds *float64 `json:"replication_lag_s"`
}

// ring is a bounded ring of samples. It is safe for concurrent use.
type ring struct {
	size int // the most samples it holds; immutable

	mu   sync.Mutex
	buf  []Sample // guarded by mu; len(buf) <= cap(buf) == size
	next int      // where the next sample goes once buf is full; guarded by mu
}

func newRing(size int) *ring { return &ring{size: size, buf: make([]Sample, 0, size)} }

func (r *ring) add(s Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) < cap(r.buf) {
		r.buf = append(r.buf, s)
		return
	}
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
}

// samples returns the samples, oldest first.
func (r *ring) samples() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Sample, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// HistoryView is GET /api/v1/overview/history.
type HistoryView struct {
	IntervalSeconds float64  `json:"interval_s"`
	Capacity        int      `json:"capacity"`
	Samples         []Sample `json:"samples"` // oldest first
}

// history is the sampler's state.
type history struct {
	ring     *ring
	interval time.Duration

	mu       sync.Mutex       // guards the fields below; held by sample
	received map[string]int64 // member address -> packets received at the last sample
	lastAt   time.Time        // when the last sample was taken
}

func newHistory(interval time.Duration, size int) *history {
	return &history{ring: newRing(size), interval: interval, received: map[string]int64{}}
}

func (h *history) view() HistoryView {
	return HistoryView{IntervalSeconds: h.interval.Seconds(), Capacity: h.ring.size, Samples: h.ring.samples()}
}

// sample records one point from the ensemble e and the replication summary r.
func (h *history) sample(now time.Time, e EnsembleView, r ReplSummary) Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Sample{Time: now.UTC(), ReplLagSeconds: r.maxLag()}
	var delta float64
	seen := false
	received := map[string]int64{}
	for _, m := range e.Members {
		if !m.Up || m.Zxid == "" {
			continue
		}
		received[m.Address] = m.Received
		if prev, ok := h.received[m.Address]; ok && m.Received >= prev {
			delta += float64(m.Received - prev)
			seen = true
		}
		s.LatencyAvgMs = maxOf(s.LatencyAvgMs, m.LatencyAvgMs)
		if m.LatencyP99Ms != nil {
			s.LatencyP99Ms = maxOf(s.LatencyP99Ms, *m.LatencyP99Ms)
		}
		s.Sessions = sumOf(s.Sessions, float64(m.Connections))
	}
	if seen && !h.lastAt.IsZero() {
		if secs := now.Sub(h.lastAt).Seconds(); secs > 0 {
			rate := delta / secs
			s.RequestsPerSec = &rate
		}
	}
	h.received, h.lastAt = received, now
	h.ring.add(s)
	return s
}

func maxOf(p *float64, v float64) *float64 {
	if p != nil && *p >= v {
		return p
	}
	return &v
}

func sumOf(p *float64, v float64) *float64 {
	if p != nil {
		v += *p
	}
	return &v
}

// sampleLoop samples every interval until ctx ends or the console stops.
func (c *Console) sampleLoop(ctx context.Context) {
	t := time.NewTicker(c.history.interval)
	defer t.Stop()
	for {
		c.sampleNow(ctx)
		select {
		case <-ctx.Done():
			return
		case <-c.stop:
			return
		case <-t.C:
		}
	}
}

// sampleNow probes the ensemble (sharing a recent probe) and the replication tasks and
// records a sample.
func (c *Console) sampleNow(ctx context.Context) Sample {
	e := c.prober.view(ctx)
	r, _, _ := c.replCache.get(ctx, platformTimeout) // only what the charts need, not the whole summary
	return c.history.sample(time.Now(), e, r)
}
