package server

import (
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/paddock/paddock/server/admin"
	"github.com/paddock/paddock/server/quorum"
	"github.com/paddock/paddock/server/wire"
)

func readOnlyMode(c *Config) { c.ReadOnlyMode = true }

// A member cut off for longer than two election timeouts takes a client as read-only
// only if read-only mode is on and the client asks for it; it refuses every other.
func TestReadOnlyHandshakeDecision(t *testing.T) {
	for _, tc := range []struct {
		name              string
		enabled, clientRO bool
		wantRO, wantOK    bool
	}{
		{"mode on, read-only client", true, true, true, true},
		{"mode on, read-write client", true, false, false, false},
		{"mode off, read-only client", false, true, false, false},
		{"mode off, read-write client", false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, c := holdFixture(t, func(c *Config) { c.ReadOnlyMode = tc.enabled })
			r.lostAt.Store(time.Now().Add(-3 * r.s.cfg.ElectionTimeout).UnixNano())
			ro, ok := r.takesClients(c, tc.clientRO)
			if ro != tc.wantRO || ok != tc.wantOK {
				t.Fatalf("takesClients = (ro %v, ok %v), want (%v, %v)", ro, ok, tc.wantRO, tc.wantOK)
			}
			if c.readOnly.Load() != tc.wantRO {
				t.Fatalf("conn.readOnly = %v, want %v", c.readOnly.Load(), tc.wantRO)
			}
			wantMode := admin.ModeFollower
			if tc.enabled {
				wantMode = admin.ModeReadOnly
			}
			if m := r.mode(); m != wantMode {
				t.Fatalf("mode %q, want %q", m, wantMode)
			}
		})
	}
}

// A member that serves is never read-only, and takes a read-only client as an ordinary
// one; a member that lost its leader a moment ago holds a read-only client until it is
// cut off, and then takes it as read-only.
func TestReadOnlyOnlyWhenCutOff(t *testing.T) {
	r, c := holdFixture(t, readOnlyMode)
	r.serving.Store(true)
	if ro, ok := r.takesClients(c, true); ro || !ok || c.readOnly.Load() || r.readOnlyNow() {
		t.Fatalf("a serving member: takesClients = (ro %v, ok %v), readOnlyNow %v", ro, ok, r.readOnlyNow())
	}

	r, c = holdFixture(t, readOnlyMode, func(c *Config) { c.ElectionTimeout = 100 * time.Millisecond })
	lost := time.Now()
	r.lostAt.Store(lost.UnixNano())
	ro, ok := r.takesClients(c, true)
	if !ro || !ok {
		t.Fatalf("takesClients = (ro %v, ok %v), want a read-only session once cut off", ro, ok)
	}
	if d := time.Since(lost); d < 2*r.s.cfg.ElectionTimeout {
		t.Fatalf("taken as read-only %v after the leader was lost, before two election timeouts", d)
	}
}

// When the member serves again it closes its read-only connections and ends their
// sessions, and leaves other connections open.
func TestServingAgainEndsReadOnlySessions(t *testing.T) {
	r, c := holdFixture(t, readOnlyMode)
	r.lostAt.Store(time.Now().Add(-3 * r.s.cfg.ElectionTimeout).UnixNano())
	if ro, _ := r.takesClients(c, true); !ro {
		t.Fatal("not taken as read-only")
	}
	if _, err := r.s.ro.create(42, 4000, time.Now(), "127.0.0.1"); err != nil {
		t.Fatal("read-only session not created")
	}
	other := fixtureConn(t, r.s)
	other.awaiting.Store(true) // a handshake held for the member to serve again
	r.startServing()
	if c.ctx.Err() == nil {
		t.Fatal("the read-only connection is still open once the member serves")
	}
	if other.ctx.Err() != nil {
		t.Fatal("a connection that was not read-only was closed")
	}
	if n := r.s.ro.len(); n != 0 {
		t.Fatalf("%d read-only sessions left once the member serves", n)
	}
	if r.readOnlyNow() {
		t.Fatal("still read-only while serving")
	}
}

// A read-only session resumes with its password only, expires after its timeout
// without traffic, and the table refuses sessions past its bound.
func TestROSessions(t *testing.T) {
	now := time.Now()
	tab := newROSessions(100*time.Millisecond, maxReadOnlySessions)
	pw, err := tab.create(7, 1000, now, "10.0.0.1")
	if err != nil || len(pw) != wire.PasswordLen {
		t.Fatalf("create = %x, %v", pw, err)
	}
	if tab.resume(7, make([]byte, wire.PasswordLen), now) {
		t.Fatal("resumed with a wrong password")
	}
	if tab.resume(8, pw, now) {
		t.Fatal("resumed an unknown session")
	}
	if !tab.resume(7, pw, now.Add(500*time.Millisecond)) {
		t.Fatal("not resumed with its password")
	}
	if got := tab.expire(now.Add(time.Second)); len(got) != 0 {
		t.Fatalf("expired %v, touched 0.5 s before and with a 1 s timeout", got)
	}
	if got := tab.expire(now.Add(2 * time.Second)); len(got) != 1 || got[0] != 7 {
		t.Fatalf("expire = %v, want [7]", got)
	}
	if tab.resume(7, pw, now.Add(2*time.Second)) || tab.touch(7, now.Add(2*time.Second)) {
		t.Fatal("an expired session resumed or was touched")
	}

	for id := range int64(maxReadOnlySessions) {
		if _, err := tab.create(id+100, 1000, now, "10.0.0.1"); err != nil {
			t.Fatalf("session %d of %d refused: %v", id+1, maxReadOnlySessions, err)
		}
	}
	if _, err := tab.create(1, 1000, now, "10.0.0.2"); err != errROTableFull {
		t.Fatalf("a session past maxReadOnlySessions: %v, want %v", err, errROTableFull)
	}
	tab.remove(100)
	if _, err := tab.create(1, 1000, now, "10.0.0.2"); err != nil {
		t.Fatalf("no room once a session was closed: %v", err)
	}
	tab.clear()
	if tab.len() != 0 || tab.table.Len() != 0 || len(tab.addrs) != 0 {
		t.Fatalf("clear left %d sessions (%d in the table, %d addresses)", tab.len(), tab.table.Len(), len(tab.addrs))
	}
}

// TestROSessionsPerAddress: whatever sessions are made, closed, expired, resumed and
// cleared, from whichever addresses (seeded, with the bounds at their boundaries), each
// address keeps at most perAddr sessions and the member at most max; a session is
// refused exactly when its address keeps perAddr (errROAddrFull) or the member keeps
// max (errROTableFull); and the counts follow the sessions as they end. So a client
// that fills its address's share leaves room for every other address.
func TestROSessionsPerAddress(t *testing.T) {
	addrs := []string{"127.0.0.1", "127.0.0.2", "10.0.0.1", "::1", ""}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 31))
		perAddr := []int{1, 2, 3, 60}[rng.IntN(4)]
		tab := newROSessions(100*time.Millisecond, perAddr)
		tab.max = []int{1, 4, 16, 64, maxReadOnlySessions}[rng.IntN(5)]
		type model struct {
			addr     string
			password []byte
			expires  time.Time
		}
		live := map[int64]model{}
		now, next := time.Unix(1000, 0), int64(1)
		for step := range 200 {
			switch op := rng.IntN(10); {
			case op < 5: // a new session
				addr := addrs[rng.IntN(len(addrs))]
				n := 0
				for _, m := range live {
					if m.addr == addr {
						n++
					}
				}
				want := error(nil)
				switch {
				case len(live) >= tab.max:
					want = errROTableFull
				case n >= perAddr:
					want = errROAddrFull
				}
				pw, err := tab.create(next, 1000, now, addr)
				if err != want {
					t.Fatalf("seed %d step %d: create from %q holding %d of %d (%d of %d in all): %v, want %v",
						seed, step, addr, n, perAddr, len(live), tab.max, err, want)
				}
				if err == nil {
					live[next] = model{addr, pw, now.Add(time.Second)}
				}
				next++
			case op < 6: // its client closes one
				for id := range live {
					tab.remove(id)
					delete(live, id)
					break
				}
			case op < 8: // time passes; silent sessions expire
				now = now.Add(time.Duration(rng.IntN(800)) * time.Millisecond)
				for _, id := range tab.expire(now) {
					if m, ok := live[id]; !ok || now.Before(m.expires) {
						t.Fatalf("seed %d step %d: session %d expired early or twice", seed, step, id)
					}
					delete(live, id)
				}
			case op < 9: // a client resumes its session, from any address
				for id, m := range live {
					if tab.resume(id, m.password, now) {
						m.expires = now.Add(time.Second)
						live[id] = m
					}
					break
				}
			default:
				if rng.IntN(10) == 0 { // the member rejoins a quorum
					tab.clear()
					clear(live)
				}
			}
			checkROSessions(t, tab, live, perAddr, func(m model) string { return m.addr })
		}
	}
}

// checkROSessions checks tab's counts against the sessions the model keeps.
func checkROSessions[M any](t *testing.T, tab *roSessions, live map[int64]M, perAddr int, addr func(M) string) {
	t.Helper()
	want := map[string]int{}
	for _, m := range live {
		want[addr(m)]++
	}
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if len(tab.sessions) != len(live) || len(tab.sessions) > tab.max {
		t.Fatalf("%d sessions kept, the model %d, max %d", len(tab.sessions), len(live), tab.max)
	}
	if !maps.Equal(tab.addrs, want) {
		t.Fatalf("sessions by address %v, want %v", tab.addrs, want)
	}
	for a, n := range tab.addrs {
		if n > perAddr {
			t.Fatalf("address %q keeps %d sessions, past %d", a, n, perAddr)
		}
	}
}

// The per-address bound: read_only_max_client_cnxns when set, else maxClientCnxns,
// else ZooKeeper's default of maxClientCnxns.
func TestReadOnlyPerAddr(t *testing.T) {
	for _, tc := range []struct{ ro, cnxns, want int }{{0, 60, 60}, {0, 10, 10}, {0, 0, 60}, {5, 60, 5}, {5, 0, 5}, {maxReadOnlySessions, 1, maxReadOnlySessions}} {
		c := Config{ReadOnlyMaxClientCnxns: tc.ro, MaxClientCnxns: tc.cnxns}
		if got := c.readOnlyPerAddr(); got != tc.want {
			t.Errorf("read_only_max_client_cnxns %d, max_client_cnxns %d: %d, want %d", tc.ro, tc.cnxns, got, tc.want)
		}
	}
}

// Every request that changes the tree, and sync, is refused in read-only mode; reads,
// watches, auth, pings and the session's own close are not.
func TestRefusedReadOnly(t *testing.T) {
	for op := wire.Op(-20); op <= 120; op++ {
		if _, known := wire.NewRequest(op); !known && op != wire.OpCloseSession {
			continue
		}
		want := op.IsWrite() && op != wire.OpCloseSession || op == wire.OpSync || op == wire.OpCheck || op == wire.OpReconfig
		if got := refusedReadOnly(op); got != want {
			t.Errorf("refusedReadOnly(%v) = %v, want %v", op, got, want)
		}
	}
}

// An election that finds no leader (a new term, nothing more) leaves a read-only
// connection open; a member that knows a leader again is not read-only, and takes no
// read-only client while it catches up.
func TestReadOnlyThroughAnElection(t *testing.T) {
	r, c := holdFixture(t, readOnlyMode)
	r.lostAt.Store(time.Now().Add(-3 * r.s.cfg.ElectionTimeout).UnixNano())
	if ro, _ := r.takesClients(c, true); !ro {
		t.Fatal("not taken as read-only")
	}
	r.stopServing()
	if c.ctx.Err() != nil {
		t.Fatal("stopServing closed a read-only connection")
	}
	r.status.Store(&quorum.Status{Leader: 2, Term: 3})
	if r.readOnlyNow() || r.mode() == admin.ModeReadOnly {
		t.Fatal("read-only while it knows a leader")
	}
	if ro, ok := r.takesClients(fixtureConn(t, r.s), true); ro || ok {
		t.Fatalf("takesClients while catching up = (ro %v, ok %v), want a refusal", ro, ok)
	}
}
