package replicator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// StaleAfter is how old, by the coordination server's clock, the status of a task
// with an instance may get before the task is judged stale: the running instance
// writes it every second.
const StaleAfter = 5 * time.Second

// Health is a verdict on a task, made when the task is read (Admin.Get, Admin.List) by
// whoever reads it, from the nodes' modification times against the coordination
// server's clock: it needs no replicator process alive to be true.
type Health struct {
	// State is ok, lagging, error, snapshotting, starting, stale, unserved or disabled.
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
	// Since is when the condition began, where that is known: for stale and unserved
	// the last status report, for error when the error was first seen.
	Since time.Time `json:"since,omitzero"`
	// LagSeconds is now minus the source commit time of the last applied event, as of
	// the judgement: the lag the instance last reported plus the age of that report, so
	// that it grows while nothing applies. Nil when unknown: the task never applied
	// anything (no status, or a snapshot not done).
	LagSeconds *float64 `json:"lag_seconds"`
	// StatusAgeSeconds is the age of the status node, by the server's clock; nil when
	// the task has no status.
	StatusAgeSeconds *float64 `json:"status_age_seconds"`
	// Clock is "server" when now was read from the coordination server (the mtime of a
	// node just written), "local" when that write failed and the reader's clock served.
	Clock string `json:"clock"`
}

// Judge returns the verdict on v as of now, a time on the coordination server's clock
// (v's StatusModified and instance Created are too).
func Judge(v *TaskView, now time.Time) Health {
	var h Health
	st := v.Status
	if st != nil && !v.StatusModified.IsZero() {
		age := max(now.Sub(v.StatusModified).Seconds(), 0)
		h.StatusAgeSeconds = &age
		if !st.Position.IsZero() && st.State != "snapshotting" && st.State != "disabled" {
			lag := st.LagSeconds + age
			h.LagSeconds = &lag
		}
	}
	h.State, h.Detail, h.Since = verdict(v, now, h.StatusAgeSeconds)
	return h
}

func verdict(v *TaskView, now time.Time, statusAge *float64) (state, detail string, since time.Time) {
	st := v.Status
	if !v.Def.Enabled {
		return "disabled", "", time.Time{}
	}
	if len(v.Instances) == 0 {
		if st != nil {
			since = v.StatusModified
		}
		return "unserved", "no replicator process stands for the task", since
	}
	first := v.Instances[0]
	fresh := statusAge != nil && *statusAge <= StaleAfter.Seconds()
	switch {
	case !fresh && now.Sub(first.Created) <= StaleAfter:
		return "starting", "instance " + first.Node + " has not reported yet", first.Created
	case statusAge == nil:
		return "stale", "instance " + first.Node + " has never reported", first.Created
	case !fresh:
		return "stale", fmt.Sprintf("no status report for %s: instance %s does not progress",
			time.Duration(*statusAge*float64(time.Second)).Round(time.Second), first.Node), v.StatusModified
	}
	switch st.State {
	case "disabled", "standby": // enabled a moment ago: the instance reports within a second
		return "starting", "instance " + first.Node + " is starting the task", v.StatusModified
	case "retrying", "failed":
		return "error", st.LastError, st.ErrorSince
	case "lagging":
		return "lagging", time.Duration(st.LagSeconds*float64(time.Second)).Round(time.Second).String() + " behind the source", time.Time{}
	case "snapshotting":
		return "snapshotting", "copying the source's rows", time.Time{}
	}
	return "ok", "", time.Time{}
}

// ServerNow returns the coordination server's clock: the mtime of the clock node,
// which it sets. It falls back to the local clock ("local") when the write fails.
func (a *Admin) ServerNow(ctx context.Context) (time.Time, string) {
	conn, p := a.s.Conn(), a.l.Clock()
	st, err := conn.Set(p, nil, -1)
	if errors.Is(err, zk.ErrNoNode) {
		if err = a.s.MakeDirs(ctx, a.l.join()); err == nil {
			_, err = conn.Create(p, nil, 0, a.s.ACLFor(p))
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				st, err = conn.Set(p, nil, -1)
			}
		}
	}
	if err != nil || st == nil {
		return time.Now().UTC(), "local"
	}
	return time.UnixMilli(st.Mtime).UTC(), "server"
}

// Monitor logs the changes of every task's verdict, in whichever process is elected
// on /mysql_replicator/monitor-leader among those that run one: every replicator
// process, and the console (so under paddock up too), so that the log says a task
// went unserved even when no replicator is left. It is for alerting; what people read
// is judged as they read it.
type Monitor struct {
	s        *coordinator.Session
	layout   Layout
	logger   *slog.Logger
	interval time.Duration
	id       string // who campaigns: shown in the election node
	// onChange, if not nil, is told each new verdict, and (nil h) each task gone.
	onChange func(task string, h *Health)
}

// NewMonitor returns a monitor of the tasks under layout, checking every interval; id
// names the process in its election node.
func NewMonitor(s *coordinator.Session, layout Layout, logger *slog.Logger, interval time.Duration, id string) *Monitor {
	return &Monitor{s: s, layout: layout, logger: logger, interval: interval, id: id}
}

// Run campaigns and, while elected, checks every task each interval; it returns when
// ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	info, _ := json.Marshal(InstanceInfo{Host: m.id, PID: os.Getpid(), State: "monitor", Since: time.Now().UTC()})
	for ctx.Err() == nil {
		h, err := coordinator.NewElection(m.s, m.layout.MonitorLeader(), info).Campaign(ctx)
		if err != nil {
			return
		}
		m.logger.Info("monitoring the replication tasks")
		m.watchTasks(ctx, h)
		h.Release(context.Background())
	}
}

func (m *Monitor) watchTasks(ctx context.Context, h *coordinator.Hold) {
	admin := NewAdmin(m.s, m.layout)
	known := map[string]string{}
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for {
		if views, err := admin.List(ctx); err == nil {
			m.judge(views, known)
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

// judge logs each task's verdict when it changed; known holds the last ones, by task.
func (m *Monitor) judge(views []*TaskView, known map[string]string) {
	seen := map[string]bool{}
	for _, v := range views {
		seen[v.Name] = true
		h := v.Health
		if h == nil || known[v.Name] == h.State+"\x00"+h.Detail {
			continue
		}
		known[v.Name] = h.State + "\x00" + h.Detail
		LogHealth(m.logger, v.Name, *h)
		if m.onChange != nil {
			m.onChange(v.Name, h)
		}
	}
	for name := range known {
		if !seen[name] {
			delete(known, name)
			if m.onChange != nil {
				m.onChange(name, nil)
			}
		}
	}
}

// monitor is the replicator process's Monitor, which also exports the verdicts on
// /metrics while elected.
func (r *Replicator) monitor(ctx context.Context, interval time.Duration) {
	m := NewMonitor(r.s, r.layout, r.logger, interval, r.host)
	m.onChange = func(task string, h *Health) {
		r.metrics.health.DeletePartialMatch(map[string]string{"task": task})
		if h != nil {
			r.metrics.health.WithLabelValues(task, h.State).Set(1)
		}
	}
	m.Run(ctx)
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

// LogHealth logs a task's new verdict: Info when it is ok or disabled, Warn otherwise.
func LogHealth(logger *slog.Logger, task string, h Health) {
	if h.State == "ok" || h.State == "disabled" {
		logger.Info("task healthy", "task", task, "health", h.State)
		return
	}
	logger.Warn("task unhealthy", "task", task, "health", h.State, "detail", h.Detail)
}
