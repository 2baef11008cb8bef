package replicator

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/paddock/paddock/replicator/apply"
)

// taskRun is one run of the engine for a task, and what it reports: the last
// committed position, mirrored to lastCommit at least once a second, and the status.
type taskRun struct {
	in      *instance
	node    string
	epoch   int64
	def     TaskDef
	tracker *apply.Tracker

	mu      sync.Mutex     // guards last
	last    apply.Position // the newest committed position
	written apply.Position // the last one written to lastCommit (report's goroutine only)

	prevRows int64 // for rows/s
	prevAt   time.Time
}

func newRun(in *instance, node string, epoch int64, def TaskDef) *taskRun {
	return &taskRun{in: in, node: node, epoch: epoch, def: def, tracker: &apply.Tracker{}, prevAt: time.Now()}
}

func (r *taskRun) run(ctx context.Context) error {
	cfg := apply.Config{
		Task: r.in.task, Source: r.def.Source, Target: r.def.Target,
		Include: r.def.Include, Exclude: r.def.Exclude, ServerID: r.def.ServerID,
		Epoch: r.epoch, Logger: r.in.logger,
	}
	r.in.logger.Info("running the task", "epoch", r.epoch, "node", r.node)
	r.in.r.metrics.running.WithLabelValues(r.in.task).Set(1)
	defer r.in.r.metrics.running.WithLabelValues(r.in.task).Set(0)
	return apply.Run(ctx, cfg, r.onCommit, r.tracker)
}

func (r *taskRun) onCommit(p apply.Position) {
	r.mu.Lock()
	r.last = p
	r.mu.Unlock()
}

// report mirrors the position to lastCommit if it moved and writes the status.
func (r *taskRun) report() { r.write(nil) }

// finish reports once more after the run ended with err.
func (r *taskRun) finish(err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, errRunEnded) {
		err = nil
	}
	r.write(err)
}

func (r *taskRun) write(runErr error) {
	r.mu.Lock()
	last := r.last
	r.mu.Unlock()
	if last != r.written && last.File != "" {
		r.in.writeNode(r.in.r.layout.LastCommit(r.in.task), mustJSON(LastCommit{Position: last, Instance: r.node}))
		r.written = last
	}
	p := r.tracker.Snapshot()
	now := time.Now()
	st := Status{
		State: "running", Instance: r.node, Position: p.Position, LagSeconds: p.LagSeconds,
		EventsBehind: p.EventsBehind, Transactions: p.Transactions, Rows: p.Rows,
		LastError: p.LastError, Updated: now.UTC(),
	}
	if dt := now.Sub(r.prevAt).Seconds(); dt > 0 {
		st.RowsPerSec = float64(p.Rows-r.prevRows) / dt
	}
	r.prevRows, r.prevAt = p.Rows, now
	if p.Snapshotting {
		st.State = "snapshotting"
	}
	if runErr != nil {
		st.State, st.LastError = "retrying", runErr.Error()
		if !apply.Retryable(runErr) {
			st.State = "failed" // tried again after 30 s or when the definition changes
		}
	}
	if st.LagSeconds > r.in.r.cfg.LagThreshold.Seconds() && st.State == "running" {
		st.State = "lagging"
	}
	r.in.writeStatus(st)
	m := r.in.r.metrics
	m.lag.WithLabelValues(r.in.task).Set(st.LagSeconds)
	m.behind.WithLabelValues(r.in.task).Set(float64(st.EventsBehind))
	m.rowsPerSec.WithLabelValues(r.in.task).Set(st.RowsPerSec)
}
