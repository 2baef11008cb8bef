package server

import (
	"net/netip"
	"time"

	"github.com/paddock/paddock/server/admin"
)

// The server is the admin commands' Source.
var _ admin.Source = (*Server)(nil)

// Stats implements admin.Source.
func (s *Server) Stats() admin.Stats {
	s.treeMu.RLock()
	nodes, size, eph := s.tree.NodeCount(), s.tree.DataSize(), s.tree.EphemeralCount()
	s.treeMu.RUnlock()
	conns := len(s.connList())
	st := admin.Stats{
		Zxid:            s.lastApplied.Load(),
		Nodes:           int64(nodes),
		DataSize:        size,
		Ephemerals:      int64(eph),
		Sessions:        int64(s.sessions.Len()),
		Watches:         int64(s.watches.Count()),
		Connections:     int64(conns),
		Outstanding:     s.outstanding.Load(),
		PacketsReceived: s.received.Load(),
		PacketsSent:     s.sent.Load(),
		Limits:          s.limitStats(),
		QuotaAudit:      s.quotaAuditStats(),
	}
	s.log.fillStats(&st)
	return st
}

func (s *Server) limitStats() admin.LimitStats {
	return admin.LimitStats{
		SessionlessExpired:     s.limits.sessionlessExpired.Load(),
		FramesRejected:         s.limits.framesRejected.Load(),
		LargeResponsesRejected: s.limits.largeResponses.Load(),
		ConnectionsDropped:     s.limits.connsDropped.Load(),
		ThrottleWaits:          s.limits.throttleWaits.Load(),
		ConnThrottleWaits:      s.limits.connThrottleWaits.Load(),
		TLSHandshakesFailed:    s.limits.tlsHandshakeFailed.Load(),
		QueuedBytes:            s.queued.Load(),
		ReadOnlyRefused:        s.limits.readOnlyRefused.Load(),
	}
}

// connList returns the open connections, the one asking for a four-letter word included,
// as ZooKeeper lists it (which is why go-zk's FLWCons cannot parse ZooKeeper's cons).
func (s *Server) connList() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Connections implements admin.Source.
func (s *Server) Connections() []admin.Connection {
	conns := s.connList()
	out := make([]admin.Connection, 0, len(conns))
	for _, c := range conns {
		ac := admin.Connection{Established: c.est, SessionID: c.sessionID.Load()}
		ac.Remote, _ = netip.ParseAddrPort(c.nc.RemoteAddr().String())
		ac.Timeout = time.Duration(c.timeout.Load()) * time.Millisecond
		if exp, ok := s.sessions.Expiry(ac.SessionID); ok {
			ac.Expires = exp
		} else {
			ac.Expires = c.est.Add(s.cfg.HandshakeTimeout) // closed then if it has not sent its ConnectRequest
		}
		c.mu.Lock()
		ac.Queued = int64(len(c.queue))
		c.mu.Unlock()
		c.stats.Fill(&ac)
		out = append(out, ac)
	}
	return out
}

// Sessions implements admin.Source.
func (s *Server) Sessions() []admin.Session {
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	sessions := s.tree.Sessions()
	out := make([]admin.Session, 0, len(sessions))
	for _, sess := range sessions {
		exp, ok := s.sessions.Expiry(sess.ID)
		if !ok {
			continue // expired, its close not yet applied
		}
		out = append(out, admin.Session{ID: sess.ID, Timeout: time.Duration(sess.Timeout) * time.Millisecond,
			Expires: exp, Ephemerals: s.tree.Ephemerals(sess.ID)})
	}
	return out
}

// Watches implements admin.Source.
func (s *Server) Watches() []admin.Watch {
	var out []admin.Watch
	for path, conns := range s.watches.WatchersOf() {
		for _, c := range conns {
			out = append(out, admin.Watch{SessionID: c.sessionID.Load(), Path: path})
		}
	}
	return out
}

// ResetStats implements admin.Source.
func (s *Server) ResetStats() {
	s.received.Store(0)
	s.sent.Store(0)
}

// ResetConnectionStats implements admin.Source.
func (s *Server) ResetConnectionStats() {
	for _, c := range s.connList() {
		c.stats.Reset()
	}
}
