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
//	                              3. apply CommittedEntries in order:
//	                                   conf change ──► raft ApplyConfChange
//	                                   proposal    ──► ApplyFunc, then wake its Propose
//	                              4. ReadStates ──► wake their ReadIndex
//	                              5. Advance
//
// Raft runs with PreVote and CheckQuorum on; the election timeout is ElectionTicks
// Ticks. Proposals on followers and learners are forwarded to the leader by Raft.
//
// Membership: a new member's storage is given the initial membership as committed
// conf change entries in term 1 — every voter (ConfChangeAddNode) then every learner
// (ConfChangeAddLearnerNode), ascending ids — identical on every member, so all logs
// agree from index 1. The member then always starts with raft.RestartNode and
// Applied 0: the log is replayed from its start and its conf changes rebuild the
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
// # Storage
//
// Storage is raft.Storage plus Save. FileStorage keeps it in a raft.MemoryStorage
// and appends every Save to DIR/raft.log as records, writing the file (and fsyncing
// it when Raft says MustSync) before the memory copy, so Raft never reads what is not
// durable:
//
//	0        4        8      9             9+len
//	+--------+--------+------+-------------+
//	| crc32c | len    | type | payload     |   uint32s little-endian; the CRC covers
//	+--------+--------+------+-------------+   type and payload
//
// type 1 is a raftpb.Entry, 2 a raftpb.HardState, 3 a raftpb.Snapshot (protobuf).
// One Save writes its snapshot, entries, then hard state in one write. Open replays
// the file: an entry at an index already held replaces that index and every later
// one (a new leader's conflicting tail), and a torn or corrupt tail is truncated at
// the last whole record and reported. The file is never compacted: it is the stand-in
// for server/store's WAL.
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
//     group fsync per Ready), snapshots of the tree as raftpb.Snapshot metadata plus
//     the store's snapshot file, log compaction, and MsgSnap for lagging members.
//   - Config: server.N lines give Voters (and :observer ones Learners), myid gives ID,
//     tickTime gives Tick, initLimit/syncLimit bound ElectionTicks.
package quorum
