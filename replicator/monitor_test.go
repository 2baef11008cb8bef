package replicator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paddock/paddock/replicator/apply"
)

// TestJudge: verdicts and lag from the nodes' times against now, all on the server's
// clock; the status's own claims never make a task healthy on their own.
func TestJudge(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	applied := apply.Position{File: "bin.000001", Pos: 400, Time: ago(time.Minute)}
	inst := func(created time.Time) []InstanceView {
		return []InstanceView{{Node: "h_0000000001", Created: created}}
	}
	status := func(state string, lag float64, pos apply.Position) *Status {
		return &Status{State: state, LagSeconds: lag, Position: pos, LastError: map[bool]string{true: "boom"}[state == "retrying"]}
	}
	tests := []struct {
		name      string
		v         TaskView
		state     string
		lag       float64 // -1: unknown
		sinceZero bool
	}{
		{"disabled", TaskView{Def: TaskDef{Enabled: false}, Instances: inst(ago(time.Hour))}, "disabled", -1, true},
		{"never ran", TaskView{Def: TaskDef{Enabled: true}}, "unserved", -1, true},
		{"all instances gone", TaskView{Def: TaskDef{Enabled: true}, Status: status("running", 0, applied),
			StatusModified: ago(30 * time.Second)}, "unserved", 30, false},
		{"just started", TaskView{Def: TaskDef{Enabled: true}, Instances: inst(ago(2 * time.Second))}, "starting", -1, false},
		{"never reported", TaskView{Def: TaskDef{Enabled: true}, Instances: inst(ago(time.Minute))}, "stale", -1, false},
		{"hung instance", TaskView{Def: TaskDef{Enabled: true}, Instances: inst(ago(time.Hour)), Status: status("running", 1, applied),
			StatusModified: ago(StaleAfter + time.Second)}, "stale", 1 + StaleAfter.Seconds() + 1, false},
		{"standby took over, not reported yet", TaskView{Def: TaskDef{Enabled: true}, Instances: inst(ago(time.Hour)),
			Status: status("running", 0, applied), StatusModified: ago(3 * time.Second)}, "ok", 3, true},
		{"ok", TaskView{Def: TaskDef{Enabled: true}, Instances: inst(ago(time.Hour)), Status: status("running", 0.5, applied),
			StatusModified: ago(time.Second)}, "ok", 1.5, true},
		{"snapshotting", TaskView{Def: TaskDef{Enabled: true}, Instances: inst(ago(time.Hour)), Status: status("snapshotting", 0, apply.Position{}),
			StatusModified: ago(time.Second)}, "snapshotting", -1, true},
		{"failing", TaskView{Def: TaskDef{Enabled: true}, Instances: inst(ago(time.Hour)), Status: status("retrying", 0, apply.Position{}),
			StatusModified: ago(time.Second)}, "error", -1, true},
		{"lagging", TaskView{Def: TaskDef{Enabled: true}, Instances: inst(ago(time.Hour)), Status: status("lagging", 40, applied),
			StatusModified: ago(0)}, "lagging", 40, true},
		{"just enabled", TaskView{Def: TaskDef{Enabled: true}, Instances: inst(ago(time.Hour)), Status: status("disabled", 0, applied),
			StatusModified: ago(time.Second)}, "starting", -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Judge(&tt.v, now)
			if h.State != tt.state {
				t.Errorf("state %s (%s), want %s", h.State, h.Detail, tt.state)
			}
			switch {
			case tt.lag < 0 && h.LagSeconds != nil:
				t.Errorf("lag %v, want unknown", *h.LagSeconds)
			case tt.lag >= 0 && (h.LagSeconds == nil || *h.LagSeconds != tt.lag):
				t.Errorf("lag %v, want %v", h.LagSeconds, tt.lag)
			}
			if h.Since.IsZero() != tt.sinceZero {
				t.Errorf("since %v", h.Since)
			}
		})
	}
}

// TestSameAddress: one server by address after resolving; another port is another
// server as far as addresses tell.
func TestSameAddress(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		src, tgt string
		same     bool
	}{
		{"a:x@tcp(127.0.0.1:3306)/", "b:y@tcp(127.0.0.1:3306)/db", true},
		{"a:x@tcp(localhost:3306)/", "b:y@tcp(127.0.0.1:3306)/", true},
		{"a:x@tcp(127.0.0.1:3306)/", "b:y@tcp(127.0.0.1:3307)/", false},
		{"a:x@tcp(127.0.0.1:3306)/", "b:y@tcp(127.0.0.2:3306)/", false},
		{"a:x@tcp(no-such-host.invalid:3306)/", "b:y@tcp(127.0.0.1:3306)/", false},
	}
	for _, tt := range tests {
		err := apply.SameAddress(ctx, tt.src, tt.tgt)
		if got := errors.Is(err, ErrSameServer); got != tt.same {
			t.Errorf("SameAddress(%s, %s) = %v, want same %v", tt.src, tt.tgt, err, tt.same)
		}
	}
}
