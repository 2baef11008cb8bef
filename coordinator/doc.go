// Package coordinator is the client side of paddock: a kept ZooKeeper session and the
// recipes applications build on it, over github.com/go-zookeeper/zk. Everything in it is
// a plain ZooKeeper client, so it works against paddock and Apache ZooKeeper alike; the
// tests run the core recipes against both.
//
// # Session
//
// A Session (Connect) survives disconnections and expiry: the client reconnects by
// itself and keeps its watches while the session lives; after an expiry the Session's
// new session re-creates the ephemeral nodes kept through it (KeepEphemeral) and tells
// subscribers (Subscribe), which re-arm their watches and re-contest what they held.
// States follow Curator: StateSuspended means "might no longer hold it", StateLost
// "certainly lost" — the servers said the session expired, or the client was cut off
// for the whole timeout the server granted.
//
//	s, err := coordinator.Connect(ctx, coordinator.Config{
//		Servers: []string{"127.0.0.1:2181"}, SessionTimeout: 15 * time.Second})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	reg, err := s.KeepEphemeral(ctx, "/workers/w1", []byte(`{"addr":"10.0.0.7:7000"}`))
//
// # Recipes
//
// Each recipe's type documents its contract and has an example:
//
//   - Election (an ephemeral node at a fixed path, the /master pattern) and
//     SequentialElection (ephemeral-sequential candidates, each watching its
//     predecessor); Campaign returns a Hold whose Lost channel closes at once when
//     leadership may be lost.
//   - Lock and RWLock: sequential ephemerals, each waiter watching one node, no herd;
//     Acquire returns a Hold.
//   - Barrier and DoubleBarrier (enter and leave with a threshold).
//   - Queue: FIFO over sequential nodes; each item taken by exactly one consumer.
//   - Counter: the versioned compare-and-set loop.
//   - ConfigNode (a watched node) and ConfigSet (several nodes behind a ready flag:
//     readers never see a half-written configuration).
//   - JoinGroup / Members / WatchMembers (group membership), Registry (a naming
//     service), NodeCache and TreeCache (a node or a subtree kept current in memory).
//
// # Node layouts
//
//	<lock dir>/_c_<32 hex>-lock-<seq>        Lock (RWLock: read-<seq>, write-<seq>), ephemeral-sequential
//	<election dir>/_c_<32 hex>-candidate-<seq> SequentialElection candidate, ephemeral-sequential
//	<election path>                          Election: the leader's ephemeral node, its data
//	<barrier dir>/<name>, <barrier dir>/ready DoubleBarrier participants (ephemeral) and the gate
//	<queue dir>/q-<seq>                      Queue item, persistent-sequential
//	<counter path>                           Counter, the value in decimal ASCII
//	<config dir>/<key>, <config dir>/ready   ConfigSet values and the ready flag
//	<group dir>/m-<16 hex>-<seq>             group member, ephemeral-sequential
//	<registry root>/<service>/<addr>         Registry endpoint, ephemeral, its metadata
//
// The random part of the sequential names lets a participant whose create reply was
// lost with the connection find its own node again (Curator's protected mode).
//
// # Calls and contexts
//
// Anything that blocks takes a context. The client library's calls cannot be cancelled,
// so a context is checked between calls and while waiting on watches: a single call
// may outlast it by up to about a second while the client is disconnected.
package coordinator
