// Package quorum replicates the server's log across an ensemble with etcd's Raft
// library (go.etcd.io/raft/v3). This is its first building block: one member's Raft
// (Node), its storage (Storage, FileStorage) and the peer transport (Transport). It
// knows nothing of txns or the tree: entries are opaque bytes. Package server does
// not use it yet.
//
// # A member
//
// New opens the member's storage, starts its Transport and its Ready loop (Node.run,
// one goroutine), which owns everything Raft hands out, in the order Raft requires:
//
//	tick ──► raft.Node ──Ready──► 1. Storage.Save(HardState, Entries, Snapshot)  fsync when MustSync
//	                              2. Transport.Send(Messages)                      only after 1
//	                              3. Snapshot (from the leader) ──► Snapshotter.Restore, applied = its index
//	                              4. apply CommittedEntries after it, in order:
//	                                   conf change ──► raft ApplyConfChange
//	                                   proposal    ──► ApplyFunc, then wake its Propose
//	                              5. ReadStates ──► wake their ReadIndex
//	                              6. every SnapshotEntries applied: Snapshotter.Snapshot ──► Storage.Checkpoint
//	                              7. Advance
//
// Raft runs with PreVote and CheckQuorum on; the election timeout is ElectionTicks
// Ticks. Proposals on followers and learners are forwarded to the leader by Raft.
//
// Membership: a new member's storage is given the initial membership as committed
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
// # Transport
//
// Every member listens on its peer address (ZooKeeper's server.N host:port) and
// keeps one outbound TCP connection to each other member, fed by a bounded queue:
// a frame is a uint32 big-endian length and a marshalled raftpb.Message. A full queue
// drops the message and a failed dial or write redials with exponential backoff
// (20ms to 1s); both report the peer unreachable, and Raft retransmits.
//
// # Plugging into server/
//
// The server's log has one interface with two implementations: standalone (the WAL
// and commitLoop/applyLoop of pipeline.go) and quorum, built on Node:
//
//   - Propose: every server, leader or not, proposes its clients' writes through
//     Node.Propose (followers forward natively) and answers the client once the
//     entry is applied locally — ZooKeeper's follower write path without the
//     leader round trip in our code. A txn is encoded before proposing; its zxid and
//     time are given at apply, not at proposal.
//   - Apply: ApplyFunc decodes the txn, stamps zxid = term<<32 | counter, where the
//     counter restarts at 1 with each new term (the new leader's empty entry marks
//     the term's start; the counter is kept in snapshots), and runs the same
//     apply(tree, txn) as standalone. Time comes from the proposer and travels in the
//     entry so every replica agrees. Before the counter wraps the leader transfers
//     leadership to start a new term.
//   - Sessions are global: createSession/closeSession are entries; only the leader
//     (Status().Role == RoleLeader) runs the expiry loop and proposes closeSession;
//     followers forward their local sessions' pings to the leader.
//   - sync and reads after it: Node.ReadIndex, which waits until applied ≥ the index.
//   - Storage: back Storage by server/store's WAL (entries and hard state as records,
//     group fsync per Ready) and the tree's Snapshotter by the store's snapshot
//     (streamed rather than held in one []byte once trees are large).
//   - Config: server.N lines give Voters (and :observer ones Learners), myid gives ID,
//     tickTime gives Tick, initLimit/syncLimit bound ElectionTicks.
package quorum
