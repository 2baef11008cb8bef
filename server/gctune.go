package server

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The garbage collector's headroom — how much garbage may pile up before a collection —
// is, with Go's default GOGC=100, as large as the live heap. Neither end suits a
// coordination server: with a small tree (a few MiB live) it collects many times a second
// under load, taking CPU from requests on a small machine and adding to tail latency; with
// a large tree (GiBs live) it lets RSS reach twice what the tree needs. gcTuneLoop keeps the
// headroom near minGCHeadroom for small heaps and at minGCPercent of the heap for large
// ones, by setting GOGC from the live heap after each second. (At 1M znodes, 15 % rather
// than 25 % took RSS from 387 to 366 MiB; the collections it adds come every 40 MiB
// allocated, a few a second at most under a write load.)
const (
	minGCHeadroom  = 40 << 20
	minGCPercent   = 15
	maxGCPercent   = 800
	gcTuneInterval = time.Second
	liveHeapMetric = "/gc/heap/live:bytes"
)

// gcPercentFor returns the GOGC that gives a live heap of live bytes its headroom.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	p := int(uint64(minGCHeadroom) * 100 / live)
	return min(max(p, minGCPercent), maxGCPercent)
}

// gcTuneLoop adjusts GOGC to the live heap every gcTuneInterval, unless the operator set
// GOGC in the environment: then that stands. It restores the setting it found when the
// server stops. GOGC is process-wide; servers sharing a process (tests) set it alike.
func (s *Server) gcTuneLoop() {
	if os.Getenv("GOGC") != "" {
		return
	}
	sample := []metrics.Sample{{Name: liveHeapMetric}}
	tune := func() int {
		metrics.Read(sample)
		return debug.SetGCPercent(gcPercentFor(sample[0].Value.Uint64()))
	}
	defer debug.SetGCPercent(tune())
	ticker := time.NewTicker(gcTuneInterval)
	defer ticker.Stop()
	for {
		select {
		case <-s.stopping:
			return
		case <-ticker.C:
			tune()
		}
	}
}
