// Package web is paddock's console: a gin server rendering html/template pages
// (templates/ and static/, embedded with go:embed; one stylesheet, a little vanilla
// JavaScript, no external assets, no build step) and a JSON API, over one ZooKeeper
// session of the caller's (coordinator.Session). `paddock web` and `paddock up` wire
// it: New(cfg, session, logger), then Listen (optional, to learn Addr) and Run(ctx).
//
// # What exists
//
// Login. Users come from Config.Users ("name:role:bcrypt-hash"; HashPassword and
// NewPassword make them). POST /api/v1/login {"user","password"} (or the /login form)
// sets the session cookie paddock_session (random id, server-side map with expiry
// SessionTTL; HttpOnly, SameSite=Strict, Secure over HTTPS (TLSCert, TLSKey) or with
// SecureCookies) and answers the CSRF token, also in the cookie paddock_csrf and the
// pages' <meta name="csrf-token">, and the device cookie paddock_device. Failed logins
// back off per user name and client address (3 free, then 1 s doubling to 15 min) and
// draw on a per-user budget that browsers with the user's device cookie skip (429 with
// Retry-After; limiter.go, docs/security.md). Logins live in memory: a restart logs
// everyone out. Request bodies are capped before any handler reads them (413):
// logins 4 KiB, znode writes 2 MiB, the job pages' buttons (enable, disable, run, delete)
// 2 KiB, the rest 64 KiB (bodylimit.go). Without a session the API answers 401 JSON and pages redirect to /login (only
// /login and /static/* are open).
//
// Roles. viewer reads; operator also changes znodes, submits, cancels and retries
// tasks, creates, changes, runs and deletes jobs, enables and disables replication
// tasks and edits log sources; admin may do everything. A change by too low a role is 403. Every POST, PUT and DELETE must carry
// the session's CSRF token in the X-CSRF-Token header (API) or the csrf_token form
// field (pages), else 403.
//
// Znode API, errors as {"error": "..."}:
//
//	GET    /api/v1/znodes?path=/a&offset=0&limit=100   one getChildren, sorted, paged:
//	                                                   {path, stat, children, total, offset, next}
//	GET    /api/v1/znode?path=/a                       {path, data (base64), text (if UTF-8), stat, acl}
//	POST   /api/v1/znode {path, data, data_encoding: text|base64,
//	                      flags: persistent|sequential|container|ephemeral|ephemeral_sequential}
//	PUT    /api/v1/znode {path, data, data_encoding, version}   409 with the current version on conflict
//	DELETE /api/v1/znode?path=&version=&recursive=true&confirm=<path>
//	GET    /api/v1/audit?limit=N&before=seq            newest first
//	POST   /api/v1/logout
//
// Znode data is shown with its secrets masked (DSN passwords, password= parameters,
// password fields: secrets.go), in the API, the pages and the audit log; a set that
// sends a masked value back keeps the stored secret, and one whose mask the console
// cannot restore is 400. The audit root is append-only: creates, sets and deletes on
// it, under it or (deletes) above it are 403 for every role.
//
// Bad paths are 400 naming the path and the fault; ZooKeeper errors map (zkStatus, the
// one table) NoNode 404, NodeExists/NotEmpty/BadVersion 409, NoAuth 403, connection
// loss 503. Reads are retried across connection loss for up to 10 s; writes are not
// (their outcome would be unknown). Ephemeral znodes belong to the console's session.
// A recursive delete deletes children before parents in multis of 500, and the path
// itself last, with the version given.
//
// Audit. Every change made through the console is stored as JSON (AuditRecord: who,
// role, method, URL, action, target, before and after with data cut to 4 KiB) in a
// persistent-sequential znode:
//
//	<AuditRoot>/entry-0000000042   {"time", "user", "role", "method", "url", "action",
//	                                "target", "before": Snapshot, "after": Snapshot, "note"}
//
// If writing the record fails, the change stands: the failure is logged at error level
// and the response carries the header X-Audit-Error.
//
// Pages: /login, / (overview: the console's session, the number of logins, the
// ensemble, the platform summary and the last hour's charts; see "The overview"),
// /server (every mntr figure of the server at Config.AdminAddr, without the answer's
// command and error keys),
// /znodes?path=&offset= (breadcrumb, paged children, data as text / JSON / hex, stat,
// ACL; create, edit with version, delete, recursive delete with the path typed again,
// shown to operators and admins only), /audit. Pages send a Content-Security-Policy
// without inline script.
//
// Tasks, jobs and workers (task.Client over the layout under Config.Root). Changes
// need operator; a bad spec or job is 400 naming the field and changes nothing:
//
//	GET    /api/v1/tasks?offset=0&limit=50      newest first, paged: {tasks, total, offset, next}
//	GET    /api/v1/tasks/:id                    the task.Task: spec, state, assignment, status, history,
//	                                            fault (the master has it in error)
//	POST   /api/v1/tasks {task.Spec}            201 {id}; unknown fields are 400
//	POST   /api/v1/tasks/:id/cancel             404 if none, 409 if it has ended
//	POST   /api/v1/tasks/:id/retry              an ended task's spec as a new task: 201 {id, retry_of};
//	                                            409 while it has not ended
//	GET    /api/v1/jobs                         {jobs: [task.JobView]} by name: job, version, the newest
//	                                            fires (newest first), fire_count, next times, active tasks
//	GET    /api/v1/jobs/:name                   the task.JobView; 400 for a bad name, 404 if none
//	POST   /api/v1/jobs {task.Job}              201 with the JobView; 409 if it exists; unknown fields
//	                                            and bad values are 400 naming the field (task.timeout)
//	PUT    /api/v1/jobs/:name[?version=N] {task.Job}   replaces the definition at version N (a
//	                                            JobView's) or the one it reads: 409 if changed since
//	POST   /api/v1/jobs/:name/enable            and /disable: {name, enabled}
//	POST   /api/v1/jobs/:name/run               a run now, enabled or not: 201 {id, job}
//	POST   /api/v1/jobs/:name/clear-error       deletes the master's record of the job in error (its
//	                                            view's fault): the master tries it again at once
//	DELETE /api/v1/jobs/:name                   its fire records too; the tasks it started stay
//
// A job's task is answered and audited with its secrets masked, as a task's; a PUT that
// sends them back masked, as read, keeps the stored ones, and one that holds a mask the
// console cannot restore is 400 (it never stores the mask as a secret).
//
//	GET    /api/v1/workers                      {master: task.MasterInfo or null, workers: [{id, info,
//	                                            assigned, running, beat, stale, refused}]} (counts of
//	                                            /assign/<id>'s assignments; stale: no heartbeat within
//	                                            info.heartbeat×3, ≥10 s; refused: [task.Refusal])
//
// Replication (replicator.Admin, which masks the DSNs' passwords: the console
// answers, shows and audits only its masked views, so a password never leaves it):
//
//	GET    /api/v1/replication                  {tasks: [replicator.TaskView]}
//	GET    /api/v1/replication/:name            the TaskView
//	POST   /api/v1/replication                  admin: {name, source, target, include, exclude, server_id
//	                                            (0: DefaultServerID), enabled}; 409 if it exists
//	PUT    /api/v1/replication/:name            admin: replaces the fields given
//	POST   /api/v1/replication/:name/enable     operator; and /disable
//	DELETE /api/v1/replication/:name            admin; 409 while enabled
//
// Log collection (logcollector.Admin; a collector is live while its session node
// exists and its status node was written within the rebalancer's grace, by the
// servers' clock: logcollector.Admin.Collectors):
//
//	GET    /api/v1/logs?offset=0&limit=100      {rebalancer (its node's data, or null), sources: one page
//	                                            of SourceView (with problem: unplaced, no file
//	                                            matches…), total, offset, next, collectors:
//	                                            [CollectorView {id, host, live, state, drained,
//	                                            written, assignment, status, holder}]}
//	POST   /api/v1/logs/sources {id, host, path}   operator
//	DELETE /api/v1/logs/sources/:id                operator
//	POST   /api/v1/logs/collectors/:id/drain       operator; and /undrain
//	DELETE /api/v1/logs/collectors/:id?force=true  operator; 409 while live, or (without
//	                                               force) while it holds sources or their last offsets
//
// Their errors: a bad request 400, no such task or source 404, exists / ended /
// enabled 409, and ZooKeeper's as above. Audit actions: task.submit (a retry's note
// names the task retried), task.cancel (before and after: state, worker,
// cancel_requested), replication.create, .update, .enable, .disable, .delete (the
// masked definition), logs.source.add, logs.source.remove (the source znode),
// logs.collector.drain, .undrain (the drained node), logs.collector.remove (the
// collector node).
//
// Pages: /tasks?offset= (state, worker, exit code; the submit form: command, args one
// per line, env NAME=value lines, timeout, retries, priority), /tasks/:id (spec,
// assignment, status with the output tail, the runs that did not end it; cancel or
// retry), /workers, /replication (health, state, running instance, standbys, lag, last
// error, last commit; the create form for admins), /replication/:name (definition,
// status, instances; enable, disable, delete; for admins an edit form, where an empty
// DSN keeps the stored one, whose password the page never shows), /logs?offset= (sources with their
// collector and lag, or their problem; collectors with their host, state, assignment,
// status age and epoch and holding process; the rebalancer; add and remove forms for
// sources, drain or undrain for live collectors, remove for dead ones), /jobs (schedule and
// zone, state, policies, next fire times, last fire and outcome, active runs; enable or
// disable and run now on each row, and the create form: name, schedule, time zone, the
// task's fields, shards, shard parameters one per line, misfire, concurrency, enabled),
// /jobs/:name (the definition with the task masked, the next 5 fire times, the newest 20
// fire records with their tasks and the tasks' states, a sharded job's placement from
// /jobs/<job>/shards; enable or disable, run now, and delete with the name typed again as
// confirm), /dags/<dag>?task=<id> (a DAG's tasks in columns by depth with their states and
// parents, found by spec.dag reading task specs outward from task, SubmitDAG's tasks being
// numbered consecutively, or without task back from the newest 2000; linked from a DAG
// task's page). Their forms post to the pages' paths (/tasks,
// /tasks/:id/cancel, /replication/:name/enable, /jobs, /jobs/:name/run, /logs/sources,
// /logs/collectors/:id/drain, …; …/delete for deletes), under the same roles, and redirect
// back with a flash or error message (a job's buttons on /jobs back to the list, with
// from=list).
//
// Live updates (server-sent events fed by ZooKeeper watches; a viewer may listen):
//
//	GET /api/v1/events?topic=T     text/event-stream; T is one of
//	    znode:<path>   the node's existence and data (ExistsW) and its children (ChildrenW)
//	    tasks          <Root>/tasks children          workers   <Root>/workers children, <Root>/master
//	    replication    <Root>/mysql_replicator/tasks children
//	    logs           <Root>/logs/sources and <Root>/logs/collector children
//
//	event: ready    data: {"topic"}                  once the watches are armed
//	event: change   data: {"topic", "type", "path"}  type: created, deleted, data or children
//	: heartbeat                                      a comment every 15 s
//
// A watched node that does not exist yet is watched with ExistsW until it is created.
// After each event the watch is armed again, which reads the node again, so a change
// made between the event and the re-arm is reported by the next event rather than lost;
// if arming fails (connection loss) it is retried every second. A stream ends when the
// client goes, its login ends (logout or expiry: checked at each event and heartbeat,
// and the stream's deadline is the login's expiry) or Run's context ends. At most 8
// streams per login and 256 in all, else 429 with Retry-After. An unknown topic is 400.
// The streams share their watches (watchHub): one ZooKeeper watch per watched node and
// kind, whatever the number of streams following it, dropped when the last one ends.
// go-zookeeper keeps a watch registered until it fires, so at most one is left behind
// per node, not one per page load.
//
// Pages carry their topic in <main data-topic="...">: znode:<path> on /znodes,
// znode:<Root>/tasks/<id>/status on /tasks/:id, and tasks, workers, replication, logs on
// those pages. static/console.js opens an EventSource for it and reloads the page on a
// change (bursts coalesced over 300 ms), unless a form field has focus or was edited:
// then it shows p.live-notice with a Reload button.
//
// Sessions and ensemble, from the server's admin HTTP at Config.AdminAddr:
//
//	GET /api/v1/sessions   {admin_addr, connections: [ConnectionView: remote, session_id (hex),
//	                       session_timeout_ms, last_operation, established_ms, outstanding_requests,
//	                       packets_received, packets_sent, watches, console], watches}
//	                       from /commands/cons and /commands/wchc (data and exists watches
//	                       only: ZooKeeper does not list child watches); 503 naming admin_addr
//	                       when it is empty, or when the admin HTTP does not answer
//
// The page /sessions shows the same (the console's own session marked; "No admin address
// configured" without one).
//
// # The overview
//
// The ensemble's members are the server.N lines of /zookeeper/config, read through the
// console's session (reused for 5 s; the last list read while the session is down),
// else Config.Servers (a standalone server: one member, its admin port
// Config.AdminAddr). A member's address is the client address of its line; an
// unspecified host (0.0.0.0, ::, a bare port) is replaced by the host of its quorum
// address. Each member is probed, all at once, at most every 2 s whatever the number of
// viewers, each probe bounded by 2 s:
//
//   - with the four-letter word srvr on its client port, which every server allows by
//     default (4lw.commands.whitelist), in plain TCP; or
//   - when Config.AdminAddrs (key admin_addrs, flag --admin-addrs, entries
//     "ID=host:port" naming the member's server id) names its admin port, with
//     GET /commands/srvr there and GET /metrics for the p99 request latency: the
//     quantile of paddock_request_duration_seconds (all opcodes) between a histogram
//     read 10 to 20 s earlier (since the member started, at first) and now,
//     interpolated in its bucket. Use it for members whose client port is TLS-only or
//     does not allow srvr. The admin credentials are Config.AdminUser/AdminPassword.
//
// A member is up when it answers (mode leader, follower, observer, standalone,
// read-only, or "not serving"), down with the probe's error otherwise; its lag is the
// leader's last zxid minus its own. The leader is the member that answers as leader.
//
// The platform summary reads the services' znodes read-only, at most every 10 s in the
// background, one read at a time (a viewer waits at most 5 s, then gets the last
// summary with its time): tasks by state over the newest 100, the master and each live
// worker's running/slots and assignments, replication tasks by the monitor's health
// ("unjudged" before any) with their lag and events behind, and the log collectors
// (live, sources assigned); lists are cut at 100.
//
// The console samples, every 10 s from Run's start, into a ring of 360 samples (one
// hour, about 24 KiB; lost on restart): requests/s (packets received by the members
// answering twice, over the interval), the highest average and p99 latency of the
// members, sessions (client connections of all members) and the highest replication
// lag (the sampler reads the replication tasks only, not the whole summary). The
// admin credentials go only to the addresses of admin_addr and admin_addrs, never to
// one read from a znode. static/overview.js refreshes the tables every 3 s and draws the charts (SVG
// polylines, no library) every 10 s.
//
//	GET /api/v1/overview           {ensemble: {leader, members: [MemberView: id, address, role,
//	                               up, mode, zxid, lag_zxids, connections, outstanding,
//	                               packets_received, latency_avg_ms, latency_max_ms,
//	                               latency_p99_ms, via (4lw or admin), error], source,
//	                               checked, error}, platform: {tasks: {by_state, counted,
//	                               total}, workers: {master, workers: [{id, capacity,
//	                               assigned, running}]}, replication: {by_health, tasks:
//	                               [{name, enabled, health, lag_seconds, events_behind}]},
//	                               collection: {sources, collectors: [{host, live, state,
//	                               sources}]}, checked, error}}
//	GET /api/v1/overview/history   {interval_s, capacity, samples: [{t, requests_per_s,
//	                               latency_avg_ms, latency_p99_ms, sessions,
//	                               replication_lag_s}]}, oldest first; a figure no member
//	                               or task gave is null
//
// # What comes next
//
// ACL editing; digest auth of the console's own session; audit links to the objects of
// the task, replication and logs actions (the audit page links only znode targets).
package web
