// Package quorum replicates the server's log across an ensemble with etcd's Raft
// library (go.etcd.io/raft/v3): one member's Raft (Node), its storage (Storage,
// FileStorage) and its link to its peers (Link: the TCP Transport, or an Inmem
// network in tests). It knows nothing of txns or the
// tree: entries are opaque bytes. Package server builds the ensemble on it
// (server/replica.go, docs/ensemble.md).
//
// # A member
//
// New opens the member's storage, starts its Transport and its Ready loop (Node.run,
// one goroutine), which owns everything Raft hands out, in the order Raft requires:
//
//	tick ──► raft.Node ──Ready──► 1. the leader: Transport.Send(Messages)
//	                              2. apply CommittedEntries, in order (unless a snapshot came):
//	                                   conf change ──► raft ApplyConfChange, OnConfChange
//	                                   proposal    ──► ApplyFunc, then wake its Propose
//	                              3. Storage.Save(HardState, Entries, Snapshot)  fdatasync when MustSync
//	                              4. the others: Transport.Send(Messages)         only after 3
//	                              5. a Snapshot (from the leader) ──► Snapshotter.Restore, applied = its
//	                                 index, then the CommittedEntries after it
//	                              6. ReadStates ──► wake their ReadIndex
//	                              7. every SnapshotEntries applied: Snapshotter.Snapshot ──► Storage.Checkpoint
//	                              8. Advance
//
// Committed entries are applied before the Ready's own write because a quorum has
// them on disk already: Raft counts the leader's own append only once Advance says
// it is durable, so no commit rests on a write still in flight. Their answers then do
// not wait for the next batch's fsync.
//
// Raft runs with PreVote and CheckQuorum on; the election timeout is ElectionTicks
// Ticks. A member that is not the leader sends its proposals (Propose, Submit,
// ProposeConfChange) to the leader itself, as MsgProp on its Raft connection, not
// through its own raft.Node: no wait for its own next fsync, and a member removed and
// added again is not left unable to propose (raft.Node blocks the proposals of a
// member removed from the configuration until it sees a new leader). Without a known
// leader a proposal is dropped at once.
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
// With a Snapshotter in Config, the Ready loop takes a snapshot once SnapshotEntries
// entries have been applied since the last one: the caller's Snapshot() at the
// applied index, with the ConfState as of that index, handed to Storage.Checkpoint,
// which makes it durable and compacts the log: memory keeps the KeepEntries entries
// before the snapshot (so a follower slightly behind is still sent entries), disk
// keeps nothing before it. A follower the leader's memory no longer covers is sent
// the snapshot (MsgSnap, reported sent at once: a lost one is sent again after the
// follower's next rejection); it keeps it as Save does below, calls Restore, sets
// applied to its index and applies the committed entries after it. On start, a
// snapshot newer than Config.Applied is given to Restore before any entry.
//
// # Storage
//
// Storage is raft.Storage plus Save and Checkpoint. FileStorage keeps it in a
// raft.MemoryStorage and, on disk in Dir, in the newest snapshot and the log that
// follows it, writing the file (and fsyncing it when Raft says MustSync) before the
// memory copy, so Raft never reads what is not durable:
//
//	snap-<index>.snap    one record: the raftpb.Snapshot (metadata and the caller's data)
//	raft-<index>.log     records: the entries after that snapshot and hard states
//	raft.log             the log when no snapshot was ever taken (index 0)
//
// <index> is 16 hex digits. A record is
//
//	0        4        8      9             9+len
//	+--------+--------+------+-------------+
//	| crc32c | len    | type | payload     |   uint32s little-endian; the CRC covers
//	+--------+--------+------+-------------+   type and payload
//
// type 1 is a raftpb.Entry, 2 a raftpb.HardState, 3 a raftpb.Snapshot (protobuf;
// type 3 only in snapshot files, and in logs written before snapshot files
// existed). One Save appends its entries then its hard state in one write. Replay:
// an entry at an index already held replaces that index and every later one (a new
// leader's conflicting tail), an entry at or before the snapshot is skipped, and a
// torn or corrupt log tail is truncated at the last whole record and reported.
//
// The log file is extended with zeros 8 MiB ahead of need (and the new size fsynced),
// so the records of a Save are written into allocated space and made durable with
// an fdatasync that need not commit a change of size; Open reads zeros after the
// last record as the end of the log, not as a torn tail, and Close cuts them off.
//
// A snapshot at index S (a Checkpoint, or one received in Save) goes to disk in
// three steps, each durable before the next:
//
//  1. snap-S.snap: written as snap-S.snap.tmp, fsynced, renamed, directory fsynced;
//  2. raft-S.log: the entries after S and the hard state now in memory, written the
//     same way; appends then go to it;
//  3. the older logs and snapshot files are removed, directory fsynced.
//
// Open recovers in this order: the newest snapshot file that reads back whole
// (a damaged or .tmp one is ignored); the newest log whose index is at most the
// snapshot's (raft-S.log after step 2, the older log after a crash between 1 and 2,
// whose entries up to S are skipped); then, if the replayed hard state is behind
// the snapshot (a received snapshot whose hard state had not reached disk), its
// commit is raised to S and its term to the snapshot's. Files left by a crash in
// step 3 are ignored and removed by the next snapshot.
//
// # The TCP transport
//
// Every member listens on its peer address (ZooKeeper's server.N host:port) and
// keeps one outbound connection to each other member, fed by a bounded queue. A
// connection is plain TCP or, with Config.TLS, mutual TLS; it starts with the hellos
// (the dialling member names itself and whom it meant to reach, the other answers with
// its own once it accepts the connection), and then carries frames: a uint32
// big-endian length, a kind byte and a body — a raftpb.Message, a snapshot message (a
// kind of its own: the one that may be large, read one at a time), a note, or a
// keepalive (frame.go). A full queue drops the message and a failed dial or write
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
// error txn. Still open: Storage on server/store's WAL (preallocated
// segments) and snapshots streamed rather than held in one []byte.
package quorum
