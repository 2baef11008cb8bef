package admin

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// ConnStats keeps one connection's statistics the way ZooKeeper's ServerCnxn does, so that
// cons, stat and crst print what ZooKeeper prints. The zero value is ready (and is the reset
// state); it must not be copied after first use. All methods are safe for concurrent use:
// the packet counters are atomics, the rest sits behind a mutex only this connection's
// writer and an admin snapshot ever take.
type ConnStats struct {
	received atomic.Int64
	sent     atomic.Int64

	mu sync.Mutex
	// Guarded by mu. ZooKeeper's "no value" markers (-1, "NA", Long.MAX_VALUE) are kept as
	// the zero values plus the has* flags, so the zero ConnStats is the reset state.
	lastOp   string
	lastCxid int64
	hasCxid  bool
	lastZxid int64
	hasZxid  bool
	lastResp time.Time
	lastLat  time.Duration
	minLat   time.Duration
	maxLat   time.Duration
	totalLat time.Duration
	count    int64
}

// PacketReceived counts one packet read from the client (the connect request and a
// four-letter word included, as in ZooKeeper).
func (s *ConnStats) PacketReceived() { s.received.Add(1) }

// PacketSent counts one packet written to the client (replies and notifications).
func (s *ConnStats) PacketSent() { s.sent.Add(1) }

// Responded records the reply to one request: its opcode, its xid (negative special xids
// such as pings leave the last cxid alone, as in ZooKeeper), the zxid of the reply, and when
// the request arrived and the reply was sent.
func (s *ConnStats) Responded(op wire.Op, xid int32, zxid int64, start, end time.Time) {
	lat := end.Sub(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	if xid >= 0 {
		s.lastCxid, s.hasCxid = int64(xid), true
	}
	s.lastZxid, s.hasZxid = zxid, true
	s.lastOp = op.Short()
	s.lastResp = end
	s.lastLat = lat
	if s.count == 0 || lat < s.minLat {
		s.minLat = lat
	}
	s.maxLat = max(s.maxLat, lat)
	s.totalLat += lat
	s.count++
}

// Reset zeroes the statistics (crst).
func (s *ConnStats) Reset() {
	s.received.Store(0)
	s.sent.Store(0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastOp, s.hasCxid, s.hasZxid = "", false, false
	s.lastResp = time.Time{}
	s.lastLat, s.minLat, s.maxLat, s.totalLat, s.count = 0, 0, 0, 0, 0
}

// Fill copies the statistics into the fields of c that Connection documents as ConnStats's.
func (s *ConnStats) Fill(c *Connection) {
	c.Received = s.received.Load()
	c.Sent = s.sent.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	c.LastOp = s.lastOp
	c.LastCxid, c.LastZxid = -1, -1
	if s.hasCxid {
		c.LastCxid = s.lastCxid
	}
	if s.hasZxid {
		c.LastZxid = s.lastZxid
	}
	c.LastResponse = s.lastResp
	c.LastLatency, c.MinLatency, c.MaxLatency, c.AvgLatency = s.lastLat, s.minLat, s.maxLat, 0
	if s.count > 0 {
		c.AvgLatency = s.totalLat / time.Duration(s.count)
	}
}
