package taskcluster

import (
	"slices"
	"testing"
	"time"

	"github.com/paddock/paddock/task"
)

// BenchmarkDispatch measures the cluster's dispatch throughput: b.N no-op tasks (the
// command true) submitted at once to one master and three workers (8 slots each),
// from the submit to the status of the last; and each task's time from submission
// to its end. Everything runs on this machine: the server in the test process, the
// master and workers as processes, and each task as a process.
func BenchmarkDispatch(b *testing.B) {
	c := newCluster(b)
	c.startMaster("m1")
	for _, w := range []string{"w1", "w2", "w3"} {
		c.startWorker(w, 8)
	}
	// One task through first, so that every process is up and connected.
	c.waitAll([]string{c.submit(task.Spec{Command: "true"})}, time.Minute)

	b.ResetTimer()
	start := time.Now()
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = c.submit(task.Spec{Command: "true"})
	}
	ended := c.waitAll(ids, 10*time.Minute)
	elapsed := time.Since(start)
	b.StopTimer()

	lat := make([]time.Duration, 0, len(ended))
	for _, tk := range ended {
		if tk.State != task.Done {
			b.Fatalf("%s: %s (%s)", tk.ID, tk.State, tk.Status.Error)
		}
		lat = append(lat, tk.Status.Finished.Sub(tk.Spec.Submitted))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
}
