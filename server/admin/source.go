package admin

import (
	"net/netip"
	"time"
)

// Source is what the server exposes to the admin commands. The server implements it; admin
// only reads through it (and asks for the two resets).
//
// Concurrency: every method may be called at any time after New, from any goroutine (the
// goroutine answering a four-letter word, an HTTP handler, a Prometheus scrape), concurrently
// with each other and with request processing. None may block on client I/O.
//
// Snapshot semantics: each method returns a snapshot that the caller owns: the server must
// not keep, reuse or mutate the returned slices afterwards. One call should be consistent in
// itself where the server can make it so cheaply (e.g. one session's Ephemerals and Expires
// read under the same lock), but two calls need not agree with each other: a `dump` may see a
// session that Stats no longer counts. Order within returned slices does not matter; admin
// sorts what it prints.
type Source interface {
	// Stats returns the server-wide counters and gauges. It is called for srvr, stat, mntr,
	// the JSON stats commands and every /metrics scrape, so it must be cheap: counters the
	// server keeps, not a walk of the tree.
	Stats() Stats
	// Connections returns one entry per open client connection, including connections that
	// have not finished the handshake, but not connections that sent a four-letter word.
	// (ZooKeeper lists the asking connection, without a session; go-zookeeper/zk's FLWCons
	// cannot parse that line and so always fails against ZooKeeper. Leaving it out lets
	// FLWCons succeed.)
	Connections() []Connection
	// Sessions returns every live session with the paths of the ephemeral nodes it owns.
	Sessions() []Session
	// Watches returns one entry per (session, path) with a watch in the data table (data,
	// exist, persistent, persistent recursive): what ZooKeeper 3.8's wchs, wchc and wchp
	// show. Child-only watches are not listed, as in ZooKeeper.
	Watches() []Watch
	// ResetStats zeroes the server-wide packet counters (srst). Admin resets its own latency
	// figures itself.
	ResetStats()
	// ResetConnectionStats zeroes every connection's statistics (crst); with ConnStats that
	// is ConnStats.Reset on each connection.
	ResetConnectionStats()
}

// Stats is a snapshot of server-wide figures.
type Stats struct {
	// Mode is the server state as ZooKeeper names it: "standalone", "leader", "follower",
	// "observer" or "read-only".
	Mode string
	// Zxid is the last zxid applied to the tree.
	Zxid int64
	// Nodes counts every znode, /zookeeper and its children included.
	Nodes int64
	// DataSize is the approximate data size in bytes: the sum over znodes of path length
	// plus data length (ZooKeeper's approximate_data_size).
	DataSize int64
	// Ephemerals counts ephemeral znodes.
	Ephemerals int64
	// Sessions counts live sessions.
	Sessions int64
	// Watches counts registered watches over all kinds, one per (session or connection, path, kind).
	Watches int64
	// Connections counts open client connections, the same set Source.Connections lists.
	Connections int64
	// Outstanding counts requests read from clients and not yet answered.
	Outstanding int64
	// PacketsReceived and PacketsSent count client packets since start or the last ResetStats.
	PacketsReceived int64
	PacketsSent     int64
	// NotServing is set while an ensemble member cannot serve clients (it knows no
	// leader, or is catching up with one): the words that read the server's state
	// then answer as ZooKeeper's do when its server is not running.
	NotServing bool
	// Quorum is set for a member of a replicated ensemble.
	Quorum *QuorumStats
	// Limits counts what the bounds at the client port refused, dropped or waited for.
	Limits LimitStats
	// QuotaAudit counts quota refusals and audit lines (quotaaudit.go).
	QuotaAudit QuotaAuditStats
}

// LimitStats are the counters of the bounds at the client port (docs/limits.md), since
// the server started (srst does not reset them: Prometheus counters only grow), and the
// bytes queued for clients now.
type LimitStats struct {
	// SessionlessExpired counts connections closed because neither a ConnectRequest nor
	// a four-letter word came within the handshake timeout (ZooKeeper's
	// sessionless_connections_expired).
	SessionlessExpired int64
	// FramesRejected counts connections closed for a frame announced longer than
	// allowed: a connect frame past wire.MaxConnectFrame, a request past jute.maxbuffer.
	FramesRejected int64
	// LargeResponsesRejected counts reads refused because their reply would be larger
	// than a client may read (jute.maxbuffer plus headroom).
	LargeResponsesRejected int64
	// ConnectionsDropped counts connections closed because the replies queued for them
	// passed the connection's limit or, the slowest first, the server's
	// (ZooKeeper's connection_drop_count).
	ConnectionsDropped int64
	// ThrottleWaits counts the times a connection stopped reading because the server had
	// its limit of requests outstanding (ZooKeeper's request_throttle_wait_count);
	// ConnThrottleWaits, because the connection had its own.
	ThrottleWaits     int64
	ConnThrottleWaits int64
	// TLSHandshakesFailed counts connections to the secure client port closed because
	// their TLS handshake failed or did not finish within the handshake timeout
	// (ZooKeeper's unsuccessful_handshake).
	TLSHandshakesFailed int64
	// QueuedBytes is the bytes of replies and notifications queued for clients and not
	// yet written, over all connections.
	QueuedBytes int64
	// ReadOnlyRefused counts read-only sessions a read-only member refused: its table
	// full, or the client's address keeping as many as it may.
	ReadOnlyRefused int64
}

// QuorumStats describes a member's ensemble. The learner counts are the leader's
// (ZooKeeper's mntr shows them on the leader only); elsewhere they are zero.
type QuorumStats struct {
	// Size is the number of voting members; a majority of them is a quorum.
	Size int
	// Followers and Observers count the other members; Synced ones have replicated
	// the log up to the commit index.
	Followers, SyncedFollowers int
	Observers, SyncedObservers int
	// Refused counts what the member refused of the other members' input since it
	// started (docs/security.md).
	Refused PeerRefusals
	// Term is the member's Raft term; TermCatchUps counts the messages it took with a
	// term past the jump bound, at most one an election timeout (docs/security.md): a
	// member catching up after an election it missed, or a forger spending the allowance.
	Term, TermCatchUps int64
}

// PeerRefusals count what a member refused at its peer port, and the committed entries
// it could not apply as written.
type PeerRefusals struct {
	// Connections closed before they carried a message: past the bound on unidentified
	// connections, a failed TLS handshake, no or a bad hello, a certificate that does
	// not prove the member id claimed.
	Connections int64
	// Frames: connections closed for a frame of an unknown kind, over its bound, or
	// that does not decode.
	Frames int64
	// Messages: Raft messages dropped by the checks in front of Raft (terms or indexes
	// out of range, a sender other than the connection's member, types members never send).
	Messages int64
	// Proposals the leader refused to put in the log: entries that do not decode or
	// are not their sender's, impossible membership changes.
	Proposals int64
	// Notes that did not decode.
	Notes int64
	// EntriesSkipped are committed membership changes that did not decode or apply;
	// EntriesUndecodable committed batches of txns that did not decode, each applied as
	// an error txn. Every member skips the same ones.
	EntriesSkipped, EntriesUndecodable int64
	// Snapshots a leader streamed that the member refused: past its bound, cut short,
	// or not restorable.
	Snapshots int64
	// CommittedConflicts are appends that conflicted with entries the member committed:
	// evidence of a forged log, which an operator must repair (docs/security.md).
	CommittedConflicts int64
}

// Connection is a snapshot of one client connection. ConnStats fills the statistics fields;
// the server fills the others.
type Connection struct {
	// Remote is the client's address.
	Remote netip.AddrPort
	// Established is when the connection was accepted.
	Established time.Time
	// Expires is when the server will close the connection if nothing more arrives: its
	// session's expiry deadline, or the handshake deadline before there is a session. dump
	// groups connections by it.
	Expires time.Time
	// SessionID is 0 until the handshake has attached a session.
	SessionID int64
	// Timeout is the negotiated session timeout; 0 before the handshake.
	Timeout time.Duration
	// Queued counts the connection's requests read and not yet answered.
	Queued int64

	// Received and Sent count packets since the connection opened or its last reset.
	Received int64
	Sent     int64
	// LastOp is the four-letter form of the last answered opcode (wire.Op.Short, e.g.
	// "GETD"); empty prints as ZooKeeper's "NA".
	LastOp string
	// LastCxid is the xid of the last answered request that had a non-negative xid, or -1.
	LastCxid int64
	// LastZxid is the zxid of the last reply, or -1.
	LastZxid int64
	// LastResponse is when the last reply was sent; zero if none since the last reset.
	LastResponse time.Time
	// LastLatency, MinLatency, AvgLatency and MaxLatency are the request latencies of the
	// connection since it opened or its last reset; zero when there were none.
	LastLatency time.Duration
	MinLatency  time.Duration
	AvgLatency  time.Duration
	MaxLatency  time.Duration
}

// Session is a snapshot of one live session.
type Session struct {
	ID int64
	// Timeout is the negotiated session timeout.
	Timeout time.Duration
	// Expires is the deadline of the session's expiry bucket: the session expires then
	// unless the client is heard from. dump groups sessions by it, so sessions in one bucket
	// should carry the same value.
	Expires time.Time
	// Ephemerals are the paths of the ephemeral znodes the session owns.
	Ephemerals []string
}

// Watch is one (session, path) pair with at least one watch registered.
type Watch struct {
	SessionID int64
	Path      string
}
