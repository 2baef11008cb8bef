// Package quorum replicates the server's log across an ensemble with etcd's Raft
// library (go.etcd.io/raft/v3): one member's Raft (Node), its storage (Storage,
// WALStorage, on server/store) and its link to its peers (Link: the TCP Transport, or
// an Inmem network in tests). It knows nothing of txns or the tree: entries are opaque
// bytes. Package server builds the ensemble on it (server/replica.go, docs/ensemble.md).
//
// # A member
//
// New opens the member's storage, starts its Transport and three goroutines. The Ready
// loop (Node.run) owns Raft — a raft.RawNode, with no goroutine of its own —: what
// other goroutines want of it (peers' messages, the loops' responses, proposals,
// ReadIndex, Status, membership changes) reaches it through the member's inbox
// (inbox.go), and it steps all that waits before it asks for one Ready. The other two
// share out what Raft hands over (raft.Config.AsyncStorageWrites; loops.go):
//
//	inbox, tick ──► RawNode ──Ready──► Ready loop (Node.run): never waits for the disk
//	                                1. Messages to peers ──► Transport.Send (the leader's appends go out
//	                                   before its own write is durable)
//	                                2. MsgStorageAppend ──► append loop      3. MsgStorageApply ──► apply loop
//	                                4. ReadStates ──► wake their ReadIndex
//	append loop: every MsgStorageAppend waiting ──► Storage.Save (one fdatasync for all, none for a
//	             commit index alone) ──► their responses: acks and votes to peers, Raft's own
//	             "durable" to Raft; a Snapshot is kept, then restored on the apply loop first;
//	             snapshot written ──► Storage.Checkpoint: record it, compact memory, purge disk
//	apply loop:  CommittedEntries, in order:
//	               conf change ──► raft ApplyConfChange, OnConfChange
//	               proposal    ──► ApplyFunc, then wake its Propose
//	             ──► "applied" to Raft; every SnapshotEntries applied: Snapshotter.Snapshot
//	             (a copy-on-write view) ──► the snapshot writer goroutine ──► its file
//
// Each loop takes its work in order; the two run beside each other, so a follower
// acknowledges new entries while it applies older ones and a leader applies while its
// next write is on its way to disk. Raft hands an entry to the apply loop only once
// this member's own log holds it durably and a quorum's does.
//
// Raft runs with PreVote and CheckQuorum on; the election timeout is ElectionTicks
// Ticks. A member that is not the leader sends its proposals (Propose, Submit,
// ProposeConfChange) to the leader itself, as MsgProp on its Raft connection, not
// through its own Raft: no wait for its own next fsync, and a member removed and added
// again is not left unable to propose. Without a known leader a proposal is dropped at
// once.
//
// Membership: a new member's storage (unless Config.Join: a member to be added to a
// running ensemble starts empty) is given the initial membership as committed
// conf change entries in term 1 — every voter (ConfChangeAddNode) then every learner
// (ConfChangeAddLearnerNode), ascending ids — identical on every member, so all logs
// agree from index 1. The member then always starts with raft.RestartNode and
// Applied 0: the log is replayed from its start, or from its snapshot (whose
// ConfState is the membership up to it), and its conf changes rebuild the
// membership. Learners are ZooKeeper's observers: they replicate and may serve reads
// but do not vote.
//
// # Entries
//
// A proposal's entry data is
//
//	0              8              16
//	+--------------+--------------+------------------+
//	| proposer id  | sequence     | caller's data    |   uint64s big-endian
//	+--------------+--------------+------------------+
//
// so that the proposing member recognises its entry when applying it and answers
// the waiting Propose with the entry's index. Sequences start at the member's clock
// in nanoseconds, so an entry proposed before a restart never matches a waiter after
// it. Entries without data are the empty entry each new leader appends; they advance
// the applied index but are not passed to ApplyFunc.
//
// ApplyFunc is called once per proposal entry, in log order. Entries at or below
// Config.Applied (the state machine's own applied index, from its snapshot) are
// skipped, so a restarted member does not apply twice what its state machine kept.
// No committed entry stops a member: one shorter than the header reaches ApplyFunc with
// From 0 and its bytes as Data, for the state machine to apply as it sees fit, and a
// membership change that does not decode, cannot apply (Raft would panic) or that
// CheckConfChange refuses is skipped, alike on every member, and logged as an error.
//
// # Snapshots and compaction
//
// With a Snapshotter in Config, the apply loop starts a snapshot once SnapshotEntries
// entries have been applied since the last one, unless one is still being written:
// it takes the caller's Snapshot() — a consistent, copy-on-write view of the state
// machine at the applied index, O(1) — and the ConfState as of that index, and hands
// them to a goroutine of its own, which writes the snapshot file (Storage.
// WriteSnapshot) while the apply loop goes on applying. When the file is durable the
// goroutine tells the append loop, the log's only writer, which calls Storage.Checkpoint: the snapshot is
// recorded in the log, memory keeps the KeepEntries entries before it (so a follower
// slightly behind is still sent entries), and disk keeps nothing before it. A failed
// write is logged and costs only log space. Close waits for the writer, which stops
// between records once Close began.
//
// A follower the leader's memory no longer covers is sent the snapshot: the MsgSnap
// holds its metadata only, and the leader's connection to the follower streams the
// file's records after it in bounded chunks (snapstream.go; reported sent at once: a
// lost one is sent again after the follower's next rejection). The follower, on its
// connection's goroutine, writes them to a snapshot file of its own as they arrive,
// each state machine record passing the SnapshotChecker on its way, and hands Raft
// the message only once the file is whole; its loops and clients go on meanwhile.
// The append loop's Save then installs the file, the apply loop's Restore reads it
// record by record once everything before it is applied, applied becomes its index,
// and the committed entries after it follow. On start, a
// snapshot newer than Config.Applied is given to Restore before any entry.
//
// # Storage
//
// Storage is raft.Storage plus Save, the snapshot files' writing, receiving and
// reading, and Checkpoint. WALStorage keeps it in a raft.MemoryStorage and on disk in
// server/store's formats (store/doc.go draws them): Raft's records in a WAL, its
// snapshots in snapshot files, all through Config.FS. Save writes the WAL (and
// fdatasyncs it when Raft says MustSync) before memory, so Raft never reads what is
// not durable. In the member's directory:
//
//	log/<lsn>.wal          the WAL's segments: Raft's records
//	snap/snapshot.<index>  snapshot files, named by Raft index: the newest, and one
//	                       being written (.tmp) or just written and not yet recorded
//	recv/snapshot.<index>  a snapshot received from a leader, until Save installs it
//
// The WAL's key (store's zxid field) is a log sequence number that rises by one with
// every record, because Raft's own keys do not rise: a new leader overwrites a
// conflicting tail, and a hard state has no index. A record's payload is a type byte
// and a protobuf message:
//
//	1  raftpb.Entry                       one per entry of a Save
//	2  raftpb.HardState                   after a Save's entries; again after each
//	                                      snapshot record
//	3  from (uint64 big-endian),          the snapshot file of that index is durable,
//	   raftpb.SnapshotMetadata            and no record before lsn from is needed
//
// A snapshot file is a server/store snapshot whose zxid field is the Raft index: its
// first record is the raftpb.SnapshotMetadata (index, term, ConfState), the rest are
// the state machine's records.
//
// OpenStorage loads the metadata of the newest snapshot file, then replays the whole
// WAL (Replay from WAL.Start), taking the entries from the last snapshot record's from
// on (a purge may leave overwritten entries before it, after a hole): an entry at an
// index already held replaces that index
// and every later one, an entry at or before the snapshot is skipped, an entry past
// the end is a hole (an error), the last hard state wins, and a snapshot record newer
// than the snapshot loaded means its file is missing (an error). If the replayed hard
// state is behind the snapshot (a crash before its records), its commit is raised to
// the snapshot's index and its term to the snapshot's. The WAL repairs a torn tail and
// stops start on damage before it, naming the segment and offset; a damaged snapshot
// file stops start when it is restored, naming the file and offset.
//
// A snapshot at index S (a Checkpoint, or a received one in Save) goes to disk in
// three steps, each durable before the next:
//
//  1. snap/snapshot.S: written as .tmp, fsynced, renamed, directory fsynced (store's
//     CreateSnapshot and Commit; a received one is renamed from recv/);
//  2. the WAL: a snapshot record for S, then the current hard state again, synced;
//  3. older snapshot files are removed, and the WAL segments whose records all
//     precede from: the snapshot record or, if earlier, the live entry S+1, which
//     replaced every earlier record of the indexes after S (WAL.PurgeBefore); for a
//     received snapshot from is its record, since Raft dropped the whole log for it.
//
// A crash between any two steps leaves a directory OpenStorage recovers: after 1 the
// newest snapshot file is used and the WAL's entries up to S skipped; after 2 the
// files step 3 would have removed are removed by the next snapshot. The segment
// being appended to is never purged, so disk holds at most the entries since the last
// snapshot plus one segment (SegmentSize, zoo.cfg preAllocSize).
//
// A directory written by the previous format (raft.log, raft-*.log, snap-*.snap) is
// converted at start (legacy.go): the old files move into legacy/, the state they
// hold is written in this format, and legacy/CONVERTED marks the end. The old
// snapshot's data was one buffer; Config.SplitLegacySnapshot (the state machine's)
// splits it into records, and without it such a directory is refused.
//
// # The TCP transport
//
// Every member listens on its peer address (ZooKeeper's server.N host:port) and
// keeps one outbound connection to each other member, fed by a bounded queue. A
// connection is plain TCP or, with Config.TLS, mutual TLS; it starts with the hellos
// (the dialling member names itself and whom it meant to reach, the other answers with
// its own once it accepts the connection), and then carries frames: a uint32
// big-endian length, a kind byte and a body — a raftpb.Message, a snapshot message (a
// kind of its own, followed by its stream of chunk frames and an end frame, received
// one at a time), a note, or a keepalive (frame.go, snapstream.go). A full queue drops the message and a failed dial or write
// redials with exponential backoff (20ms to 1s); both report the peer unreachable, and
// Raft retransmits.
//
// What arrives is believed only as the connection's member's: with TLS the member its
// certificate proves (peertls.go), without it whoever the hello named. Each Raft message
// passes the checks in front of Raft (validate.go: types, sender, terms and indexes in
// range, appends that follow, proposals that decode) or is dropped and counted
// (Counters); frames are bounded by kind and read as their bytes arrive; connections
// without a hello are bounded in number and time (docs/security.md).
//
// Membership changes (ProposeConfChange) are ConfChangeV2 entries whose context
// starts with the proposal header; OnConfChange gets each applied change with the
// caller's context, and SetPeers gives the transport the new members' addresses.
// Notes (SendNote, Config.OnNote) are bytes sent to one member outside the log.
//
// # Links, and stepping members in tests
//
// A Node needs four things of its transport, the Link interface: Send (Raft's
// messages, never blocking), SendNote, SetPeers and Close. What arrives comes back
// through a Delivery: Message, which runs the checks in front of Raft before Raft
// steps it, Note, and Unreachable. The TCP Transport is the Link a Node makes by
// default; Config.Network attaches it to another Network instead.
//
// Inmem (inmem.go) is that other Network, for tests of this package and of others:
// one bounded inbound queue per member, delivered in order by one goroutine; each
// message marshalled on send and unmarshalled on arrival, then handed to
// Delivery.Message like a TCP frame's, so the same checks apply. The test cuts and
// restores links (Disconnect, Connect, Partition, Heal), loses messages (Drop with a
// predicate, DropRate with a seed), holds a link's messages until Release (a delay
// without a clock) or delays them all (Delay), and waits for the network to go idle
// (WaitIdle, Stats).
//
// Config.Ticks replaces a member's clock with a channel: its Raft ticks once per value
// received and never on its own. Tests in this package (sim_test.go) tick every
// member a round at a time, let the round's messages settle, and wait for a condition
// by ticking (stepUntil), so elections, heartbeats, CheckQuorum and catching up happen
// after a number of ticks, and a negative check ("the minority commits nothing") holds
// after a number of ticks rather than after a sleep. TestMain checks with goleak that
// no goroutine outlives the tests.
//
// # In server/
//
// Every member submits its clients' writes in batches (Submit, one entry per batch)
// and answers them when its ApplyFunc meets its own entry (From, Seq); the zxid of
// each txn is given at apply (term<<32 | a counter that restarts each term); sync is
// ReadIndex; the leader expires sessions from the notes in which members report
// their clients' traffic. The server's CheckEntry decodes every batch another member
// proposes, and its ApplyFunc applies a committed entry that does not decode as an
// error txn. The state machine's snapshot is the tree's copy-on-write snapshot, its
// records the standalone snapshot's (server/replica.go).
package quorum
