package master

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

// errFenced says a change failed its epoch check: another master has bumped /assign.
var errFenced = errors.New("master: epoch check failed")

// maxOpsPerMulti bounds the ops of one multi (a multi is one request: under 1 MiB).
const maxOpsPerMulti = 200

// act does what the state calls for, in order: take back assignments of lost workers,
// end the tasks that must end without a run, assign pending tasks. An item in error is
// skipped until its retry (fault.go).
func (l *leader) act(ctx context.Context) error {
	if err := l.reclaim(); err != nil {
		return err
	}
	l.expireUnsigned()
	if err := l.settleRefusals(); err != nil {
		return err
	}
	if err := l.endWithoutRun(); err != nil {
		return err
	}
	return l.dispatch()
}

// reclaim takes back the assignments given to a worker that is gone, or to an earlier
// session of it: each becomes a lost run on record and the task pending again. It also
// deletes the assignments of tasks that have ended otherwise (a status someone else
// wrote: the worker leaves such an assignment to the master), which would hold their
// slots for ever.
func (l *leader) reclaim() error {
	now := time.Now().UTC()
	for w, slots := range l.assign {
		live := l.workers[w]
		if live == nil && l.inError(workerKey(w)) {
			continue // not gone, only unreadable: its assignments stand until it is read
		}
		for id, s := range slots {
			_, ended := l.ended[id]
			if live != nil && live.session == s.session && !ended || l.held(taskKey(id)) {
				continue
			}
			ops := []any{&zk.DeleteRequest{Path: l.l.Assignment(w, id), Version: -1}}
			if _, ok := l.tasks[id]; ok {
				rec, _ := json.Marshal(task.Attempt{N: s.attempt, Worker: w, ExitCode: -1, Lost: true, Error: "worker lost", Finished: now})
				ops = append(ops, l.create(l.l.Lost(id, s.attempt), rec))
			}
			if err := l.multi(ops...); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNodeExists) {
				if err := l.contain(taskKey(id), stepTakeBack, 0, err); err != nil {
					return err
				}
				continue
			}
			l.passed(taskKey(id), stepTakeBack)
			if ended {
				l.logger.Info("took back the assignment of an ended task", "task", id, "worker", w)
			} else {
				l.logger.Info("took back the task of a lost worker", "task", id, "worker", w, "attempt", s.attempt)
			}
			delete(slots, id)
			if t := l.tasks[id]; t != nil {
				t.worker = ""
				t.kids.Lost = append(t.kids.Lost, s.attempt)
			}
		}
	}
	return nil
}

// endWithoutRun ends, with a status the master writes, the tasks not running that are
// cancelled, invalid, not signed by a trusted key, refused by their worker, or have lost
// too many runs. A task whose status cannot be written is put in error: it is not
// assigned, and the write is tried again after the backoff.
func (l *leader) endWithoutRun() error {
	now := time.Now().UTC()
	for id, t := range l.tasks {
		if t.worker != "" || l.held(taskKey(id)) {
			continue // its worker ends it, or it waits for its retry
		}
		st := task.Status{Attempts: t.kids.Runs(), Finished: now}
		var ops []any
		switch r := l.refused[id]; {
		case r != nil:
			st.State, st.ExitCode, st.Worker = task.Failed, -1, r.worker
			st.Error = fmt.Sprintf("worker %s refused it: %s", r.worker, r.rec.Error)
			if r.rec.Ran {
				st.Attempts++
				st.Error = fmt.Sprintf("worker %s ran it but could not record its outcome: %s", r.worker, r.rec.Error)
			}
			ops = append(ops, &zk.DeleteRequest{Path: l.l.Refusal(r.worker, id), Version: -1})
		case t.kids.Cancel:
			st.State, st.Error = task.Cancelled, "cancelled before it ran"
		case t.invalid != nil:
			st.State, st.Error, st.ExitCode = task.Failed, "invalid spec: "+t.invalid.Error(), -1
		case t.untrusted != nil:
			st.State, st.Error, st.ExitCode = task.Failed, t.untrusted.Error(), -1
		case len(t.kids.Lost) >= maxLostRuns:
			st.State, st.ExitCode = task.Failed, -1
			st.Error = fmt.Sprintf("lost its worker %d times", len(t.kids.Lost))
		case t.kids.Runs() == 0 && l.parentFailed(t) != "":
			st.State, st.ExitCode, st.Error = task.Failed, -1, l.parentFailed(t)
			if t.spec.OnParentFailure == task.OnParentFailureSkip {
				st.State = task.Skipped
			}
		default:
			continue
		}
		data, _ := json.Marshal(st)
		err := l.multi(append([]any{l.create(l.l.Status(id), data)}, ops...)...)
		var oe *opError
		if errors.As(err, &oe) && oe.path != l.l.Status(id) && errors.Is(err, zk.ErrNoNode) {
			err = l.multi(l.create(l.l.Status(id), data)) // the refusal went meanwhile
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode) {
			if err := l.contain(taskKey(id), stepEnd, 0, err); err != nil {
				return err
			}
			continue
		}
		l.logger.Info("task ended without a run", "task", id, "state", st.State, "reason", st.Error)
		if l.refused[id] != nil {
			l.m.metrics.refusals.Inc()
			delete(l.refused, id)
		}
		l.ended[id] = st.State
		delete(l.tasks, id)
		l.clearFault(taskKey(id))
	}
	return nil
}

// settleRefusals deletes the refusals of tasks that have ended otherwise or are gone: a
// refusal stands only until its task ends.
func (l *leader) settleRefusals() error {
	for id, r := range l.refused {
		if _, known := l.tasks[id]; known || l.inError(taskKey(id)) {
			continue
		}
		err := l.multi(&zk.DeleteRequest{Path: l.l.Refusal(r.worker, id), Version: -1})
		if own(err) {
			return err
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			l.logger.Warn("cannot delete the refusal of an ended task", "task", id, "worker", r.worker, "err", err)
		}
		delete(l.refused, id)
	}
	return nil
}

// dagKey keys a DAG task by its DAG's id and its name.
func dagKey(dag, name string) string { return dag + "\x00" + name }

// parentsDone reports whether every task t waits for (Spec.After) has ended done.
func (l *leader) parentsDone(t *taskState) bool {
	for _, name := range t.spec.After {
		id, ok := l.dagIDs[dagKey(t.spec.DAG, name)]
		if !ok || l.ended[id] != task.Done {
			return false
		}
	}
	return true
}

// parentFailed says which task t waits for ended otherwise than done (or is not there),
// "" if none did.
func (l *leader) parentFailed(t *taskState) string {
	for _, name := range t.spec.After {
		id, ok := l.dagIDs[dagKey(t.spec.DAG, name)]
		if !ok {
			return fmt.Sprintf("it waits for %s, which is not a task of its DAG", name)
		}
		if st, ended := l.ended[id]; ended && st != task.Done {
			return fmt.Sprintf("%s (%s), which it waits for, ended %s", name, id, st)
		}
	}
	return ""
}

// placement is a pending task given a worker.
type placement struct {
	t      *taskState
	worker string
}

// dispatch assigns the pending tasks that may run, the highest priority and then
// the oldest first, each to the live worker with the most free slots among those whose
// labels its selector matches. A task that no such worker can take now is passed over,
// not waited for: a task after it may fit elsewhere. It stops when no slot is free.
func (l *leader) dispatch() error {
	now := time.Now()
	var pending []*taskState
	for _, t := range l.tasks {
		if t.worker == "" && t.signed && !now.Before(t.eligible) && l.parentsDone(t) && l.refused[t.id] == nil && !l.inError(taskKey(t.id)) {
			pending = append(pending, t)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	slices.SortFunc(pending, func(a, b *taskState) int {
		if a.spec.Priority != b.spec.Priority {
			return b.spec.Priority - a.spec.Priority
		}
		return strings.Compare(a.id, b.id)
	})
	free := l.freeSlots()
	if err := l.planShards(free); err != nil {
		return err
	}
	left := 0
	for _, n := range free {
		left += max(n, 0)
	}
	// Selectors that found no free slot this round: slots only fill up as the round
	// goes, so the tasks after with the same selector are skipped at the cost of a
	// lookup, whatever the number of pending tasks.
	placeless := map[string]bool{}
	var batch []placement
	for _, t := range pending {
		if left == 0 {
			break
		}
		var w string
		if t.spec.Shard != nil {
			// An item of a sharded job runs where the job's plan places it (on the
			// workers its selector matches: planShards).
			if w = l.shardOwner(&t.spec); free[w] <= 0 {
				continue
			}
		} else {
			sel := ""
			if len(t.spec.Selector) > 0 {
				sel = selectorKey(t.spec.Selector)
				if placeless[sel] {
					continue
				}
			}
			if w = l.mostFree(free, t.spec.Selector); w == "" {
				placeless[sel] = true
				continue
			}
		}
		free[w]--
		left--
		batch = append(batch, placement{t, w})
		if len(batch) == maxOpsPerMulti-1 {
			if err := l.assignBatch(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return l.assignBatch(batch)
}

// freeSlots maps each live worker that accepts work to its free slots: a drained,
// draining, stopping or stale worker gets nothing new. Stale is judged by the servers'
// clock: the registration's mtime (the worker's heartbeat) against the clock node's.
func (l *leader) freeSlots() map[string]int {
	now, err := task.ServerNow(l.s, l.l)
	if err != nil {
		l.logger.Warn("cannot read the servers' clock: judging no worker stale", "err", err)
	}
	free := make(map[string]int, len(l.workers))
	for id, w := range l.workers {
		b := w.info.StaleAfter()
		stale := err == nil && b > 0 && now.Sub(w.beat) > b
		if stale != w.stale {
			w.stale = stale
			if stale {
				l.logger.Warn("worker stale: its heartbeat stopped; assigning nothing new to it", "worker", id, "last_beat", w.beat, "bound", b)
			} else {
				l.logger.Info("worker beats again", "worker", id)
			}
		}
		if _, ready := l.assign[id]; ready && !stale && l.accepts(id, w) && !l.held(workerKey(id)) {
			free[id] = w.info.Capacity - len(l.assign[id])
		}
	}
	return free
}

// selectorKey is a selector as a map key: its sorted entries, each ended by a NUL (a
// valid label's key holds no '=' and its value no NUL, so no two selectors share one).
func selectorKey(sel task.Selector) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		b.WriteString(k + "=" + sel[k] + "\x00")
	}
	return b.String()
}

// mostFree returns, of the workers in free whose labels sel matches, the one with the
// most free slots (the first by id among equals); "" if none has a free slot.
func (l *leader) mostFree(free map[string]int, sel task.Selector) string {
	best := ""
	for w, n := range free {
		if n > 0 && (best == "" || n > free[best] || n == free[best] && w < best) && sel.Matches(l.workers[w].info.Labels) {
			best = w
		}
	}
	return best
}

// assignBatch creates the assignments in one multi. If one of them fails, the state
// is read again before the next try.
func (l *leader) assignBatch(batch []placement) error {
	if len(batch) == 0 {
		return nil
	}
	now := time.Now().UTC()
	ops := make([]any, 0, len(batch))
	for _, p := range batch {
		a := task.Assignment{
			Attempt: p.t.kids.Runs() + 1, Failures: len(p.t.kids.Failures),
			MasterEpoch: int64(l.epoch), Session: l.workers[p.worker].session, Assigned: now,
		}
		data, _ := json.Marshal(a)
		ops = append(ops, l.create(l.l.Assignment(p.worker, p.t.id), data))
	}
	if err := l.multi(ops...); err != nil {
		if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
			l.logger.Warn("assignments refused: reading the state again", "err", err)
			l.markAll()
			return nil
		}
		// Any other refusal is the worker's whose directory the failing op was in: it is
		// put in error, and the others are given their tasks in a step at once.
		var oe *opError
		if own(err) || !errors.As(err, &oe) || l.opWorker(oe.path) == "" {
			return err
		}
		l.itemFailed(workerKey(l.opWorker(oe.path)), stepAssign, 0, err)
		l.again = true
		return nil
	}
	for _, p := range batch {
		l.passed(workerKey(p.worker), stepAssign)
		p.t.worker = p.worker
		l.assign[p.worker][p.t.id] = &slot{session: l.workers[p.worker].session, attempt: p.t.kids.Runs() + 1}
		since := p.t.spec.Submitted
		if p.t.eligible.After(since) {
			since = p.t.eligible
		}
		l.m.metrics.assignLatency.Observe(now.Sub(since).Seconds())
		l.logger.Debug("assigned", "task", p.t.id, "worker", p.worker)
	}
	return nil
}

func (l *leader) create(path string, data []byte) *zk.CreateRequest {
	return &zk.CreateRequest{Path: path, Data: data, Acl: l.s.ACLFor(path)}
}

// multi runs ops after a check of this term's epoch, all or nothing. It returns
// errFenced if the check failed, else the error of the op that failed (an *opError).
func (l *leader) multi(ops ...any) error {
	_, err := l.multiResults(ops...)
	return err
}

// multiResults is multi, returning the results of ops (the epoch check's left out).
func (l *leader) multiResults(ops ...any) ([]zk.MultiResponse, error) {
	all := append([]any{&zk.CheckVersionRequest{Path: l.l.Assign(), Version: l.epoch}}, ops...)
	res, err := l.conn.Multi(all...)
	for i, r := range res {
		if r.Error == nil {
			continue
		}
		if i == 0 && errors.Is(r.Error, zk.ErrBadVersion) {
			return nil, errFenced
		}
		return nil, &opError{path: opPath(all[i]), err: r.Error}
	}
	if err != nil {
		return nil, err
	}
	return res[1:], nil
}

// opError is the error of one op of a multi, with the path it was on.
type opError struct {
	path string
	err  error
}

func (e *opError) Error() string { return fmt.Sprintf("%s: %v", e.path, e.err) }
func (e *opError) Unwrap() error { return e.err }

func opPath(op any) string {
	switch op := op.(type) {
	case *zk.CreateRequest:
		return op.Path
	case *zk.DeleteRequest:
		return op.Path
	case *zk.CheckVersionRequest:
		return op.Path
	case *zk.SetDataRequest:
		return op.Path
	}
	return "?"
}

// nextRetry returns when the earliest retry delay ends, or an unsigned task's grace
// (a long way off if none).
func (l *leader) nextRetry() time.Time {
	next := time.Now().Add(time.Hour)
	for _, t := range l.tasks {
		if t.worker == "" && t.eligible.Before(next) && t.eligible.After(time.Now()) {
			next = t.eligible
		}
		if end := t.seen.Add(l.m.cfg.SignGrace); !t.signed && t.untrusted == nil && end.Before(next) {
			next = end
		}
	}
	return next
}
