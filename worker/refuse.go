package worker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/backoff"
	"github.com/paddock/paddock/task"
)

// Refusals and holds. No task a client can shape makes a worker spin (task/fault.go has
// the contract):
//
//   - a task the worker cannot run (its spec cannot be read) or whose outcome it cannot
//     record (the servers refuse the multi for a reason other than the connection) is
//     refused: handed back with a task.Refusal in the multi that deletes its assignment,
//     and never claimed again by this worker. The master ends it failed, naming the
//     worker and why. A task whose outcome could not be recorded ran once, and only once.
//   - an assignment the worker cannot read or mark started (any error but the
//     connection's) is held: skipped, and tried again only after the backoff, while the
//     other assignments go on.
//
// Both are counted on /metrics (paddock_worker_tasks_refused_total,
// paddock_worker_assignments_held).

// Values of the reason label of paddock_worker_tasks_refused_total.
const (
	refusedUnrecorded = "unrecorded" // it ran; its outcome could not be recorded
	refusedUnreadable = "unreadable" // it did not run: its spec could not be read
)

// refusal is a task this worker refuses: its assignment (at the version last read or
// written, so that one the master took back meanwhile stays taken) and why.
type refusal struct {
	id, path string
	version  int32
	attempt  int
	ran      bool
	why      error
}

// refuse hands r's task back as refused, riding out connection losses until ctx ends:
// for a job's goroutine, whose run is over. It touches no loop state.
func (l *loop) refuse(ctx context.Context, r refusal) {
	l.refusing(r)
	for {
		err := l.handBack(r)
		if err == nil || l.sess.WaitToRetry(ctx, err) != nil {
			return
		}
	}
}

// refusing counts and logs r, once per refusal.
func (l *loop) refusing(r refusal) {
	reason := refusedUnreadable
	if r.ran {
		reason = refusedUnrecorded
	}
	l.w.metrics.refused.WithLabelValues(reason).Inc()
	l.logger.Warn("refusing a task: handing it back, never to claim it again", "task", r.id, "attempt", r.attempt,
		"ran", r.ran, "err", r.why)
}

// handBack makes one try at handing r back: one multi deletes the assignment and
// creates the refusal. It returns a connection loss for the caller to wait out, nil
// otherwise: the refusal is on record, or cannot be (logged), or the master took the
// assignment back meanwhile. Whichever, the worker never claims the task again.
func (l *loop) handBack(r refusal) error {
	target := l.w.layout.Refusal(l.w.cfg.ID, r.id)
	rec, _ := json.Marshal(task.Refusal{Task: r.id, Worker: l.w.cfg.ID, Attempt: r.attempt, Ran: r.ran, Error: r.why.Error(), At: now()})
	op, err := multiErr(l.conn.Multi(
		&zk.DeleteRequest{Path: r.path, Version: r.version},
		&zk.CreateRequest{Path: target, Data: rec, Acl: l.sess.ACLFor(target)},
	))
	switch {
	case err == nil:
	case op == 0 && (errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion)):
		// Taken back by the master, or a try whose answer was lost went through.
	case op == 1 && errors.Is(err, zk.ErrNodeExists):
		l.logger.Info("task refused before: handing back its assignment alone", "task", r.id)
		if err := l.conn.Delete(r.path, r.version); coordinator.IsConnLoss(err) {
			return err
		}
	case op < 0 && coordinator.IsConnLoss(err):
		return err
	default:
		l.logger.Error("cannot hand back a refused task: the master is not told", "task", r.id, "path", target, "err", err)
	}
	return nil
}

// hold is an assignment that failed to be claimed for a reason other than the
// connection: it is skipped until until.
type hold struct {
	retry backoff.Retry
	until time.Time
	err   string
}

// holdBack puts assignment name off after err, by the backoff of its failures in a row.
func (l *loop) holdBack(name string, err error) {
	h := l.holds[name]
	if h == nil {
		h = &hold{retry: backoff.Retry{Rand: l.w.rand}}
		l.holds[name] = h
	}
	wait := h.retry.Fail()
	h.until = time.Now().Add(wait)
	if h.err != err.Error() {
		l.logger.Warn("cannot claim an assignment: skipping it until it is tried again", "task", name, "err", err,
			"retry_in", wait.Round(time.Millisecond))
	}
	h.err = err.Error()
	l.w.metrics.holds.Inc()
	l.w.metrics.held.Set(float64(len(l.holds)))
}

// holding says assignment name is held and not yet due.
func (l *loop) holding(name string) bool {
	h := l.holds[name]
	return h != nil && time.Now().Before(h.until)
}

// nextHold returns when the next held assignment comes due (zero if none).
func (l *loop) nextHold() time.Time {
	var next time.Time
	for _, h := range l.holds {
		if next.IsZero() || h.until.Before(next) {
			next = h.until
		}
	}
	return next
}

// forget drops the holds and refusals of tasks that have neither an assignment nor a
// refusal in the directory any more (listed: the assignments' names; refusals: the
// tasks refused on record). A refusal is remembered while either stands, so that a
// task the master gives back before it has ended the task is not claimed again.
func (l *loop) forget(listed, refusals map[string]bool) {
	for name := range l.holds {
		if !listed[name] {
			delete(l.holds, name)
		}
	}
	for id := range l.refused {
		if !listed[id] && !refusals[id] {
			delete(l.refused, id)
		}
	}
	l.w.metrics.held.Set(float64(len(l.holds)))
	l.w.metrics.refusedNow.Set(float64(len(l.refused)))
}
