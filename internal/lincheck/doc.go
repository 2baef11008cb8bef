// Package lincheck records what ZooKeeper clients (github.com/go-zookeeper/zk) observe of
// a few znodes and checks the history for linearizability with porcupine
// (github.com/anishathalye/porcupine). Tests that replicate, partition and kill servers
// use it to show that nothing a client saw contradicts a single order of operations.
//
// # Model
//
// Each znode is a register holding a Value: its data and its version (Stat.Version).
// The history is partitioned by path, so each znode is checked on its own (and in
// parallel); a history is linearizable iff every znode's is. Two operations exist:
//
//	Read  Sync(path) then Get(path)     -> OK (data, version)
//	CAS   Set(path, data, version)      -> OK (new version)       state (data, old+1)
//	                                    -> BadVersion             state unchanged
//	                                    -> Indefinite             either of the two
//
// Only sync-then-read is checked: a plain ZooKeeper read may be served by a lagging
// server and is not linearizable by design. A read that failed had no effect and is not
// recorded. A CAS with version -1 applies whatever the version is, as ZooKeeper's Set.
//
// # Indefinite outcomes
//
// A CAS that got no answer from the server — connection closed, session expired, a
// timeout, any error other than ErrBadVersion — may have been applied, may be applied
// later (a write forwarded to the leader can commit after the client gave up), or never.
// The recorder keeps it with an Indefinite output and Check gives it a return time after
// every other operation, porcupine's way of saying "it never returned": the checker may
// place it anywhere after its call. The model is nondeterministic there: an indefinite
// CAS whose version matches leads to both the state where it applied and the one where
// it did not, and porcupine's power-set construction carries both until later
// operations rule one out. (A deterministic model that must guess is exponentially
// slower: on a thousand indefinite CASes among reads it timed out after 20 s where this
// one took 4 ms.)
//
// Indefinite CASes still widen the search, since each is concurrent with everything after
// its call. A real violation among a few dozen of them can take the checker a very long
// time to prove, so a test should give Check a timeout and treat Unknown as a failure to
// check, never as a pass.
//
// # Time
//
// Call and Return are nanoseconds on the Recorder's monotonic clock: Call is read just
// before the request is sent, Return just after the answer came back. Porcupine treats
// [Call, Return] as closed, so operations that share an instant are concurrent. A CAS is
// in the history from its call, as Indefinite until it returns, so a check made while a
// client is still stuck in Set stays correct.
//
// # Use
//
//	rec := lincheck.NewRecorder()
//	init := map[string]lincheck.Value{"/x": {Data: "x0", Version: 0}} // as created
//	// client goroutine i, on its own *zk.Conn c:
//	_, v, err := rec.Read(i, c, "/x")                // a failed read is not recorded
//	_, err = rec.CAS(i, c, "/x", uniqueData, v)      // recorded whatever err is
//	if lincheck.OutcomeOf(err) == lincheck.Indefinite { // connection or session trouble:
//		// reconnect if the session is gone and carry on; the checker allows both fates
//	}
//	// once every client goroutine has returned:
//	res, err := rec.Check(init, 30*time.Second)      // err: a malformed history
//	if res.Verdict != lincheck.Linearizable {        // Violation or Unknown (timed out)
//		res.WriteVisualization(filepath.Join(dir, "history.html"))
//		t.Fatal(res)
//	}
//
// Data written by each CAS should be unique, so that a read names the write it saw.
package lincheck
