package worker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
)

// metrics are the worker's Prometheus metrics, in a registry of their own. They are
// safe for concurrent use.
type metrics struct {
	reg      *prometheus.Registry
	running  prometheus.Gauge
	finished *prometheus.CounterVec
	duration prometheus.Histogram
	capacity prometheus.Gauge
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
	}
	for _, s := range []string{finishedDone, finishedFailed, finishedCancelled, finishedRetry} {
		m.finished.WithLabelValues(s) // every series from the start, at 0
	}
	m.capacity.Set(float64(capacity))
	m.reg.MustRegister(m.running, m.finished, m.duration, m.capacity)
	return m
}

// metricsServer serves /metrics on its own listener.
type metricsServer struct {
	ln     net.Listener
	srv    *http.Server
	done   chan struct{} // closed when Serve returns
	logger *slog.Logger
}

// serveMetrics listens on addr and serves m there until stop.
func serveMetrics(addr string, m *metrics, logger *slog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	ms := &metricsServer{
		ln:     ln,
		srv:    &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		done:   make(chan struct{}),
		logger: logger,
	}
	go ms.serve()
	return ms, nil
}

func (ms *metricsServer) serve() {
	defer close(ms.done)
	if err := ms.srv.Serve(ms.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		ms.logger.Error("metrics server stopped", "err", err)
	}
}

// stop lets requests in flight finish for a moment, then closes the server.
func (ms *metricsServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := ms.srv.Shutdown(ctx); err != nil {
		ms.srv.Close()
	}
	<-ms.done
}
