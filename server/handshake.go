package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"time"

	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// handshake answers the ConnectRequest in body: a new session, a resumed one, or the
// expired answer. It returns false if the connection must close.
func (c *conn) handshake(body []byte) bool {
	s := c.s
	var req wire.ConnectRequest
	d := wire.NewDecoder(body)
	req.Decode(d)
	if d.Err() != nil {
		s.logger.Debug("malformed connect request", "remote", c.nc.RemoteAddr().String(), "err", d.Err())
		return false
	}
	c.stats.PacketReceived()
	s.received.Add(1)
	start := time.Now()
	ro, ok := s.log.takesClients(c, req.ReadOnly)
	if !ok {
		// A member without a leader does not serve: the client tries another one.
		s.logger.Debug("refusing client: not serving", "remote", c.nc.RemoteAddr().String())
		return false
	}
	if req.LastZxidSeen > s.lastApplied.Load() && (ro || !s.log.reaches(c.ctx, req.LastZxidSeen)) {
		// The client has seen a newer state than ours: it must try another server, and
		// ZooKeeper tells it so by closing the socket without a reply.
		s.logger.Info("refusing client that has seen a newer zxid", "remote", c.nc.RemoteAddr().String(),
			"client_zxid", hexID(req.LastZxidSeen), "zxid", hexID(s.lastApplied.Load()))
		return false
	}
	timeout := s.negotiateTimeout(req.Timeout)
	resp := wire.ConnectResponse{Timeout: timeout, HasReadOnly: req.HasReadOnly, ReadOnly: ro}
	switch {
	case ro && req.SessionID == 0:
		id := s.nextSessionID.Add(1)
		password, err := s.ro.create(id, timeout, time.Now(), c.ip)
		if err != nil {
			// Counted, and logged at Debug only: any client can ask, as often as it likes.
			s.limits.readOnlyRefused.Add(1)
			s.logger.Debug("refusing read-only client", "remote", c.nc.RemoteAddr().String(), "err", err)
			return false
		}
		resp.SessionID, resp.Password = id, password
	case ro && s.globalSession(req.SessionID):
		// A session of the ensemble: a member cut off from it can neither keep it alive
		// nor close it, so its client must find a member that serves (ZooKeeper refuses
		// it the same way).
		s.logger.Info("refusing a session of the ensemble in read-only mode", "remote", c.nc.RemoteAddr().String(),
			"session_id", hexID(req.SessionID))
		return false
	case ro && s.resumeReadOnly(c, req.SessionID, req.Password):
		resp.SessionID, resp.Password = req.SessionID, req.Password
	case ro: // an unknown or expired read-only session: the answer below
	case req.SessionID == 0:
		id, password, err := s.createSession(c.ctx, timeout)
		if err != nil {
			return false
		}
		resp.SessionID, resp.Password = id, password
	case s.resumeSession(c, req.SessionID, req.Password):
		resp.SessionID, resp.Password = req.SessionID, req.Password
	}
	if resp.SessionID == 0 {
		s.logger.Debug("session expired or unknown", "session_id", hexID(req.SessionID))
		// ZooKeeper's read-only server says readOnly in this answer too.
		expired := wire.ConnectResponse{Password: make([]byte, wire.PasswordLen), HasReadOnly: req.HasReadOnly, ReadOnly: ro}
		c.send(expired.Encode)
		c.draining.Store(true)
		c.closeAfterFlush()
		return false
	}
	c.sessionID.Store(resp.SessionID)
	c.timeout.Store(timeout)
	s.attach(c, resp.SessionID)
	c.send(resp.Encode)
	// ZooKeeper's latency figures count the connect request; a new session's createSession
	// runs as cxid 0, so cons then shows lcxid=0x0.
	cxid := int32(-1)
	if req.SessionID == 0 {
		cxid = 0
	}
	c.stats.Responded(wire.OpCreateSession, cxid, s.lastApplied.Load(), start, time.Now())
	s.admin.ObserveRequest(wire.OpCreateSession, time.Since(start))
	return true
}

// negotiateTimeout clamps a requested session timeout into [min, max].
func (s *Server) negotiateTimeout(requested int32) int32 {
	lo, hi := s.cfg.SessionTimeoutBounds()
	return int32(min(max(time.Duration(requested)*time.Millisecond, lo), hi).Milliseconds())
}

// createSession proposes a new session and waits until it is applied.
func (s *Server) createSession(ctx context.Context, timeout int32) (int64, []byte, error) {
	password := make([]byte, wire.PasswordLen)
	rand.Read(password)
	id := s.nextSessionID.Add(1)
	p := &proposal{
		txn:  &txn.Txn{Session: id, Op: wire.OpCreateSession, Req: &txn.CreateSession{Timeout: timeout, Password: password}},
		done: make(chan txn.Result, 1),
	}
	if err := s.propose(ctx, p); err != nil {
		return 0, nil, err
	}
	select {
	case res := <-p.done:
		return id, password, res.Err
	case <-s.stopping:
		return 0, nil, errShuttingDown
	}
}

// resumeSession reports whether c may resume session id with password: the session
// exists, has not expired, and the password matches. Like ZooKeeper, it first closes the
// session's current connection, before looking at the password.
func (s *Server) resumeSession(c *conn, id int64, password []byte) bool {
	s.detach(c, id)
	s.treeMu.RLock()
	sess := s.tree.Session(id)
	s.treeMu.RUnlock()
	if sess == nil || !bytes.Equal(sess.Password, password) {
		return false
	}
	return s.sessions.Touch(id, time.Now())
}

// globalSession reports whether session id is a session of the ensemble (in the tree).
func (s *Server) globalSession(id int64) bool {
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	return s.tree.Session(id) != nil
}

// resumeReadOnly reports whether c may resume read-only session id with password,
// closing the session's earlier connection first, as resumeSession does.
func (s *Server) resumeReadOnly(c *conn, id int64, password []byte) bool {
	s.detach(c, id)
	return s.ro.resume(id, password, time.Now())
}

// detach closes the connection session id has, if any and not c, and forgets it.
func (s *Server) detach(c *conn, id int64) {
	s.mu.Lock()
	old := s.sessionConns[id]
	if old != nil {
		delete(s.sessionConns, id)
	}
	s.mu.Unlock()
	if old != nil && old != c {
		old.close()
	}
}

// attach makes c the connection of its session, closing any earlier one: a session has
// one connection at a time (ZooKeeper's CLIENT_RECONNECT).
func (s *Server) attach(c *conn, id int64) {
	if !c.readOnly.Load() {
		s.log.keptAlive(id) // a member's leader hears of it with the member's next report
	}
	s.mu.Lock()
	old := s.sessionConns[id]
	s.sessionConns[id] = c
	s.mu.Unlock()
	if old != nil && old != c {
		old.close()
	}
}

// initialSessionID returns the first session id to hand out, laid out as ZooKeeper does:
// the server id in the high byte, the start time in ms in the next 40 bits.
func initialSessionID(serverID int64, now time.Time) int64 {
	return int64(uint64(now.UnixMilli())<<24>>8) | serverID<<56
}
