package server_test

import (
	"fmt"
	"testing"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
)

// benchEnsemble runs op on a 3-member in-process ensemble with fsync on: 16 sessions
// spread over the members, 4 requests in flight each, so every member proposes
// batches and the leader orders them. It measures the replicated write path (batching,
// Raft, the member's log and its fdatasync) apart from process and network costs.
func benchEnsemble(b *testing.B, op wire.Op, setup func(c *rawClient, s int), req func(s, i int) wire.Record) {
	e := testutil.StartEnsemble(b, 3, 0, func(_ int, c *server.Config) {
		c.ForceSync = true
		c.MaxClientCnxns = 0
		c.PreAllocSize = 64 << 20
		c.SnapCount = 1_000_000
	})
	runSessions(b, e.Addrs(), op, setup, req)
}

func BenchmarkEnsembleSet(b *testing.B) {
	data := make([]byte, 100)
	benchEnsemble(b, wire.OpSetData,
		func(c *rawClient, s int) {
			c.run(b, 1, 1, wire.OpCreate, func(int) wire.Record {
				return &wire.CreateRequest{Path: fmt.Sprintf("/s%d", s), Data: data, ACL: wire.OpenACLUnsafe}
			})
		},
		func(s, i int) wire.Record {
			return &wire.SetDataRequest{Path: fmt.Sprintf("/s%d", s), Data: data, Version: -1}
		})
}

func BenchmarkEnsembleCreate(b *testing.B) {
	data := make([]byte, 100)
	benchEnsemble(b, wire.OpCreate, nil,
		func(s, i int) wire.Record {
			return &wire.CreateRequest{Path: fmt.Sprintf("/c-%d-%d", s, i), Data: data, ACL: wire.OpenACLUnsafe}
		})
}
