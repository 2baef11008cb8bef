package server

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/paddock/paddock/server/session"
	"github.com/paddock/paddock/server/wire"
)

// Read-only mode (Config.ReadOnlyMode; docs/ensemble.md "Read-only mode"). A member cut
// off from its quorum for longer than two election timeouts serves the clients that ask
// for a read-only session (the connect request's readOnly flag) from its own tree, as
// ZooKeeper's read-only server does:
//
//   - a connect request without the flag is refused (the connection closed), as while
//     the member does not serve at all; one with it gets readOnly=true in its reply;
//   - the session is local to the member (roSessions): never proposed, unknown to the
//     other members, ended by its client, by its timeout, or when the member rejoins a
//     quorum. A connect request that resumes a session of the ensemble is refused: the
//     member cannot keep it alive, and the client must find a member that can;
//   - reads, watches, auth and pings are answered as ever; every request that would change
//     the tree, and sync, is answered NotReadOnly (refusedReadOnly), the connection left
//     open;
//   - once the member knows a leader again, its read-only connections are closed so that
//     their clients reconnect to a member that takes writes (replica.endReadOnly, from
//     watchLoop, and again from startServing for a handshake that raced it); until it has
//     caught up with that leader it takes no client, as a ZooKeeper follower syncing.

// maxReadOnlySessions bounds the sessions a read-only member keeps: a client that opens
// connections and leaves them would otherwise grow the table until its sessions time
// out. Past it, a new read-only session is refused (the connection closed).
const maxReadOnlySessions = 1 << 16

// refusedReadOnly reports whether a read-only session's request of type op is answered
// NotReadOnly: every request that changes the tree, and sync, whose answer promises what
// a member without a leader cannot (ZooKeeper's ReadOnlyRequestProcessor's list).
func refusedReadOnly(op wire.Op) bool {
	switch op {
	case wire.OpSync, wire.OpCreate, wire.OpCreate2, wire.OpCreateTTL, wire.OpCreateContainer,
		wire.OpDelete, wire.OpDeleteContainer, wire.OpSetData, wire.OpReconfig, wire.OpSetACL,
		wire.OpMulti, wire.OpCheck:
		return true
	}
	return false
}

// readOnlyRequest settles how a read-only session's request r is answered: a request
// that would change the tree, or sync, is answered NotReadOnly whatever its body
// (ZooKeeper looks at the type alone), and the connection stays open; closeSession ends
// the local session and is answered from the tree, the connection then closed.
func (c *conn) readOnlyRequest(r *request, sid int64) {
	switch {
	case refusedReadOnly(r.op):
		r.err, r.close, r.kind = wire.ErrNotReadOnly, false, kindRead
	case r.op == wire.OpCloseSession:
		c.s.ro.remove(sid)
		c.draining.Store(true)
		r.err, r.close, r.kind = wire.OK, true, kindRead
	}
}

// roSessions are the sessions a member made while read-only: their passwords, and their
// expiry in a session table of their own (the server's table is the ensemble's).
type roSessions struct {
	mu        sync.Mutex
	passwords map[int64][]byte // guarded by mu
	table     *session.Table
}

func newROSessions(tick time.Duration) *roSessions {
	return &roSessions{passwords: make(map[int64][]byte), table: session.NewTable(tick)}
}

// create makes session id, with timeout in ms, and returns its password; ok is false
// when the member already keeps maxReadOnlySessions.
func (t *roSessions) create(id int64, timeout int32, now time.Time) (password []byte, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.passwords) >= maxReadOnlySessions {
		return nil, false
	}
	password = make([]byte, wire.PasswordLen)
	rand.Read(password)
	t.passwords[id] = password
	t.table.Add(id, time.Duration(timeout)*time.Millisecond, now)
	return password, true
}

// resume reports whether session id is one of the member's read-only sessions, alive,
// with password; it is touched if so.
func (t *roSessions) resume(id int64, password []byte, now time.Time) bool {
	t.mu.Lock()
	pw, ok := t.passwords[id]
	t.mu.Unlock()
	return ok && string(pw) == string(password) && t.table.Touch(id, now)
}

// touch keeps session id alive; false if it is unknown or has expired.
func (t *roSessions) touch(id int64, now time.Time) bool { return t.table.Touch(id, now) }

// remove ends session id (its client closed it).
func (t *roSessions) remove(id int64) {
	t.mu.Lock()
	delete(t.passwords, id)
	t.mu.Unlock()
	t.table.Remove(id)
}

// expire ends the sessions whose clients were silent for their timeout, and returns them.
func (t *roSessions) expire(now time.Time) []int64 {
	ids := t.table.Expire(now)
	if len(ids) > 0 {
		t.mu.Lock()
		for _, id := range ids {
			delete(t.passwords, id)
		}
		t.mu.Unlock()
	}
	return ids
}

// clear ends every session: the member rejoined a quorum.
func (t *roSessions) clear() {
	t.mu.Lock()
	ids := make([]int64, 0, len(t.passwords))
	for id := range t.passwords {
		ids = append(ids, id)
	}
	clear(t.passwords)
	t.mu.Unlock()
	for _, id := range ids {
		t.table.Remove(id)
	}
}

// len returns how many read-only sessions the member keeps.
func (t *roSessions) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.passwords)
}
