package server_test

import (
	"fmt"
	"sync"
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
	const sessions = 16
	e := testutil.StartEnsemble(b, 3, 0, func(_ int, c *server.Config) {
		c.ForceSync = true
		c.MaxClientCnxns = 0
		c.PreAllocSize = 64 << 20
		c.SnapCount = 1_000_000
	})
	addrs := e.Addrs()
	clients := make([]*rawClient, sessions)
	for s := range clients {
		clients[s] = dialRaw(b, addrs[s%len(addrs)])
		if setup != nil {
			setup(clients[s], s)
		}
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/sessions + 1
	for s, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(b, per, 4, op, func(i int) wire.Record { return req(s, i) })
		}()
	}
	wg.Wait()
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
