package admin

import (
	"testing"
	"time"

	"github.com/paddock/paddock/server/wire"
)

func TestConnStats(t *testing.T) {
	var s ConnStats
	var c Connection
	s.Fill(&c)
	// A fresh connection prints as ZooKeeper's: lop=NA, no lcxid, lzxid=-1.
	if c != (Connection{LastCxid: -1, LastZxid: -1}) {
		t.Errorf("zero ConnStats filled %+v", c)
	}

	t0 := time.Unix(1000, 0)
	s.PacketReceived()
	s.PacketReceived()
	s.PacketSent()
	s.Responded(wire.OpGetData, 4, 7, t0, t0.Add(3*time.Millisecond))
	s.Responded(wire.OpPing, wire.XidPing, 8, t0, t0.Add(1*time.Millisecond))
	s.Responded(wire.OpCreate, 5, 9, t0, t0.Add(8*time.Millisecond))
	s.Responded(wire.OpPing, wire.XidPing, 9, t0, t0.Add(2*time.Millisecond))
	s.Fill(&c)
	want := Connection{
		Received: 2, Sent: 1, LastOp: "PING", LastCxid: 5, LastZxid: 9, LastResponse: t0.Add(2 * time.Millisecond),
		LastLatency: 2 * time.Millisecond, MinLatency: time.Millisecond, AvgLatency: 3500 * time.Microsecond,
		MaxLatency: 8 * time.Millisecond,
	}
	if c != want {
		t.Errorf("filled\n %+v\nwant\n %+v", c, want)
	}

	s.Reset()
	c = Connection{}
	s.Fill(&c)
	if c != (Connection{LastCxid: -1, LastZxid: -1}) {
		t.Errorf("after Reset filled %+v", c)
	}
}
