package task

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestWaitingFor(t *testing.T) {
	view := func(id string, labels map[string]string) WorkerView {
		return WorkerView{ID: id, Info: WorkerInfo{Capacity: 2, Labels: labels, State: WorkerActive}}
	}
	linux := view("w1", map[string]string{"os": "linux"})
	zoned := view("w2", map[string]string{"os": "linux", "zone": "a"})
	bare := view("w3", nil)
	gpu := view("g1", map[string]string{"os": "linux", "gpu": "true"})
	drainedGPU := gpu
	drainedGPU.Drain = &DrainRequest{}
	staleGPU := gpu
	staleGPU.ID, staleGPU.Stale = "g2", true
	stoppingGPU := gpu
	stoppingGPU.ID, stoppingGPU.Info.State = "g3", WorkerStopping
	unreadable := view("w0", map[string]string{"gpu": "true"})
	unreadable.Info.Capacity = 0

	var many []WorkerView
	for i := range 10 {
		many = append(many, view(fmt.Sprintf("m%d", i), map[string]string{"os": "linux"}))
	}
	tests := []struct {
		name    string
		sel     Selector
		workers []WorkerView
		want    string
		suffix  bool // want is only the end of it
	}{
		{"no worker", nil, nil, "no live worker", false},
		{"no worker, a selector", Selector{"gpu": "true"}, nil, "no live worker (it needs labels gpu=true)", false},
		{"a worker, no selector", nil, []WorkerView{bare}, "", false},
		{"matched", Selector{"os": "linux"}, []WorkerView{linux, zoned}, "", false},
		{"unmatched", Selector{"gpu": "true"}, []WorkerView{linux, zoned, bare},
			"no live worker has labels gpu=true (live: w1 os=linux; w2 os=linux,zone=a; w3 (no labels))", false},
		{"a registration the master skips", Selector{"gpu": "true"}, []WorkerView{unreadable, linux},
			"no live worker has labels gpu=true (live: w1 os=linux)", false},
		{"every match takes nothing new", Selector{"gpu": "true"}, []WorkerView{drainedGPU, staleGPU, stoppingGPU, linux},
			"no live worker with labels gpu=true takes new tasks (g1 drained; g2 stale; g3 stopping)", false},
		{"one match takes tasks", Selector{"gpu": "true"}, []WorkerView{drainedGPU, staleGPU, gpu}, "", false},
		{"no selector, none takes tasks", nil, []WorkerView{drainedGPU}, "no live worker takes new tasks (g1 drained)", false},
		{"many listed", Selector{"gpu": "true"}, many, "m7 os=linux; and 2 more)", true},
	}
	for _, tt := range tests {
		got := waitingFor(tt.sel, tt.workers)
		if got != tt.want && !(tt.suffix && strings.HasSuffix(got, tt.want)) {
			t.Errorf("%s: %q; want %q (suffix %v)", tt.name, got, tt.want, tt.suffix)
		}
	}
}

func TestRetryWait(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tk := &Task{Spec: Spec{RetryDelay: Duration(time.Minute)}}
	if got := retryWait(tk, now); got != "" {
		t.Errorf("no run yet: %q; want none", got)
	}
	tk.History = []Attempt{{N: 1, Finished: now.Add(-30 * time.Second)}}
	if got := retryWait(tk, now); got != "retry delay: not before 2030-01-02 03:04:35.000Z" {
		t.Errorf("failed 30s ago, a 1m delay: %q", got)
	}
	// A lost run after it is retried at once, and does not move the delay.
	tk.History = append(tk.History, Attempt{N: 2, Lost: true, Finished: now})
	if got := retryWait(tk, now); !strings.Contains(got, "03:04:35") {
		t.Errorf("after a lost run: %q; want the failed run's delay", got)
	}
	if got := retryWait(tk, now.Add(31*time.Second)); got != "" {
		t.Errorf("after the delay: %q; want none", got)
	}
}
