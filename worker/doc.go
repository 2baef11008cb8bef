// Package worker is the worker of paddock's task-scheduling cluster: it runs, as local
// processes, the tasks the master assigns to it, and records how each run ended. It is
// a plain ZooKeeper client of the nodes package task describes; it shares nothing else
// with the master.
//
// # Life
//
// Run connects a session, makes /assign/<id> and /workers, and registers the worker in
// the ephemeral /workers/<id> ({"addr","capacity","labels","started"}), kept across new
// sessions. If the node belongs to another session — an earlier incarnation killed
// without closing its own — Run waits for that session to expire. When Run's context
// ends, the worker ends its running tasks' process groups, records nothing for them
// (the master sees the worker gone and runs them elsewhere, as lost runs, which are
// not failures), deletes /workers/<id> and closes the session.
//
// # Assignments
//
// The worker watches the children of /assign/<id>, listing them again after every
// event (the listing re-arms the watch), after a reconnection and under a new session.
// It claims assignments oldest first while it runs fewer than Capacity tasks; the rest
// wait for a slot. It runs an assignment only if it names the worker's current session;
// one given to an earlier session is left for the master to take back. To claim one,
// it reads the task's spec and sets the assignment's Started, at the version it read:
// if the assignment changed or went meanwhile, it is not run.
//
// # Trust
//
// A worker runs a task only if the spec's signature (its sig child, task/sign.go)
// verifies against a key its signers_file (or tls_ca and roles) trusts for submitting,
// over the spec node's own czxid and the very bytes it then decodes and runs; otherwise
// the run fails at once, "task not signed by a trusted submitter, not run", whatever the
// node's ACL. A worker holds no signing key (signing_key is refused).
//
// # Runs
//
//	command     spec.Command with spec.Args (looked up in the worker's PATH), in spec.Dir,
//	            stdin /dev/null, as the run_as user, under a task supervisor (Linux;
//	            elsewhere a plain child, and only it is signalled)
//	environment the worker's, then the run_as user's HOME, USER and LOGNAME, then
//	            spec.Env, then PADDOCK_TASK_ID, PADDOCK_TASK_ATTEMPT and
//	            PADDOCK_TASK_RUN=<worker key>/<task>.<attempt>, the run's mark
//	output      stdout and stderr together into <output_dir>/<task>/attempt-<n>.log, and
//	            the last 4 KiB (valid UTF-8) into the record's output_tail
//	timeout     spec.Timeout: SIGTERM to every process of the task, SIGKILL after
//	            kill_grace; the run fails with "timed out after <timeout>"
//	cancel      /tasks/<task>/cancel, watched while the run lasts: the task is ended the
//	            same way and cancelled; a cancel found before the start ends the task
//	            without running it
//	no start    a command that cannot start (not found, no such directory, not for the
//	            run_as user) is a failed run, exit code -1, the error in words
//
// # Processes
//
// No process of a task outlives its run. The worker re-executes its own program
// (SupervisorMain) as the supervisor of each run: a child subreaper, so that every
// process the task starts stays beneath it whatever session or group it moves to. When
// the task's first process exits, when the worker ends the task, and when the control
// pipe from the worker ends — the worker died, however — the supervisor kills every
// process beneath it (signals sent through pidfds, never to a reused pid) until none is
// left. Where the worker can make a cgroup v2 (use_cgroup; checked at start, said in the
// log and in paddock_worker_kill_mode), each run is born into a cgroup of its own,
// <its cgroup>/paddock-worker-<key>/<task>.<attempt>, and is killed through it. A
// supervisor that dies itself has what it left killed by the worker, by the run's
// cgroup and mark; a restarted worker kills every process of an earlier life of its
// own — same id and output directory, the key — once its registration is its own and
// before it claims anything.
//
// run_as is the user tasks run as; a worker running as root refuses to start without it
// unless allow_root is set. See docs/security.md.
//
// # Outcomes
//
// A run ends with one multi that deletes the assignment, at the version of the started
// mark, and creates one node:
//
//	exit code 0                                   /tasks/<task>/status     done
//	cancelled                                     /tasks/<task>/status     cancelled
//	failed, assignment.failures >= spec.retries   /tasks/<task>/status     failed
//	failed, assignment.failures <  spec.retries   /tasks/<task>/attempt-<n> (the master retries)
//	handed back (drain deadline, stop grace)      /tasks/<task>/lost-<n>    (handed_back; not a failure)
//
// A process ended by a signal is recorded with exit code -1 and the signal's name.
//
// # Drain and stop
//
// The worker watches /drain/<id>. While a drain request stands it claims nothing,
// deletes the assignments it has not started (the master gives them to others), lets
// its runs end, and says draining, then drained, in /workers/<id>; at the request's
// deadline it ends what still runs and hands it back. When Run's context ends (SIGTERM)
// it does the same, saying stopping, with stop_grace as the deadline, then removes its
// registration. A second worker with the same id is refused once the holder has kept the
// registration past its session timeout: see Worker.Run.
//
// If the master took the assignment back meanwhile, the multi fails and the run leaves
// no trace. If the connection drops during the multi, the worker waits for it, reads
// the node to learn whether the multi was applied, and sends it again only if not.
//
// # Refusals and holds
//
// No task a client can shape makes the worker spin (refuse.go). A task whose outcome
// the servers refuse to record for any reason but the connection (its node lets the
// worker create nothing under it, say), or whose spec the worker cannot read, is
// refused: one multi deletes its assignment and creates /assign/<id>/refused-<task> (a
// task.Refusal: the attempt, whether it ran, why), and the worker never claims that
// task again; the master ends it failed, naming the worker and why. So a task whose
// outcome cannot be recorded runs once. An assignment the worker cannot read or mark
// started is held: skipped, and tried again with the backoff (internal/backoff) of its
// failures in a row, while the others go on. A pass that fails (the listing, the drain
// request, the registration's state) is tried again with the same backoff.
//
// # Session
//
// While disconnected (suspended) the tasks keep running. When the session is lost —
// expired, or cut off for its whole timeout — every process of every running task
// gets SIGKILL at once and nothing is recorded for them: the master gives them to another worker.
// A run whose process had already ended is still recorded if its assignment stands.
//
// # Metrics
//
// With metrics_addr set, /metrics serves, from a registry of its own:
//
//	paddock_worker_tasks_running                    gauge: task processes running now
//	paddock_worker_tasks_finished_total{state}      counter: recorded outcomes, state done,
//	                                                failed, cancelled, retry or handed_back
//	paddock_worker_task_duration_seconds            histogram: process run times
//	paddock_worker_capacity                         gauge: the configured capacity
//	paddock_worker_kill_mode{mode}                  gauge: 1 for cgroup, subreaper or group
//	paddock_worker_leftover_processes_killed_total{when}
//	                                                counter: processes killed whose run's
//	                                                supervisor was gone: start (an earlier
//	                                                life's) or run (a supervisor that died)
//	paddock_worker_tasks_refused_total{reason}      counter: tasks refused, reason unrecorded
//	                                                (it ran) or unreadable (it did not)
//	paddock_worker_tasks_refused                    gauge: refusals the master has not ended yet
//	paddock_worker_assignment_holds_total           counter: assignments put off after an error
//	paddock_worker_assignments_held                 gauge: assignments held now
package worker
