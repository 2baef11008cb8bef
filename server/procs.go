package server

import (
	"os"
	"runtime"
)

// Go runs goroutines on GOMAXPROCS processors (Ps), by default one per usable core. A P
// stays with its thread while that thread is in a blocking system call, until the
// runtime's monitor takes it back (after 20 µs at best, much later when the monitor
// itself waits for a core); and when the kernel preempts a thread to run another process,
// the thread's P and the goroutines queued on it wait with it, up to a scheduler tick
// (4 ms at HZ=250). A coordination server meets both all the time: the log's fsync, the
// segment preparer's writes and the snapshot writer block in file system calls, and the
// server usually shares its cores with its clients and, under `paddock up`, with the
// platform's other services. With one P per core, requests then sit runnable with no P
// to run on: measured on 2 cores under the benchmark's load, reads waited 90-130 µs a
// hop for a P, and p99 read latency was 1.4-4.3 ms; with 4 spare Ps it was 0.7-0.9 ms
// at the same throughput (docs/performance.md).
//
// So, unless told otherwise, the server runs with four Ps more than the usable cores:
// enough for the goroutines that block in file system calls, without the scheduling cost
// of many more. Under a cgroup CPU limit (which Go's default already follows) it keeps
// Go's default: threads beyond the limit would only be throttled.
const spareProcs = 4

// ProcsFor returns the GOMAXPROCS a process running the server should use: Go's
// default when the GOMAXPROCS environment variable is set; else configured, if not 0;
// else Go's default when a CPU limit makes it lower than the usable cores; else the
// usable cores + spareProcs.
func ProcsFor(configured int) int {
	def := runtime.GOMAXPROCS(0)
	switch {
	case os.Getenv("GOMAXPROCS") != "":
		return def
	case configured > 0:
		return configured
	case def < runtime.NumCPU():
		return def
	default:
		return runtime.NumCPU() + spareProcs
	}
}

// SetProcs applies ProcsFor(configured) to the process and returns it.
func SetProcs(configured int) int {
	n := ProcsFor(configured)
	if n != runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n)
	}
	return n
}
