package server

import (
	"log/slog"
	"net"
	"testing"
	"time"
)

// holdFixture is a replica of a server that is not started, and a connection of its,
// for the handshake's wait on a member that lost its leader (replica.takesClients).
func holdFixture(t *testing.T, configure ...func(*Config)) (*replica, *conn) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.ElectionTimeout = 2 * time.Second
	for _, f := range configure {
		f(&cfg)
	}
	s, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r := newReplica(s)
	s.log = r
	return r, fixtureConn(t, s)
}

// fixtureConn is a registered connection of s over a pipe.
func fixtureConn(t *testing.T, s *Server) *conn {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	c := newConn(s, a)
	if !s.addConn(c) {
		t.Fatal("connection not registered")
	}
	return c
}

// TestHandshakeHeldThroughElection: a member that lost its leader a moment ago holds a
// client's handshake instead of refusing it, keeps it open when it stops serving again
// (an election closes every connection twice: the leader lost, a new one found), and
// lets it through once it serves.
func TestHandshakeHeldThroughElection(t *testing.T) {
	r, c := holdFixture(t)
	r.lostAt.Store(time.Now().UnixNano())
	got := make(chan bool, 1)
	go func() { _, ok := r.takesClients(c, false); got <- ok }()
	deadline := time.Now().Add(5 * time.Second)
	for !c.awaiting.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the handshake did not wait")
		}
		select {
		case ok := <-got:
			t.Fatalf("the handshake was answered %v at once by a member that lost its leader a moment ago", ok)
		case <-time.After(time.Millisecond):
		}
	}
	r.stopServing() // the new leader is found: every connection but the waiting ones closes
	if c.ctx.Err() != nil {
		t.Fatal("stopServing closed a connection whose handshake was waiting")
	}
	select {
	case ok := <-got:
		t.Fatalf("the handshake was answered %v while the member did not serve", ok)
	case <-time.After(50 * time.Millisecond):
	}
	r.startServing()
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("the handshake was refused once the member served")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handshake still waits once the member serves")
	}
	if c.awaiting.Load() {
		t.Fatal("the connection is still marked waiting")
	}
	r.stopServing() // an answered connection is closed like any other
	if c.ctx.Err() == nil {
		t.Fatal("stopServing left a served connection open")
	}
}

// TestHandshakeRefusedByALongLeaderlessMember: a member without a leader for longer
// than two election timeouts refuses at once, so that its clients go elsewhere; one
// whose client hangs up while it waits stops waiting.
func TestHandshakeRefusedByALongLeaderlessMember(t *testing.T) {
	r, c := holdFixture(t)
	r.lostAt.Store(time.Now().Add(-3 * r.s.cfg.ElectionTimeout).UnixNano())
	start := time.Now()
	if _, ok := r.takesClients(c, false); ok {
		t.Fatal("a member leaderless for three election timeouts took a client")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("it took %v to refuse", d)
	}

	r, c = holdFixture(t)
	r.lostAt.Store(time.Now().UnixNano())
	got := make(chan bool, 1)
	go func() { _, ok := r.takesClients(c, false); got <- ok }()
	for !c.awaiting.Load() {
		time.Sleep(time.Millisecond)
	}
	c.close()
	select {
	case ok := <-got:
		if ok {
			t.Fatal("a closed connection's handshake went through")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handshake still waits after its connection closed")
	}
}
