package master

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/backoff"
	"github.com/paddock/paddock/task"
)

// Items in error. The invariant (task/fault.go, docs/tasks.md "Items in error"): no
// single item a client can shape — a job, its fires or shard plan, a task and what hangs
// under it, an assignment, a worker's registration or assignment directory — makes the
// master give up mastership or step in a loop. A step of the term sorts every error:
//
//   - the master's own (own): the connection or session lost, the epoch fenced, /master
//     lost, the session closed. The term waits for the connection, takes its epoch back
//     or ends; these are the only ways a term ends.
//   - an item's: anything else that an operation on one item's nodes returned (NoAuth,
//     a node missing or in the way, a request too large). The item is put in error
//     (itemFailed): recorded with its reason, skipped, and tried again only after the
//     backoff (internal/backoff) — or at once when the job changes or an operator clears
//     the record — while every other item goes on.
//   - a step's: the master's own directories (/tasks, /jobs, /assign, /workers) cannot
//     be read. The whole step is tried again after the backoff, still leading.
//
// Jobs and tasks in error are recorded in /faults/jobs/<job> and /faults/tasks/<task>
// (task.Fault), which the console shows; a worker in error (its registration or its
// assignment directory unusable) only in the log and the metrics, and it gets no work
// until its retry.

// Kinds of item, as the metrics' kind label has them: task.FaultJob, task.FaultTask and
// this one, which is not recorded in a node.
const kindWorker = "worker"

// Steps an item can fail at, as the metrics' step label and a Fault's Step have them.
const (
	stepRead     = "read"      // reading the item's nodes
	stepValidate = "validate"  // a job's definition is not one the master fires
	stepFire     = "fire"      // recording a job's fires and starting their tasks
	stepPlace    = "place"     // writing a sharded job's plan
	stepEnd      = "end"       // writing the status of a task that ends without a run
	stepTakeBack = "take back" // taking back the assignment of a lost worker
	stepAssign   = "assign"    // creating assignments in a worker's directory
)

// maxFaultError bounds the reason a fault records: an error may quote a path, and a
// path may be as long as a request.
const maxFaultError = 1024

type faultKey struct{ kind, name string }

func jobKey(name string) faultKey  { return faultKey{task.FaultJob, name} }
func taskKey(id string) faultKey   { return faultKey{task.FaultTask, id} }
func workerKey(id string) faultKey { return faultKey{kindWorker, id} }

// fault is an item in error, as the term keeps it.
type fault struct {
	rec   task.Fault    // as recorded (or to be)
	retry backoff.Retry // the failures in a row and the next wait
	round uint64        // the step of the latest failure: an item that goes through in a later step is cleared
	// written: rec is in the item's fault node (one that goes missing was cleared by an
	// operator: readFaults).
	written bool
	marked  bool // the retry that came due has been marked for reading
	// clearing: the item went through but its node could not be deleted yet; the item is
	// not held back meanwhile.
	clearing bool
}

// own says err is the master's own, not an item's: the term must handle it (wait for the
// connection, take its epoch back, end), whatever item it came from.
func own(err error) bool {
	return errors.Is(err, errFenced) || errors.Is(err, errDeposed) || coordinator.IsConnLoss(err) ||
		errors.Is(err, zk.ErrClosing) || errors.Is(err, coordinator.ErrClosed) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// contain returns err if it is the master's own, for the step to handle; otherwise it
// puts item k in error (itemFailed) and returns nil, so that the step goes on with the
// other items.
func (l *leader) contain(k faultKey, step string, version int32, err error) error {
	if err == nil || own(err) {
		return err
	}
	l.itemFailed(k, step, version, err)
	return nil
}

// failJob puts job name in error at step, for err: it is not fired until it is tried
// again, after the backoff or as soon as its definition changes or an operator clears
// the record, and /faults/jobs/<name> says why. Every reason a job is not fired goes
// through here — an invalid definition, one that is not the platform's word, a fire the
// servers refused.
func (l *leader) failJob(name, step string, err error) {
	var version int32
	if j := l.jobs[name]; j != nil {
		version = j.version
	}
	l.itemFailed(jobKey(name), step, version, err)
}

// itemFailed records that item k failed at step with err (version: a job's data
// version), and when it is to be tried again: after backoff.Default's wait for its
// failures in a row.
func (l *leader) itemFailed(k faultKey, step string, version int32, err error) {
	now := time.Now().UTC()
	reason := err.Error()
	if len(reason) > maxFaultError {
		reason = strings.ToValidUTF8(reason[:maxFaultError], "") + "…"
	}
	f := l.faults[k]
	if f == nil {
		f = &fault{rec: task.Fault{Kind: k.kind, Name: k.name, Since: now}, retry: backoff.Retry{Rand: l.m.rand}}
		l.faults[k] = f
	} else if f.clearing {
		// It went through, and fails again before its record could go: a new run of
		// failures, over the old record.
		f.rec.Since, f.rec.Tries = now, 0
		f.retry.Reset()
	}
	level := slog.LevelDebug
	if f.rec.Tries == 0 || f.clearing || f.rec.Step != step || f.rec.Error != reason {
		level = slog.LevelWarn // what is new is worth a line; the same failure again is not
	}
	wait := f.retry.Fail()
	f.rec.Step, f.rec.Error, f.rec.Version, f.rec.Master = step, reason, version, l.m.id
	f.rec.Last, f.rec.Next = now, now.Add(wait)
	f.rec.Tries++
	f.round, f.marked, f.clearing = l.round, false, false
	l.m.metrics.itemErrors.WithLabelValues(k.kind, step).Inc()
	l.logger.Log(context.Background(), level, "item in error: skipped until it is tried again", "kind", k.kind,
		"item", k.name, "step", step, "err", reason, "tries", f.rec.Tries, "retry_in", wait.Round(time.Millisecond))
	if k.kind != kindWorker {
		l.writeFault(k, f)
	}
	l.updateFaultGauge()
}

// held says item k is in error and not yet due for its next try: it is skipped.
func (l *leader) held(k faultKey) bool {
	f := l.faults[k]
	return f != nil && !f.clearing && time.Now().Before(f.rec.Next)
}

// heldAt is held for an item in error at step only.
func (l *leader) heldAt(k faultKey, step string) bool {
	return l.held(k) && l.faults[k].rec.Step == step
}

// inError says item k is in error, due or not: a task in error is not assigned until
// the step that failed goes through.
func (l *leader) inError(k faultKey) bool {
	f := l.faults[k]
	return f != nil && !f.clearing
}

// passed clears item k's fault if it is one of steps and the item did not fail again in
// this step of the term: what failed has gone through.
func (l *leader) passed(k faultKey, steps ...string) {
	f := l.faults[k]
	if f == nil || f.round == l.round && !f.clearing || !slices.Contains(steps, f.rec.Step) {
		return
	}
	l.clearFault(k)
}

// clearFault forgets item k's fault and deletes its node: the item went through, ended
// or is gone. A delete that fails is tried again, with the backoff, the next time the
// item passes or is found gone.
func (l *leader) clearFault(k faultKey) {
	f := l.faults[k]
	if f == nil || f.clearing && time.Now().Before(f.rec.Next) {
		return
	}
	if f.written {
		err := l.multi(&zk.DeleteRequest{Path: l.faultPath(k), Version: -1})
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			level := slog.LevelDebug
			if !f.clearing {
				level = slog.LevelWarn
				f.retry.Reset()
			}
			wait := f.retry.Fail()
			f.clearing, f.rec.Next = true, time.Now().Add(wait)
			l.logger.Log(context.Background(), level, "cannot delete the record of an item no longer in error",
				"kind", k.kind, "item", k.name, "err", err, "retry_in", wait.Round(time.Millisecond))
			l.updateFaultGauge()
			return
		}
	}
	if !f.clearing {
		l.logger.Info("item no longer in error", "kind", k.kind, "item", k.name, "tries", f.rec.Tries)
	}
	delete(l.faults, k)
	l.updateFaultGauge()
}

func (l *leader) faultPath(k faultKey) string {
	if k.kind == task.FaultJob {
		return l.l.JobFault(k.name)
	}
	return l.l.TaskFault(k.name)
}

// writeFault records f in its node, fenced, and watches the node for an operator's
// delete. A write that fails is logged: the item stays in error all the same, and the
// next failure writes again.
func (l *leader) writeFault(k faultKey, f *fault) {
	p := l.faultPath(k)
	data, _ := json.Marshal(f.rec)
	var op any = &zk.SetDataRequest{Path: p, Data: data, Version: -1}
	if !f.written {
		op = l.create(p, data)
	}
	err := l.multi(op)
	switch {
	case !f.written && errors.Is(err, zk.ErrNodeExists):
		f.written = true // an earlier term's record: replaced
		l.writeFault(k, f)
		return
	case f.written && errors.Is(err, zk.ErrNoNode):
		// Cleared by an operator before its watch told: this failure starts a new record.
		f.written = false
		f.retry.Reset()
		f.rec.Since, f.rec.Tries, f.rec.Next = f.rec.Last, 1, f.rec.Last.Add(f.retry.Fail())
		l.writeFault(k, f)
		return
	case err != nil:
		l.logger.Warn("cannot record an item in error", "kind", k.kind, "item", k.name, "path", p, "err", err)
		return
	}
	f.written = true
}

// faultDirs are the directories of the fault records, by kind.
func (l *leader) faultDirs() map[string]string {
	return map[string]string{task.FaultJob: l.l.JobFaults(), task.FaultTask: l.l.TaskFaults()}
}

// readFaults lists the fault records of kind, arming a watch on the directory (its
// children change when a record is made or deleted, not when one is rewritten at a
// retry). A record this term does not know, an earlier term's, is adopted: kept while
// its item is in error, tried again at once, deleted when it passes. A record this term
// wrote that is missing was deleted by an operator: the item is no longer in error and
// is read and tried again at once (if it fails again, it is recorded anew).
func (l *leader) readFaults(ctx context.Context, kind string, d *dirtySet) error {
	dir := l.faultDirs()[kind]
	armed := l.faultsArmed[kind]
	names, err := l.children(ctx, dir, &armed, func(d *dirtySet) { d.markFaults(kind) })
	l.faultsArmed[kind] = armed
	if errors.Is(err, zk.ErrNoNode) {
		return nil // made at the next takeover; meanwhile items in error are only logged
	}
	if err != nil {
		return err
	}
	listed := make(map[string]bool, len(names))
	for _, name := range names {
		listed[name] = true
		if err := l.adoptFault(faultKey{kind, name}, path.Join(dir, name)); err != nil {
			return err
		}
	}
	for k, f := range l.faults {
		if k.kind == kind && f.written && !f.clearing && !listed[k.name] {
			l.logger.Info("item in error cleared by an operator: trying it again", "kind", k.kind, "item", k.name)
			delete(l.faults, k)
			l.markItem(d, k)
		}
	}
	l.updateFaultGauge()
	return nil
}

// adoptFault takes in the record at p of item k, unless the term knows k's fault.
func (l *leader) adoptFault(k faultKey, p string) error {
	if l.faults[k] != nil {
		return nil
	}
	var rec task.Fault
	data, _, err := l.conn.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if own(err) {
		return err
	}
	json.Unmarshal(data, &rec) // a record of an unknown form, or unreadable, is replaced
	rec.Kind, rec.Name, rec.Next = k.kind, k.name, time.Now()
	l.faults[k] = &fault{rec: rec, written: true, retry: backoff.Retry{Rand: l.m.rand}}
	return nil
}

// retryNow makes item k due at once, its backoff started over: it changed.
func (l *leader) retryNow(k faultKey, f *fault) {
	f.retry.Reset()
	f.rec.Next = time.Now()
	f.marked = false
}

// nextDue returns when the next item in error comes due for its retry (zero if none).
func (l *leader) nextDue() time.Time {
	var next time.Time
	for _, f := range l.faults {
		if !f.clearing && !f.marked && (next.IsZero() || f.rec.Next.Before(next)) {
			next = f.rec.Next
		}
	}
	return next
}

// markDue marks for reading again the items in error whose retry came due.
func (l *leader) markDue(d *dirtySet) {
	now := time.Now()
	for k, f := range l.faults {
		if f.clearing || f.marked || f.rec.Next.After(now) {
			continue
		}
		f.marked = true
		l.markItem(d, k)
	}
}

// markItem marks item k for reading again, all of it.
func (l *leader) markItem(d *dirtySet, k faultKey) {
	switch k.kind {
	case task.FaultJob:
		d.markJobFires(k.name)
	case task.FaultTask:
		d.markTask(k.name)
	case kindWorker:
		d.workers = true
		d.markAssign(k.name)
	}
}

// sweepFaults clears the faults of kind whose items are gone (present says which are
// there).
func (l *leader) sweepFaults(kind string, present func(name string) bool) {
	for k := range l.faults {
		if k.kind == kind && !present(k.name) {
			l.clearFault(k)
		}
	}
}

func (l *leader) updateFaultGauge() {
	counts := map[string]int{task.FaultJob: 0, task.FaultTask: 0, kindWorker: 0}
	for k, f := range l.faults {
		if !f.clearing {
			counts[k.kind]++
		}
	}
	for kind, n := range counts {
		l.m.metrics.inError.WithLabelValues(kind).Set(float64(n))
	}
}

// stepFailed puts the whole step off after an error on the master's own directories,
// still leading: it returns when to try again.
func (l *leader) stepFailed(err error) time.Time {
	wait := l.stepRetry.Fail()
	l.m.metrics.stepErrors.Inc()
	l.logger.Error("step failed: trying again, still the active master", "err", err,
		"tries", l.stepRetry.Failures(), "retry_in", wait.Round(time.Millisecond))
	return time.Now().Add(wait)
}

// opWorker returns the worker whose assignment directory path is in ("" if none).
func (l *leader) opWorker(p string) string {
	dir := path.Dir(path.Dir(p))
	if dir != l.l.Assign() {
		return ""
	}
	return path.Base(path.Dir(p))
}
