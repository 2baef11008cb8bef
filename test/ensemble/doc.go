// Package ensemble tests a replicated paddock ensemble the way ZooKeeper users run one:
// three `paddock server` processes (the binary under test, built once per run, with the
// race detector when the tests have it) configured by zoo.cfg server.N lines on
// 127.0.0.1, driven by go-zookeeper/zk clients that know every member.
//
// The faults are the ones an ensemble must outlive:
//
//   - SIGKILL of the leader, or of the member a client is connected to; the member is
//     started again on its ports and its data directory;
//   - network faults between members: with clusterOptions.proxies every directed peer
//     link has its own faultproxy.Proxy (member i's zoo.cfg names proxies[i][j] as
//     member j's peer address), which the tests partition, delay or turn into a black
//     hole. Raft's transport opens one connection per direction, so proxies[i][j]
//     carries exactly the messages i sends to j.
//
// The tests assert what clients can see: no acknowledged write lost, a new leader
// within seconds, sessions and watches that survive failovers, members cut off from a
// quorum refusing service, every member converging once a fault heals and, in
// TestLinearizability, that sync-reads and CASes made under a nemesis form a
// linearizable history (internal/lincheck). TestTakenAdminPort starts an ensemble whose
// zoo.cfg files all name one admin port another process holds: every member serves.
//
// Every member's log is checked when its test ends for race reports, panics, Go runtime
// errors and error records (testutil.Child.LogProblems), and every process must have
// ended by the test's SIGKILL, not on its own.
//
//	PADDOCK_TEST_LOG=1            copy the members' logs into the test log
//	PADDOCK_ARTIFACTS=DIR         keep porcupine's drawing of a history that failed the check
//	PADDOCK_ENSEMBLE_SEED=N       replay the nemesis's random choices of TestLinearizability
package ensemble
