// Package durability holds crash tests of the real paddock binary: the promise under test
// is that nothing acknowledged is ever lost. The tests build cmd/paddock once per run, start
// it as a child process on 127.0.0.1 with a data directory that outlives the process, drive
// it with go-zookeeper/zk clients, kill it with SIGKILL at a seeded random moment and start
// it again on the same directory.
//
// They are written against the binary's external behaviour only (the protocol, srvr, the
// PADDOCK_SERVER_* settings), so they hold whatever the server does inside: replaying the
// write-ahead log, loading a snapshot and the log after it, purging old files.
//
// Each writer owns a directory and keeps an exact model of it: every acknowledged write is
// in the model, with its data, version, ephemeral owner and, where a reply said, its mzxid;
// sequential names are predicted from the count of children ever created, as ZooKeeper
// numbers them. A writer has at most one request in flight, so after a crash its directory
// must be exactly the model, or the model with that one request applied in full — anything
// else is a lost acknowledged write, a phantom write, or half a multi.
//
// Run one seed again with PADDOCK_DURABILITY_SEED=<seed> (the tests print theirs) and more
// rounds with PADDOCK_DURABILITY_ROUNDS=<n>; PADDOCK_TEST_LOG=1 copies the servers' logs to
// the test log as they are checked.
package durability
