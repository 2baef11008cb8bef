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
//
// GOGC is a ratio of the live heap found by the last collection: when the live heap
// jumps between two tunings — replies piling up for clients that do not read, up to
// max_queued_bytes — a GOGC set for a small heap lets garbage reach several times the
// new one (800 % of 256 MiB is 2 GiB). memoryLimitFor is the backstop: a soft memory
// limit far above what GOGC asks in the steady state, which binds only in such a jump,
// until the next tuning.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	p := int(uint64(minGCHeadroom) * 100 / live)
	return min(max(p, minGCPercent), maxGCPercent)
}

// memoryLimitFor returns the soft memory limit for a live heap of live bytes: twice it,
// and memoryLimitSlack more.
func memoryLimitFor(live uint64) int64 { return int64(2*live + memoryLimitSlack) }

// memoryLimitSlack is what memoryLimitFor adds to twice the live heap: more than the
// steady-state headroom GOGC gives any heap (40 MiB for a small one), so that the limit
// binds only when the live heap jumps.
const memoryLimitSlack = 128 << 20

// settleHeap, run once state is recovered and before the first client, returns to the
// OS the memory the recovery grew the heap by beyond its live part, when that is worth a
// collection. Recovery runs before gcTuneLoop, under the process's GOGC, which lets the
// heap reach about twice what the loaded tree needs; the runtime would give the rest back
// only slowly (1M znodes of 100 B: 141 MiB live, 288 MiB of RSS after a restart, 182 MiB
// settled). The tree keeps its records in a few large buffers the collector does not
// scan, so the full collection and scavenge cost about 10 ms for 1M znodes; a small heap
// (a test's, a fresh server's) is left alone.
func (s *Server) settleHeap() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return // the operator's settings stand, as in gcTuneLoop
	}
	sample := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(sample)
	if sample[0].Value.Uint64() < settleHeapMin {
		return
	}
	start := time.Now()
	debug.FreeOSMemory()
	s.logger.Info("heap settled after recovery", "took", time.Since(start).Round(time.Millisecond))
}

// settleHeapMin is the heap, live and garbage, from which settleHeap collects.
const settleHeapMin = 64 << 20

const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

// gcTuneLoop adjusts GOGC and the soft memory limit to the live heap every
// gcTuneInterval, unless the operator set GOGC (or GOMEMLIMIT) in the environment: then
// that stands. It restores the settings it found when the server stops. Both are
// process-wide; servers sharing a process (tests) set them alike.
func (s *Server) gcTuneLoop() {
	if os.Getenv("GOGC") != "" {
		return
	}
	limit := os.Getenv("GOMEMLIMIT") == ""
	sample := []metrics.Sample{{Name: liveHeapMetric}}
	tune := func() (percent int, memLimit int64) {
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		memLimit = -1 // SetMemoryLimit(-1) reads the limit without changing it
		if limit {
			memLimit = memoryLimitFor(live)
		}
		return debug.SetGCPercent(gcPercentFor(live)), debug.SetMemoryLimit(memLimit)
	}
	defer func(percent int, memLimit int64) {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(memLimit)
	}(tune())
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
