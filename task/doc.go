// Package task is the data model of paddock's task-scheduling cluster and the client
// that submits and follows tasks. The master (package master) assigns tasks to the
// workers (package worker); clients, the master and the workers share nothing but the
// znodes below, all under a configurable root (default "/"):
//
//	/master                         ephemeral   the active master: {"id","addr","since","epoch"}
//	/workers/<worker>               ephemeral   a live worker: {"addr","capacity","labels","started",
//	                                            "state","host","pid","session_timeout"}; state is
//	                                            active, draining, drained or stopping
//	/tasks/task-<seq>               persistent-sequential, by a client: the Spec (JSON)
//	/tasks/task-<seq>/cancel        persistent  a client asks to cancel
//	/tasks/task-<seq>/attempt-<n>   persistent  run n failed and the task is to be retried: an Attempt
//	/tasks/task-<seq>/lost-<n>      persistent  run n's worker died, or handed it back (drain deadline, stop
//	                                            grace): an Attempt (not counted as a failure)
//	/tasks/task-<seq>/status        persistent  created once, when the task ends: the Status
//	/drain/<worker>                 persistent  by the console or admin: a DrainRequest; the worker
//	                                            takes no new tasks while it stands
//	/assign                         persistent  its data version is the active master's epoch
//	/assign/<worker>                persistent  created by the worker at start
//	/assign/<worker>/task-<seq>     persistent  by the master: an Assignment; the worker marks it started
//	/jobs/<job>                     persistent  by a client: a Job (a task template, a cron schedule,
//	                                            misfire and concurrency policies, enabled)
//	/jobs/<job>/fires/fire-<time>   persistent  by the master: a Fire, one per scheduled time (UTC,
//	                                            yyyymmddThhmmssZ): started (with its task), queued or
//	                                            skipped; created in the multi that submits its task
//	/jobs/<job>/shards              persistent  by the master: a sharded job's ShardPlan (worker → items)
//	/assign/<worker>/refused-task-<seq>  persistent  by the worker, in the multi that deletes its
//	                                            assignment: a Refusal (it could not read the task or
//	                                            record its outcome); the master ends the task and deletes it
//	/faults/jobs/<job>              persistent  by the master: a Fault, the job in error (not fired until
//	/faults/tasks/task-<seq>                    its retry); deleted when the item goes through, ends or
//	                                            goes; an operator's delete tries it again at once
//
//	/tasks/task-<seq>/sig           persistent  by its author, after the spec: the spec's signature
//	/jobs/<job>/sig                 persistent  by its author: the definition's signature (sign.go)
//
// With role ACLs (the services' roles key; on by default under paddock up) each node
// gets the ACL Layout.ACLRules gives its path: only submitters, the console and the
// master create tasks, only the master assigns (docs/security.md has the table). What
// runs is trusted by signature, not by ACL: a worker runs a task, and the master
// assigns it, only if its spec's signature verifies against a key trusted for
// submitting; the master fires only jobs whose definition's signature verifies, and
// signs the tasks it creates for them (sign.go).
//
// A task's state follows from those nodes: a status node holds its end (done, failed or
// cancelled); otherwise an assignment makes it assigned, or running once the worker has
// marked it started; otherwise it is pending.
//
// Exactly-once outcome. A worker ends a run with one multi that deletes its assignment
// (at the version it last wrote) and creates either the status or an attempt record.
// If the assignment was taken back in the meantime — the worker was presumed dead —
// the multi fails and the run leaves no trace; if two runs race, only one creates the
// status. Execution is at least once: a task may run again after its worker was cut
// off, so tasks should be idempotent.
//
// Fencing. A master that wins /master first bumps the data version of /assign; that
// version is its epoch, and every change it makes to assignments and statuses is a
// multi that checks it. A deposed master's multi fails the check and changes nothing,
// even if it has not yet noticed that it lost /master.
package task
