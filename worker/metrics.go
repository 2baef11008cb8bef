package worker

import (
	"github.com/prometheus/client_golang/prometheus"
)

// durationBuckets, in seconds, span what tasks take: from a quick command to hours.
var durationBuckets = []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 3 * 3600, 12 * 3600}

// Values of the state label of paddock_worker_tasks_finished_total: how a run's outcome
// was recorded. "retry" is a failed run with retries left (an attempt record).
const (
	finishedDone      = "done"
	finishedFailed    = "failed"
	finishedCancelled = "cancelled"
	finishedRetry     = "retry"
	// finishedHandedBack: killed at a drain's deadline or the end of the stop grace.
	finishedHandedBack = "handed_back"
)

// metrics are the worker's Prometheus metrics, in a registry of their own. They are
// safe for concurrent use.
type metrics struct {
	reg      *prometheus.Registry
	running  prometheus.Gauge
	finished *prometheus.CounterVec
	duration prometheus.Histogram
	capacity prometheus.Gauge
	// Refusals and holds (refuse.go).
	refused    *prometheus.CounterVec
	refusedNow prometheus.Gauge
	holds      prometheus.Counter
	held       prometheus.Gauge
}

func newMetrics(capacity int) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "paddock", Subsystem: "worker", Name: "tasks_running",
			Help: "Task processes running now.",
		}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paddock", Subsystem: "worker", Name: "tasks_finished_total",
			Help: "Runs whose outcome this worker recorded, by outcome (done, failed, cancelled, retry).",
		}, []string{"state"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "paddock", Subsystem: "worker", Name: "task_duration_seconds",
			Help:    "Time from a task process's start to its end, for runs whose outcome was recorded.",
			Buckets: durationBuckets,
		}),
		capacity: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "paddock", Subsystem: "worker", Name: "capacity",
			Help: "How many tasks the worker runs at once.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paddock", Subsystem: "worker", Name: "tasks_refused_total",
			Help: "Tasks this worker refused and handed back, never to claim them again, by reason: unrecorded (it ran; the servers refused its outcome), unreadable (not run: its spec could not be read).",
		}, []string{"reason"}),
		refusedNow: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "paddock", Subsystem: "worker", Name: "tasks_refused",
			Help: "Refused tasks whose assignment or refusal is still in this worker's directory (the master has not ended them yet).",
		}),
		holds: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "paddock", Subsystem: "worker", Name: "assignment_holds_total",
			Help: "Times an assignment could not be claimed (for a reason other than the connection) and was put off with the backoff.",
		}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "paddock", Subsystem: "worker", Name: "assignments_held",
			Help: "Assignments put off now, waiting for their retry.",
		}),
	}
	for _, s := range []string{finishedDone, finishedFailed, finishedCancelled, finishedRetry, finishedHandedBack} {
		m.finished.WithLabelValues(s) // every series from the start, at 0
	}
	for _, r := range []string{refusedUnrecorded, refusedUnreadable} {
		m.refused.WithLabelValues(r)
	}
	m.capacity.Set(float64(capacity))
	m.reg.MustRegister(m.running, m.finished, m.duration, m.capacity, m.refused, m.refusedNow, m.holds, m.held)
	return m
}
