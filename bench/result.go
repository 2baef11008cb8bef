package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Result is what one run measured. Only successful requests count as Ops and go into
// Latency; failed ones are in Errors, by error code. In JSON, durations are nanoseconds.
type Result struct {
	Workload string `json:"workload"`
	Addr     string `json:"addr"`
	// Root is the run's own root znode, under which its znodes are (and stay, with Keep).
	Root        string `json:"root"`
	Sessions    int    `json:"sessions"`
	Outstanding int    `json:"outstanding"`
	ValueSize   int    `json:"value_size"`
	Watchers    int    `json:"watchers,omitempty"`   // fanout
	Ephemerals  int    `json:"ephemerals,omitempty"` // churn: per session

	// Ops is the number of successful operations measured: requests, or session
	// lifecycles (churn), or notification rounds (fanout).
	Ops int64 `json:"ops"`
	// Elapsed is the measurement's wall time, from the first request written to the last
	// reply read.
	Elapsed   time.Duration `json:"elapsed_ns"`
	OpsPerSec float64       `json:"ops_per_sec"`
	// Latency is per request, from just before its write to the read that returned its
	// reply; for churn, per session lifecycle; for fanout, per round, from just before the
	// write to the arrival of the last of the Watchers notifications.
	Latency Summary `json:"latency"`
	// Notify is, for fanout, the time from the write to each notification.
	Notify *Summary `json:"notify_latency,omitempty"`

	// Errors counts failed operations; ErrorCodes breaks them down by ZooKeeper error
	// ("no node"), "bad reply" (a malformed or implausible answer) or "lost in flight"
	// (requests of a session that failed).
	Errors     int64            `json:"errors"`
	ErrorCodes map[string]int64 `json:"error_codes,omitempty"`
	// Failures names each session that failed during the run and why.
	Failures []string `json:"session_failures,omitempty"`

	Prepared       int64         `json:"prepared_znodes"`
	PrepareElapsed time.Duration `json:"prepare_elapsed_ns"`
	WarmupOps      int64         `json:"warmup_ops"`
	// CleanupError, if not empty, says that the run's znodes could not all be removed.
	CleanupError string `json:"cleanup_error,omitempty"`

	hist *Histogram
	// samples are, with Config.timeline, the measured requests in the order their
	// replies came.
	samples []latencySample
}

func newResult(cfg *Config) *Result {
	r := &Result{Workload: cfg.Workload, Addr: cfg.Addr, Sessions: cfg.Sessions, Outstanding: cfg.Outstanding,
		ValueSize: cfg.ValueSize, hist: NewHistogram(), ErrorCodes: map[string]int64{}}
	switch cfg.Workload {
	case WorkloadFanout:
		r.Watchers = cfg.Watchers
	case WorkloadChurn:
		r.Ephemerals = cfg.Ephemerals
	}
	return r
}

// addPhase takes the counts of the measured phase.
func (r *Result) addPhase(pr phaseResult) {
	r.Ops += pr.ok
	r.Errors += pr.errors
	r.Elapsed += pr.elapsed
	for k, v := range pr.byError {
		r.ErrorCodes[k] += v
	}
	r.Failures = append(r.Failures, pr.failures...)
}

// finish computes the rate and the latency summary.
func (r *Result) finish() {
	if r.Elapsed > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Elapsed.Seconds()
	}
	r.Latency = r.hist.Summary()
}

// OK reports whether the run had no failed operation and no failed session.
func (r *Result) OK() bool { return r.Errors == 0 && len(r.Failures) == 0 }

// WriteJSON writes r as one indented JSON object.
func (r *Result) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// WriteText writes r for people.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "workload     %s against %s\n", r.Workload, r.Addr)
	switch r.Workload {
	case WorkloadFanout:
		fmt.Fprintf(&b, "load         %d watching sessions, 1 writer, %d-byte values\n", r.Watchers, r.ValueSize)
	case WorkloadChurn:
		fmt.Fprintf(&b, "load         %d sessions at a time, each creating %d ephemerals %d at a time, %d-byte values\n",
			r.Sessions, r.Ephemerals, r.Outstanding, r.ValueSize)
	default:
		fmt.Fprintf(&b, "load         %d sessions × %d outstanding, %d-byte values\n", r.Sessions, r.Outstanding, r.ValueSize)
	}
	unit := "ops"
	switch r.Workload {
	case WorkloadChurn:
		unit = "sessions"
	case WorkloadFanout:
		unit = "rounds"
	}
	fmt.Fprintf(&b, "throughput   %d %s in %v: %.0f %s/s\n", r.Ops, unit, r.Elapsed.Round(time.Millisecond), r.OpsPerSec, unit)
	what := "latency     "
	if r.Workload == WorkloadFanout {
		what = "all notified"
	}
	fmt.Fprintf(&b, "%s %s\n", what, r.Latency)
	if r.Notify != nil {
		fmt.Fprintf(&b, "each notify  %s\n", *r.Notify)
	}
	fmt.Fprintf(&b, "errors       %d", r.Errors)
	if len(r.ErrorCodes) > 0 {
		fmt.Fprintf(&b, " (%s)", formatErrors(r.ErrorCodes))
	}
	b.WriteString("\n")
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "failed       %s\n", f)
	}
	if r.Prepared > 0 {
		fmt.Fprintf(&b, "prepared     %d znodes in %v\n", r.Prepared, r.PrepareElapsed.Round(time.Millisecond))
	}
	if r.CleanupError != "" {
		fmt.Fprintf(&b, "clean-up     %s\n", r.CleanupError)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// String formats the summary in milliseconds: p50, p99, p99.9, max and mean.
func (s Summary) String() string {
	if s.Count == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %s  p99 %s  p99.9 %s  max %s  (mean %s, %d samples)",
		ms(s.P50), ms(s.P99), ms(s.P999), ms(s.Max), ms(s.Mean), s.Count)
}

// ms formats d in milliseconds with three significant decimals at most.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	case v >= 1:
		return fmt.Sprintf("%.2f ms", v)
	}
	return fmt.Sprintf("%.3f ms", v)
}

// formatErrors lists error counts, most frequent first.
func formatErrors(m map[string]int64) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func formatFailures(f []string) string {
	if len(f) == 0 {
		return ""
	}
	if len(f) > 3 {
		return fmt.Sprintf("; %d sessions failed, first: %s", len(f), f[0])
	}
	return "; sessions failed: " + strings.Join(f, "; ")
}
