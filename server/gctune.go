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
// ones, by setting GOGC after each second from the server's state: the live heap less
// the replies queued for clients, which max_queued_bytes bounds apart (gcTuner). (At 1M
// znodes, 15 % rather than 25 % took RSS from 387 to 366 MiB; the collections it adds
// come every 40 MiB allocated, a few a second at most under a write load.)
const (
	minGCHeadroom  = 40 << 20
	minGCPercent   = 15
	maxGCPercent   = 800
	gcTuneInterval = time.Second
	liveHeapMetric = "/gc/heap/live:bytes"
)

// gcPercentFor returns the GOGC that gives a server whose live heap is live bytes, of
// which state bytes are its state (the live heap less the replies queued for clients),
// the headroom its state calls for.
//
// GOGC is a ratio of the live heap found by the last collection. Replies piling up for
// clients that do not read are live, but bounded apart (max_queued_bytes) and gone once
// written or dropped: a headroom that grew with them would let garbage grow with a
// flood. So the headroom is set from the state alone, and given as a ratio of the whole
// live heap. When the live heap jumps between two tunings — the queue filling — a GOGC
// set for a small heap would still let garbage reach several times the new one (800 %
// of 256 MiB is 2 GiB): memoryLimitFor is the backstop.
func gcPercentFor(state, live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	headroom := max(uint64(minGCHeadroom), state*minGCPercent/100)
	return min(max(int((headroom*100+live-1)/live), 1), maxGCPercent) // rounded up
}

// memoryLimitFor returns the soft memory limit for a server whose state is state bytes
// and whose replies queued for clients may reach maxQueued bytes: twice its state,
// memoryLimitSlack, and the queue's bound. It is above what GOGC asks in the steady
// state, queue full or not, and binds when the queue fills faster than the tuning
// follows: it is the bound on what a flood of never-reading clients makes the process
// hold (docs/limits.md "Unread replies"). It used to be twice the live heap, queue
// included, and 128 MiB: about 400 MiB with a small tree and a full default queue,
// which is where issue 31's 350–409 MiB of RSS came from.
func memoryLimitFor(state uint64, maxQueued int64) int64 {
	return int64(2*state) + memoryLimitSlack + maxQueued
}

// memoryLimitSlack is what memoryLimitFor adds to twice the state, beyond the queue:
// more than the steady-state headroom GOGC gives any heap (40 MiB for a small one), so
// that the limit binds only when the live heap jumps.
const memoryLimitSlack = 64 << 20

// stateOf returns the part of a live heap of live bytes that is the server's state: the
// rest is the queued bytes of replies not yet written, which the server counts.
func stateOf(live uint64, queued int64) uint64 {
	if queued <= 0 {
		return live
	}
	return live - min(live, uint64(queued))
}

// gcStateWindow is how many tunings the state is the smallest of. The live heap a
// collection reports counts what was allocated while it ran: under a flood of replies
// built and dropped, a cycle's worth of them, which stateOf cannot tell from state (a
// 10 MiB state read as 50 to 80 MiB now and then, and the limit twice that). The
// smallest of the last five is the state without those spikes; a state that really
// grows is followed five tunings late, while the limit's slack covers it.
const gcStateWindow = 5

// gcTuner turns the live heap into the collector's settings (gcTuneLoop). Not safe for
// concurrent use: the loop owns it.
type gcTuner struct {
	maxQueued int64                 // Config.MaxQueuedBytes
	states    [gcStateWindow]uint64 // the state at the last tunings, a ring
	n         int                   // tunings so far
}

// settings returns GOGC and the soft memory limit for a live heap of live bytes while
// queued bytes of replies wait for their clients.
func (t *gcTuner) settings(live uint64, queued int64) (percent int, memLimit int64) {
	t.states[t.n%gcStateWindow] = stateOf(live, queued)
	t.n++
	state := t.states[0]
	for _, s := range t.states[1:min(t.n, gcStateWindow)] {
		state = min(state, s)
	}
	return gcPercentFor(state, live), memoryLimitFor(state, t.maxQueued)
}

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
	tuner := gcTuner{maxQueued: s.cfg.MaxQueuedBytes}
	tune := func() (percent int, memLimit int64) {
		metrics.Read(sample)
		percent, memLimit = tuner.settings(sample[0].Value.Uint64(), s.queued.Load())
		if !limit {
			memLimit = -1 // SetMemoryLimit(-1) reads the limit without changing it
		}
		return debug.SetGCPercent(percent), debug.SetMemoryLimit(memLimit)
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
