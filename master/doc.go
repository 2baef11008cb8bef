// Package master is the master of paddock's task-scheduling cluster: masters stand for
// election on /master, and the one elected assigns the pending tasks to live workers
// (the layout, the task states and the fencing rule are in package task).
//
// The active master keeps the cluster's state in memory, read at takeover and kept
// current by watches on /workers, /tasks, each /assign/<worker> and each task's
// children, with a full re-read every Resync as a safety net. On each change it, in
// order: takes back the assignments of workers that are gone (or given to an earlier
// session of a worker), which become lost runs and their tasks pending again; ends
// without a run the pending tasks that are cancelled, invalid, not signed by a trusted
// key (at once when badly signed, after SignGrace when unsigned: provenance.go), or lost
// their worker too many times; and assigns pending tasks whose signature verified —
// highest priority, then oldest, first;
// a task that failed not before its retry delay — each to the live worker with the
// most free slots among those that have its selector's labels, in multis that check
// the master's epoch. A task no such worker can take is passed over, not waited for.
//
// A master that may have lost /master (its session suspended or expired, its node
// gone) stops at once; it campaigns again and, if elected, starts a new epoch and
// reads everything again before acting. Only that, the epoch taken by another master
// (taken back) and the session closing end a term: no item a client can shape does.
// An error of one job, task or worker puts that item in error — recorded in
// /faults/jobs/<job> or /faults/tasks/<task> with its reason, skipped, tried again with
// exponential backoff and jitter, at once when the job changes or an operator clears the
// record — while the others go on; an error on the master's own directories puts the
// whole step off with the same backoff, still leading (fault.go). A task its worker
// refused (/assign/<worker>/refused-<task>) is ended failed, naming the worker and why.
//
// /metrics adds to the task counts paddock_master_terms_total (terms led),
// paddock_master_item_errors_total{kind,step}, paddock_master_items_in_error{kind},
// paddock_master_step_errors_total and paddock_master_refused_tasks_total.
package master
