package server

import (
	"context"

	"github.com/paddock/paddock/server/admin"
)

// txnLog is the log a server writes through, one per mode: the standalone log (solo,
// solo.go) or the membership of a replicated ensemble (replica, replica.go). The Server
// keeps what both modes share — connections, the tree, sessions, watches and the apply
// of a committed txn (apply.go) — and asks its log only what the log decides.
//
// Both logs take their txns from the same place: propose queues a proposal on
// Server.proposals and the log's own loop takes them in batches (Server.nextBatch), so
// no request costs a call through this interface; the log gives each txn its zxid and
// hands it to Server.apply in log order. The log owns the last zxid it handed out; the
// Server's lastApplied follows apply.
type txnLog interface {
	// open recovers the tree, the session table, lastApplied and the next session id
	// from what the log holds. Start calls it before the listeners are bound.
	open() error
	// start starts the log's goroutines (through Server.goroutine). Start calls it once
	// open succeeded and the listeners are bound.
	start()
	// halt makes whatever waits on the log give up. Close calls it first, before it
	// waits for the server's goroutines.
	halt()
	// close releases the log once every goroutine of the server has ended. It is
	// called also when open failed or was never called.
	close() error

	// takesClients reports whether the server serves clients (a member only while it
	// follows a leader it has caught up with), for c's handshake. A member that lost
	// its leader a moment ago waits, while c is open, to see whether it serves again
	// soon. A member in read-only mode takes a client that asks for a read-only
	// session (readOnly), and says so: ro is then set, and so is c.readOnly.
	takesClients(c *conn, readOnly bool) (ro, ok bool)
	// reaches reports whether the server's tree reaches zxid, a client's last seen
	// zxid newer than the tree's now: a member may wait, until ctx ends, for the
	// writes it has yet to apply.
	reaches(ctx context.Context, zxid int64) bool
	// leading reports whether this server decides what only one server may: session
	// expiry and the reaping of containers and TTL nodes.
	leading() bool
	// keptAlive notes that the client of session id showed it is alive (a request, a
	// reconnection), for whoever expires sessions if that is not this server. Called at
	// most every quarter tick per connection.
	keptAlive(id int64)

	// sync answers a sync request r of c (whose decoding succeeded) once the tree holds
	// every write acknowledged before it anywhere. It returns false when c must stop
	// reading.
	sync(c *conn, r *request) bool
	// reconfig answers a reconfig request r of c (decoded, reconfig_enabled set). It
	// returns false when c must stop reading.
	reconfig(c *conn, r *request) bool

	// fillStats adds the log's part to the admin figures: the mode, and a member's
	// quorum figures.
	fillStats(st *admin.Stats)
}
