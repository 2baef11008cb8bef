package server_test

import (
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/test/conformance"
)

// FuzzRequest sends one arbitrary request (any opcode, any body) on a fresh session of a
// live server, then a ping. The server must answer the ping or close that connection —
// never hang it — and a bystander session must be served as before.
func FuzzRequest(f *testing.F) {
	seeds := map[wire.Op]wire.Record{
		wire.OpCreate:        &wire.CreateRequest{Path: "/f", Data: []byte("x"), ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeralSequential},
		wire.OpCreateTTL:     &wire.CreateTTLRequest{CreateRequest: wire.CreateRequest{Path: "/t", ACL: wire.OpenACLUnsafe, Flags: 5}, TTL: 100},
		wire.OpSetData:       &wire.SetDataRequest{Path: "/", Data: []byte("y"), Version: -1},
		wire.OpGetChildren2:  &wire.PathWatchRequest{Path: "/", Watch: true},
		wire.OpSetACL:        &wire.SetACLRequest{Path: "/f", ACL: []wire.ACL{{Perms: 31, Scheme: "auth"}}, Version: -1},
		wire.OpAuth:          &wire.AuthPacket{Scheme: "digest", Auth: []byte("u:p")},
		wire.OpSetWatches2:   &wire.SetWatches{V2: true, Data: []string{"/"}, PersistentRecursive: []string{"/"}},
		wire.OpAddWatch:      &wire.PathTypeRequest{Path: "/", Type: 1},
		wire.OpRemoveWatches: &wire.PathTypeRequest{Path: "/", Type: 3},
		wire.OpMulti: &wire.MultiRequest{Ops: []wire.MultiOp{
			{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/m", ACL: wire.OpenACLUnsafe}},
			{Op: wire.OpDelete, Req: &wire.PathVersionRequest{Path: "/m", Version: -1}}}},
		wire.OpMultiRead: &wire.MultiRequest{Ops: []wire.MultiOp{{Op: wire.OpGetData, Req: &wire.PathWatchRequest{Path: "/zookeeper"}}}},
		wire.OpDelete:    &wire.PathVersionRequest{Path: "/zookeeper", Version: -1},
	}
	for op, rec := range seeds {
		var e wire.Encoder
		rec.Encode(&e)
		f.Add(int32(op), e.Bytes())
	}
	f.Add(int32(wire.OpCloseSession), []byte{})
	f.Add(int32(999), []byte{1, 2, 3})

	cfg := testutil.PaddockConfig(f)
	cfg.ForceSync = false // speed: durability is not what is fuzzed
	cfg.ExtendedTypes = true
	addr := testutil.StartServer(f, cfg).Addr().String()
	bystander := dialSession(f, addr)

	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		c := dialSession(t, addr)
		if err := c.SendBody(1, wire.Op(op), body); err != nil {
			return // the server already closed the connection
		}
		c.Send(wire.XidPing, wire.OpPing, nil)
		for {
			fr, err := c.ReadFrame(5 * time.Second)
			if conformance.IsClosed(err) {
				break
			}
			if err != nil {
				t.Fatalf("op %d: the server neither answered nor closed: %v", op, err)
			}
			if fr.Header.Xid == wire.XidPing {
				break
			}
		}
		xid := bystander.NextXid()
		bystander.Send(xid, wire.OpExists, &wire.PathWatchRequest{Path: "/zookeeper"})
		for {
			fr, err := bystander.ReadFrame(5 * time.Second)
			if err != nil {
				t.Fatalf("op %d disturbed another session: %v", op, err)
			}
			if fr.Header.Xid == xid {
				if fr.Header.Err != wire.OK {
					t.Fatalf("op %d disturbed another session: exists answered %v", op, fr.Header.Err)
				}
				break
			}
		}
	})
}

func dialSession(tb testing.TB, addr string) *conformance.Conn {
	tb.Helper()
	c, err := conformance.Dial(addr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	if err := c.SendConnect(&wire.ConnectRequest{Timeout: 30000, Password: make([]byte, 16)}); err != nil {
		tb.Fatal(err)
	}
	if resp, _, err := c.ReadConnectResponse(5 * time.Second); err != nil || resp.SessionID == 0 {
		tb.Fatalf("connect: %+v %v", resp, err)
	}
	return c
}
