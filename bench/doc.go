// Package bench is a load generator for ZooKeeper-protocol servers and ensembles, behind
// `paddock bench`, and the side-by-side comparison of paddock with Apache ZooKeeper that
// `make bench` runs, standalone and as 3-member ensembles (sidebyside_test.go,
// ensemble_test.go), then a snapshot of a large tree under a write load
// (snapshot_test.go), then each server's memory, snapshot files and restart with trees
// of 1 and 10 million znodes, and paddock's write tail during garbage collection
// (memory_test.go, gctail_test.go). The tables they write are results.md.
//
// # Client
//
// The load generator has its own client on server/wire, built to measure rather than to
// be convenient. A session is one TCP connection with a ConnectRequest/ConnectResponse
// handshake and one goroutine that both writes and reads (session.go):
//
//	for {
//	    while in flight < --outstanding: encode the next request into the write buffer
//	    write the buffer (one syscall for the whole batch); stamp each request with the
//	        time just before the write
//	    read; parse every complete reply in the read buffer in place, match it with the
//	        oldest request in flight (the server answers a session in order: a reply with
//	        another xid ends the session), record its latency
//	}
//
// so a session keeps --outstanding requests in flight, and replies are matched FIFO by
// xid. A reply's time is when the read that completed it returned. An idle session pings
// at a third of its negotiated timeout, from a read deadline; a request unanswered for
// --request-timeout ends the session. A session that fails (connection reset, a
// protocol error, a stall) is reported in Result.Failures with its requests in flight
// counted as "lost in flight"; the other sessions go on. Error replies are counted by
// code, and successful replies are checked for plausibility (getData returns
// --value-size bytes, getChildren the number of children made, create echoes a path of
// the right length); implausible ones count as "bad reply".
//
// # Ensembles
//
// --zk may list an ensemble's members, host:port,host:port,...: session i connects to
// member i mod n and sends every request to it, as a real client does (a follower
// forwards writes to its leader and answers reads itself). After preparing, every session
// writes the run's root once: a member answers a write only once it has applied every
// write ordered before it, so each session's member then has what the other sessions
// prepared on theirs (sync is not enough on ZooKeeper). `make bench` runs the
// create, set, get and mixed workloads on a 3-member ensemble of each server
// (ensemble_test.go; `make bench-ensemble` runs that section alone).
//
// # Latency recording
//
// Each session records into its own Histogram (histogram.go), a log-linear histogram in
// the manner of HdrHistogram: 128 buckets per power of two of nanoseconds, so a value is
// known to within 0.8 %, about 38 KB per session. Recording is an array increment, with
// no lock and no allocation, and the histograms are merged when the run ends. Reported
// percentiles are the upper edge of the bucket holding the exact rank, so they are never
// below the true value and are ordered p50 ≤ p99 ≤ p99.9 ≤ max. Issuing, writing,
// parsing and recording a request allocate nothing (TestHotPathDoesNotAllocate).
// Paths are encoded straight into the write buffer. A driver that needs to know when each
// request ran (the snapshot and garbage-collection benchmarks split the writes by what
// the server was doing meanwhile) sets Config.timeline: every measured request's reply
// time and latency are then also kept, an append per reply.
//
// # Workloads
//
// Each run works under its own root, --root/<workload>-<unique>, prepares what it needs
// there before the clock starts (the znodes set, get, exists, mixed and children cycle
// through; the znodes delete deletes), optionally runs --warmup unmeasured, measures
// --ops operations or for --duration, and deletes everything it made. Op indices are
// handed out across sessions from one counter, so --ops N issues exactly N operations.
// Churn counts session lifecycles (dial to closeSession reply) and checks afterwards that
// no ephemeral outlived its session. Fanout counts rounds: every watcher sets a watch,
// one write, and the round ends when every watcher has read its notification, or fails
// the run after --request-timeout; it reports the time to the last notification per
// round, and the time to each notification.
package bench
