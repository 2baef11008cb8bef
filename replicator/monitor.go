package replicator

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// Health is the monitor's verdict on a task.
type Health struct {
	State  string    `json:"state"` // ok, lagging, error, unserved, stale, disabled
	Detail string    `json:"detail,omitempty"`
	Since  time.Time `json:"since"`
}

// MonitorReport is what the monitor writes to /mysql_replicator/monitor.
type MonitorReport struct {
	Monitor string            `json:"monitor"`
	Updated time.Time         `json:"updated"`
	Tasks   map[string]Health `json:"tasks"`
}

// staleAfter is how old a running task's status may get before the monitor flags it:
// the running instance writes it every second.
const staleAfter = 10 * time.Second

// monitor runs, in whichever replicator process is elected on
// /mysql_replicator/monitor-leader, a check of every task every interval: it flags a
// task that is enabled but served by no instance, whose status is stale, whose run
// fails, or that lags past the threshold, in /mysql_replicator/monitor, in the log
// (when the verdict changes) and in the metrics.
func (r *Replicator) monitor(ctx context.Context, interval time.Duration) {
	info, _ := json.Marshal(InstanceInfo{Host: r.host, PID: os.Getpid(), State: "monitor", Since: time.Now().UTC()})
	for ctx.Err() == nil {
		h, err := coordinator.NewElection(r.s, r.layout.MonitorLeader(), info).Campaign(ctx)
		if err != nil {
			return
		}
		r.logger.Info("monitoring the replication tasks")
		r.watchTasks(ctx, h, interval)
		h.Release(context.Background())
	}
}

func (r *Replicator) watchTasks(ctx context.Context, h *coordinator.Hold, interval time.Duration) {
	admin := NewAdmin(r.s, r.layout)
	report := MonitorReport{Monitor: r.host, Tasks: map[string]Health{}}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		views, err := admin.List(ctx)
		if err == nil {
			r.judge(views, &report)
			data, _ := json.Marshal(report)
			r.writeNode(r.layout.Monitor(), data)
		}
		select {
		case <-tick.C:
		case <-h.Lost():
			return
		case <-ctx.Done():
			return
		}
	}
}

// judge sets each task's health in report, logging changes.
func (r *Replicator) judge(views []*TaskView, report *MonitorReport) {
	now := time.Now().UTC()
	seen := map[string]bool{}
	for _, v := range views {
		seen[v.Name] = true
		state, detail := health(v, now, r.cfg.LagThreshold)
		old, known := report.Tasks[v.Name]
		if known && old.State == state && old.Detail == detail {
			continue
		}
		report.Tasks[v.Name] = Health{State: state, Detail: detail, Since: now}
		if state == "ok" || state == "disabled" {
			r.logger.Info("task healthy", "task", v.Name, "health", state)
		} else {
			r.logger.Warn("task unhealthy", "task", v.Name, "health", state, "detail", detail)
		}
		r.metrics.health.DeletePartialMatch(map[string]string{"task": v.Name})
		r.metrics.health.WithLabelValues(v.Name, state).Set(1)
	}
	for name := range report.Tasks {
		if !seen[name] {
			delete(report.Tasks, name)
			r.metrics.health.DeletePartialMatch(map[string]string{"task": name})
		}
	}
	report.Updated = now
}

func health(v *TaskView, now time.Time, lagThreshold time.Duration) (state, detail string) {
	st := v.Status
	switch {
	case !v.Def.Enabled:
		return "disabled", ""
	case len(v.Instances) == 0:
		return "unserved", "no replicator process stands for the task"
	case st == nil || now.Sub(st.Updated) > staleAfter:
		return "stale", "the running instance has not reported for " + staleAfter.String()
	case st.State == "retrying":
		return "error", st.LastError
	case st.LagSeconds > lagThreshold.Seconds():
		return "lagging", time.Duration(st.LagSeconds*float64(time.Second)).Round(time.Second).String() + " behind the source"
	}
	return "ok", ""
}

// writeNode sets the node at p to data, creating it if needed.
func (r *Replicator) writeNode(p string, data []byte) {
	conn := r.s.Conn()
	_, err := conn.Set(p, data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		_, err = conn.Create(p, data, 0, r.s.ACLFor(p))
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = conn.Set(p, data, -1)
		}
	}
	if err != nil {
		r.logger.Debug("not written", "path", p, "err", err)
	}
}
