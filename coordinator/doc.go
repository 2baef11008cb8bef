// Package coordinator is the client side of paddock: a kept ZooKeeper session and the
// recipes applications build on it, over github.com/go-zookeeper/zk. Everything in it is
// a plain ZooKeeper client, so it works against paddock and Apache ZooKeeper alike.
//
// A Session (Connect) survives disconnections and expiry: the client reconnects by itself,
// and after an expiry the Session's new session re-creates the ephemeral nodes kept
// through it (KeepEphemeral) and tells subscribers (Subscribe), which re-arm their
// watches. Recipes follow Curator's rules for the session's state: StateSuspended means
// "might no longer hold it", StateLost means "certainly lost".
//
//	s, err := coordinator.Connect(ctx, coordinator.Config{
//		Servers: []string{"127.0.0.1:2181"}, SessionTimeout: 15 * time.Second})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	reg, err := s.KeepEphemeral(ctx, "/workers/w1", []byte(`{"addr":"10.0.0.7:7000"}`))
package coordinator
