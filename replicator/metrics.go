package replicator

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are a replicator process's figures on /metrics, by task.
type metrics struct {
	reg        *prometheus.Registry
	running    *prometheus.GaugeVec
	lag        *prometheus.GaugeVec
	behind     *prometheus.GaugeVec
	rowsPerSec *prometheus.GaugeVec
	errors     *prometheus.CounterVec
	health     *prometheus.GaugeVec
}

func newMetrics() *metrics {
	task := []string{"task"}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "paddock_replicator_running", Help: "1 while this process runs the task.",
		}, task),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "paddock_replicator_lag_seconds", Help: "Now minus the source time of the last applied event.",
		}, task),
		behind: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "paddock_replicator_events_behind", Help: "How far the applied position is behind the source's binlog end.",
		}, task),
		rowsPerSec: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "paddock_replicator_rows_per_second", Help: "Rows applied per second over the last report interval.",
		}, task),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paddock_replicator_run_errors_total", Help: "Runs of the task that ended in an error.",
		}, task),
	}
	m.health = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "paddock_replicator_task_health",
		Help: "1 for the task's health as the monitor judges it (in the elected monitor's process): ok, lagging, error, unserved, stale, disabled.",
	}, []string{"task", "health"})
	m.reg.MustRegister(m.running, m.lag, m.behind, m.rowsPerSec, m.errors, m.health)
	return m
}
