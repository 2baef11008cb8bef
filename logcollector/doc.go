// Package logcollector is paddock's log collection: collectors tail the files of log
// sources and ship their lines to a sink, and an elected rebalancer divides the sources
// among the live collectors. Its layout, under a configurable root:
//
//	/logs/sources/<source-id>        persistent  a source: {"host","path":"glob","added"}
//	/logs/collector/<id>             persistent  a collector; data = its Assignment {"epoch","sources":[…]}
//	/logs/collector/<id>/status      persistent  the collector's Status, every status_interval:
//	                                 {"state","updated","host","epoch",
//	                                  "sources":{"<id>":{"epoch","files","lag_bytes","problem"}}}
//	/logs/collector/<id>/session     ephemeral   holds the id: {"host","pid","since"}
//	/logs/collector/<id>/drained     persistent  present while the collector is drained: {"since"}
//	/logs/rebalancer                 ephemeral   the elected rebalancer
//	/logs/clock                      persistent  set by the rebalancer at every step: its mtime is the
//	                                 servers' clock; data {"grace_ms"}
//
// Collector nodes are persistent, so an assignment outlives a restart; a collector is
// live while its status node is fresh — its mtime within grace of the clock node's, both
// the servers' clock, so no collector's clock matters — which the rebalancer polls (the
// status changes too often to watch). Readers (Admin, the console) also require the
// session node: a killed collector shows dead once its session expires or its status
// goes stale, whichever comes first.
//
// A source is placed only on a collector whose status names the source's host
// (planByHost): files are read from the disk of the machine they are on, never from
// another's. A drained collector is given nothing; its sources are handed over the
// two-step way below.
//
// The rebalancer keeps the assignment balanced (counts differ by at most one) and
// sticky (a source moves only when its collector is lost or holds more than its
// share): see plan. It moves a source in two steps, so that two collectors never read
// it at once: first the assignment without it goes to the collector that gives it up,
// and only once that collector's status shows it has taken in that assignment (its
// epoch), or it is lost, does the source go to its new collector. Assignments carry an
// epoch, one more than the highest before, so a collector can tell which is newer.
//
// A collector records a file's offset in its status only after the sink accepted the
// lines before it; a new owner resumes from the offsets of the status entry with the
// highest epoch. Delivery is at least once: after a collector dies, the lines past its
// last recorded offsets may be shipped again by the next owner, never lost. Each line
// carries (source, file, inode, offset, host, time); (source, inode, offset) identifies
// it, so a consumer can drop duplicates.
package logcollector
