// Package replicator is paddock's MySQL binlog replication bus, coordinated through
// the coordination server: tasks are defined in znodes, replicator processes stand for
// them, and the one that leads a task runs the engine (package replicator/apply),
// which replicates the source's binlog into the target exactly once. Its layout, under
// a configurable root:
//
//	/mysql_replicator/tasks/<task>                         persistent  the TaskDef (JSON; passwords never shown back)
//	/mysql_replicator/tasks/<task>/instances/<host>_<seq>  ephemeral-sequential  one per process standing for
//	                                                       the task: {"host","pid","state":"running|standby","since"}
//	/mysql_replicator/tasks/<task>/lastCommit              persistent  {"file","pos","gtid","ts","instance"}
//	/mysql_replicator/tasks/<task>/status                  persistent  the Status, every second
//	/mysql_replicator/clock                                persistent  empty; readers set it and take its mtime
//	                                                       as the coordination server's now
//	/mysql_replicator/monitor-leader/                      election of the monitor that logs verdicts
//
// With role ACLs (the roles key; on by default under paddock up), a task's definition,
// and so the passwords in its DSNs, is readable only by the replicator role and the
// console (Layout.ACLRules; docs/security.md).
//
// Hot standby: every process started with the task in its list creates an instance
// node; the lowest runs the task, each other watches the node just before its own and
// looks again when that one goes. Cold standby: a process in cold mode watches the
// task list (and rescans every scan_interval) for enabled tasks with no instance at
// all, creates an instance node for such a task, and runs it if its node is the lowest;
// if not, another process claimed it first and it lets go.
//
// Exactly once and fencing live in the target (package apply): each source
// transaction is applied in one target transaction that also moves the task's
// checkpoint row, and that transaction checks the row's owner epoch. An instance runs
// with its node's czxid as its epoch: zxids only grow, so an instance that takes over
// owns the task with a higher epoch than any before it, and a deposed one that has
// not noticed yet cannot commit. lastCommit mirrors the checkpoint at least once a
// second, for people and the console; the checkpoint in the target is the truth a
// takeover resumes from.
//
// A run that fails is retried: after a second, doubling up to 30 s, when the failure
// may pass (a server unreachable); after 30 s, or as soon as the definition changes,
// when it will not by itself (a wrong binlog format, a purged position). The error
// stays in the status (state "retrying", or "failed" when it will not pass, and
// last_error) and in the log; nothing is skipped. A task whose lag passes
// lag_threshold is reported as "lagging". A task whose source and target are one
// server is refused at create, update and run (apply.SameServer).
//
// Health (Judge) is made by whoever reads a task, by the coordination server's clock:
// the status node's mtime against the clock node's, so that a task with no live
// instance reads unserved or stale whatever process is alive, and its lag grows.
package replicator
