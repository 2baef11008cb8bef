package master

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/paddock/paddock/task"
)

// metrics are the master's figures on /metrics. The task counts are those the active
// master sees; a backup reports zeros and leader 0.
type metrics struct {
	reg           *prometheus.Registry
	leader        prometheus.Gauge
	workers       prometheus.Gauge
	tasks         *prometheus.GaugeVec
	assignLatency prometheus.Histogram
	fires         *prometheus.CounterVec
	terms         prometheus.Counter
	itemErrors    *prometheus.CounterVec
	inError       *prometheus.GaugeVec
	stepErrors    prometheus.Counter
	refusals      prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "paddock_master_leader", Help: "1 while this master is the active one.",
		}),
		workers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "paddock_master_workers", Help: "Live workers.",
		}),
		tasks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "paddock_master_tasks",
			Help: "Tasks by state: pending, running (assigned to a worker, started or not), done, failed, cancelled, skipped.",
		}, []string{"state"}),
		assignLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "paddock_master_assignment_latency_seconds",
			Help:    "From a task's submission (or the end of its retry delay) to its assignment.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}),
		fires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paddock_master_job_fires_total",
			Help: "Job fires this master recorded, by outcome (started, queued, skipped; dequeued: a queued fire started).",
		}, []string{"outcome"}),
		terms: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "paddock_master_terms_total", Help: "Times this master became the active one.",
		}),
		itemErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paddock_master_item_errors_total",
			Help: "Failures of one item (kind job, task or worker) at a step (read, validate, fire, place, end, take back, assign): each puts the item in error until its retry.",
		}, []string{"kind", "step"}),
		inError: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "paddock_master_items_in_error", Help: "Items in error now, by kind (job, task, worker).",
		}, []string{"kind"}),
		stepErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "paddock_master_step_errors_total",
			Help: "Steps that failed on the master's own directories and were put off with the backoff.",
		}),
		refusals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "paddock_master_refused_tasks_total",
			Help: "Tasks ended failed because their worker refused them (could not read them, or could not record their outcome).",
		}),
	}
	m.reg.MustRegister(m.leader, m.workers, m.tasks, m.assignLatency, m.fires, m.terms, m.itemErrors, m.inError,
		m.stepErrors, m.refusals)
	for _, kind := range []string{task.FaultJob, task.FaultTask, kindWorker} {
		m.inError.WithLabelValues(kind) // every series from the start, at 0
	}
	return m
}

func (l *leader) updateGauges() {
	counts := map[task.State]int{}
	for _, t := range l.tasks {
		if t.worker != "" {
			counts[task.Running]++
		} else {
			counts[task.Pending]++
		}
	}
	for _, st := range l.ended {
		counts[st]++
	}
	for _, st := range []task.State{task.Pending, task.Running, task.Done, task.Failed, task.Cancelled, task.Skipped} {
		l.m.metrics.tasks.WithLabelValues(string(st)).Set(float64(counts[st]))
	}
	l.m.metrics.workers.Set(float64(len(l.workers)))
}
