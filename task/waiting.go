package task

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Why a pending task waits is worked out by the client that reads it, not written by
// the master: the master would have to write a reason per pending task each time the
// workers change, on the path that assigns, while a reader already can read what the
// master decides by — the live registrations (labels, state, heartbeat) and the drain
// requests — when someone asks (docs/tasks.md, "Selectors").

// maxListed bounds the workers a reason names.
const maxListed = 8

// workerSnapshot is the workers, read once for the tasks of one call (Get, GetEach,
// List) and only if one of them is pending.
type workerSnapshot struct {
	read    bool
	workers []WorkerView
	err     error
	// dag holds what parentsWait read of DAG tasks during the call, by id: a list of a
	// DAG's pending tasks reads each of its tasks once, not once per child.
	dag map[string]dagRead
}

// dagRead is a task as parentsWait reads it: its spec (nil if unreadable) and state.
type dagRead struct {
	spec  *Spec
	state string
}

// waiting returns why pending task t waits; "" if the workers cannot be read.
func (ws *workerSnapshot) waiting(ctx context.Context, c *Client, t *Task) string {
	var why []string
	if r := ws.parentsWait(ctx, c, t); r != "" {
		why = append(why, r)
	}
	if r := retryWait(t, time.Now()); r != "" {
		why = append(why, r)
	}
	if !ws.read {
		ws.workers, ws.err = c.Workers(ctx)
		ws.read = true
	}
	if ws.err == nil {
		if r := waitingFor(t.Spec.Selector, ws.workers); r != "" {
			why = append(why, r)
		}
	}
	return strings.Join(why, "; ")
}

// retryWait says when a task whose last run failed may run again, if that is still to
// come by now: the master waits the spec's retry delay after a failed run (lost runs
// are retried at once).
func retryWait(t *Task, now time.Time) string {
	var last *Attempt
	for i := range t.History {
		if a := &t.History[i]; !a.Lost && (last == nil || a.N > last.N) {
			last = a
		}
	}
	if last == nil || last.Finished.IsZero() {
		return ""
	}
	at := last.Finished.Add(time.Duration(t.Spec.RetryDelay))
	if !at.After(now) {
		return ""
	}
	return fmt.Sprintf("retry delay: not before %s", at.UTC().Format("2006-01-02 15:04:05.000Z"))
}

// waitingFor says why a task with selector sel cannot be given to any of workers (the
// registered workers, with their drain requests and staleness); "" when a live worker
// that takes tasks matches it.
func waitingFor(sel Selector, workers []WorkerView) string {
	var live, matching []WorkerView
	for _, w := range workers {
		if w.Info.Capacity < 1 {
			continue // the master does not read it as a worker
		}
		live = append(live, w)
		if sel.Matches(w.Info.Labels) {
			matching = append(matching, w)
		}
	}
	switch {
	case len(live) == 0 && len(sel) == 0:
		return "no live worker"
	case len(live) == 0:
		return fmt.Sprintf("no live worker (it needs labels %s)", sel)
	case len(matching) == 0:
		return fmt.Sprintf("no live worker has labels %s (live: %s)", sel, listWorkers(live, func(w WorkerView) string {
			if len(w.Info.Labels) == 0 {
				return "(no labels)"
			}
			return FormatLabels(w.Info.Labels)
		}))
	}
	for _, w := range matching {
		if notTaking(w) == "" {
			return ""
		}
	}
	which := "no live worker"
	if len(sel) > 0 {
		which += " with labels " + sel.String()
	}
	return fmt.Sprintf("%s takes new tasks (%s)", which, listWorkers(matching, notTaking))
}

// notTaking says why a live worker is given nothing new, "" if it is not so.
func notTaking(w WorkerView) string {
	switch {
	case w.Drain != nil:
		return "drained"
	case !w.Info.State.Accepts():
		return string(w.Info.State)
	case w.Stale:
		return "stale"
	}
	return ""
}

// listWorkers renders workers as "id what; id what", the first maxListed of them.
func listWorkers(workers []WorkerView, what func(WorkerView) string) string {
	var out []string
	for i, w := range workers {
		if i == maxListed {
			out = append(out, fmt.Sprintf("and %d more", len(workers)-maxListed))
			break
		}
		out = append(out, w.ID+" "+what(w))
	}
	return strings.Join(out, "; ")
}

// parentsWait says which of the tasks a DAG task waits for (Spec.After) have not ended
// done, with where they stand; "" when none is left, or they cannot be found. A DAG's
// tasks are created in one multi, parents first, so they are the task's neighbours
// below it in sequence (SubmitDAG, Job.Runs): they are read back from it, at most
// MaxDAGSize of them, each once per call.
func (ws *workerSnapshot) parentsWait(ctx context.Context, c *Client, t *Task) string {
	if len(t.Spec.After) == 0 {
		return ""
	}
	want := make(map[string]bool, len(t.Spec.After))
	for _, name := range t.Spec.After {
		want[name] = true
	}
	var left []string
	seq := seqOf(t.ID)
	for k := int64(1); k < MaxDAGSize && seq-k >= 0 && len(want) > 0; k++ {
		id := fmt.Sprintf("%s%010d", taskPrefix, seq-k)
		r := ws.readDAGTask(ctx, c, id)
		if r.spec == nil || r.spec.DAG != t.Spec.DAG {
			break // the DAG's block ends here
		}
		if !want[r.spec.Name] {
			continue
		}
		delete(want, r.spec.Name)
		if r.state != string(Done) {
			left = append(left, fmt.Sprintf("%s (%s, %s)", r.spec.Name, id, r.state))
		}
	}
	if len(left) == 0 {
		return ""
	}
	return "waits for " + strings.Join(left, ", ")
}

// readDAGTask reads task id's spec and state, or returns what the call read already.
func (ws *workerSnapshot) readDAGTask(ctx context.Context, c *Client, id string) dagRead {
	if r, ok := ws.dag[id]; ok {
		return r
	}
	var r dagRead
	var spec Spec
	if c.readJSON(ctx, c.l.Task(id), &spec) == nil {
		r.spec, r.state = &spec, "not ended"
		var st Status
		if c.readJSON(ctx, c.l.Status(id), &st) == nil {
			r.state = string(st.State)
		}
	}
	if ws.dag == nil {
		ws.dag = map[string]dagRead{}
	}
	ws.dag[id] = r
	return r
}
