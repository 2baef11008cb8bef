// Package conformance is the differential conformance suite: scenarios drive raw ZooKeeper
// protocol sessions against a reference server (Apache ZooKeeper 3.8) and a subject server
// (paddock, or a second Apache ZooKeeper for the suite's self-check), record a transcript
// of everything each session sent and saw, normalise what legitimately differs between two
// servers (zxid values, times, session ids, passwords, the scenario's root path) and fail
// with a diff where the transcripts differ.
//
// The non-test files are the tools: Conn, a raw client on server/wire that sends any
// request with any xid or any bytes and reads frames in wire order; Scenario and Session,
// which record a transcript; Transcript, which normalises it; Diff. The scenarios are the
// _test.go files. See main_test.go for how to run the suite and choose the targets.
package conformance
