package server

import (
	"crypto/rand"
	"errors"
	"maps"
	"slices"
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

// Why a new read-only session is refused (roSessions.create).
var (
	errROTableFull = errors.New("server: the member keeps as many read-only sessions as it may")
	errROAddrFull  = errors.New("server: the client address keeps as many read-only sessions as it may (read_only_max_client_cnxns)")
)

// readOnlyPerAddr is how many read-only sessions one client address may keep: the
// configured read_only_max_client_cnxns, else maxClientCnxns, else ZooKeeper's default
// of maxClientCnxns, 60. maxClientCnxns bounds an address's connections, each of which
// holds at most one session; a read-only session outlives its connection until its
// timeout, so an address that may hold N connections may hold N such sessions, counted
// whether connected or not. Without this bound one client that connects and leaves
// filled a member's 65,536 sessions in 34 s and locked every other read-only client out
// (issue 31); with it, filling the table takes 1,093 addresses at the default.
func (c *Config) readOnlyPerAddr() int {
	switch {
	case c.ReadOnlyMaxClientCnxns > 0:
		return c.ReadOnlyMaxClientCnxns
	case c.MaxClientCnxns > 0:
		return c.MaxClientCnxns
	}
	return defaultMaxClientCnxns
}

// defaultMaxClientCnxns is ZooKeeper's default of maxClientCnxns.
const defaultMaxClientCnxns = 60

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

// roSessions are the sessions a member made while read-only: their passwords and client
// addresses, how many each address keeps, and their expiry in a session table of their
// own (the server's table is the ensemble's). Invariant: addrs counts, for each address,
// the sessions in sessions made from it, none more than perAddr, and sessions holds at
// most max.
type roSessions struct {
	perAddr  int // the most sessions one address may keep (Config.readOnlyPerAddr)
	max      int // the most sessions the member keeps: maxReadOnlySessions (tests lower it)
	mu       sync.Mutex
	sessions map[int64]roSession // guarded by mu
	addrs    map[string]int      // guarded by mu; an address keeping none is absent
	table    *session.Table
}

// roSession is one read-only session.
type roSession struct {
	password []byte
	addr     string // the client's IP address when it made the session
}

func newROSessions(tick time.Duration, perAddr int) *roSessions {
	return &roSessions{perAddr: perAddr, max: maxReadOnlySessions, sessions: make(map[int64]roSession), addrs: make(map[string]int),
		table: session.NewTable(tick)}
}

// create makes session id for a client at addr, with timeout in ms, and returns its
// password; it refuses with errROTableFull when the member keeps max sessions, and with
// errROAddrFull when addr keeps perAddr.
func (t *roSessions) create(id int64, timeout int32, now time.Time, addr string) (password []byte, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case len(t.sessions) >= t.max:
		return nil, errROTableFull
	case t.addrs[addr] >= t.perAddr:
		return nil, errROAddrFull
	}
	password = make([]byte, wire.PasswordLen)
	rand.Read(password)
	t.sessions[id] = roSession{password: password, addr: addr}
	t.addrs[addr]++
	t.table.Add(id, time.Duration(timeout)*time.Millisecond, now)
	return password, nil
}

// resume reports whether session id is one of the member's read-only sessions, alive,
// with password; it is touched if so. It stays counted against the address that made
// it, wherever it is resumed from.
func (t *roSessions) resume(id int64, password []byte, now time.Time) bool {
	t.mu.Lock()
	s, ok := t.sessions[id]
	t.mu.Unlock()
	return ok && string(s.password) == string(password) && t.table.Touch(id, now)
}

// touch keeps session id alive; false if it is unknown or has expired.
func (t *roSessions) touch(id int64, now time.Time) bool { return t.table.Touch(id, now) }

// remove ends session id (its client closed it).
func (t *roSessions) remove(id int64) {
	t.mu.Lock()
	t.forgetLocked(id)
	t.mu.Unlock()
	t.table.Remove(id)
}

// forgetLocked drops session id and its count against its address.
func (t *roSessions) forgetLocked(id int64) {
	s, ok := t.sessions[id]
	if !ok {
		return
	}
	delete(t.sessions, id)
	if t.addrs[s.addr]--; t.addrs[s.addr] <= 0 {
		delete(t.addrs, s.addr)
	}
}

// expire ends the sessions whose clients were silent for their timeout, and returns them.
func (t *roSessions) expire(now time.Time) []int64 {
	ids := t.table.Expire(now)
	if len(ids) > 0 {
		t.mu.Lock()
		for _, id := range ids {
			t.forgetLocked(id)
		}
		t.mu.Unlock()
	}
	return ids
}

// clear ends every session: the member rejoined a quorum.
func (t *roSessions) clear() {
	t.mu.Lock()
	ids := slices.Collect(maps.Keys(t.sessions))
	clear(t.sessions)
	clear(t.addrs)
	t.mu.Unlock()
	for _, id := range ids {
		t.table.Remove(id)
	}
}

// len returns how many read-only sessions the member keeps.
func (t *roSessions) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}
