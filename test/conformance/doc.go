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

// What the reference shows where ZK-PROTOCOL.md (written for 3.9.4) says otherwise. The
// reference is Debian's zookeeper 3.8.0-11+deb12u2, which carries security backports:
//
//   - notifications carry zxid -1, never the txn's zxid;
//   - exists is not ACL-checked (it returns the stat of a node the caller cannot read), but
//     notifications are filtered by READ on the node (the CVE-2024-23944 fix is backported);
//   - a stand-alone check (opcode 13) is run as a txn: a failing one is answered with its
//     error and consumes a zxid; a passing one is never answered (NPE in the server);
//   - createTTL with a non-TTL mode and ttl < 0 kills the server (so no scenario sends it);
//   - an unknown opcode is answered with zxid -1 (not the last zxid), then the connection
//     closes; createSession (-10) gets MarshallingError, deleteContainer (20) is executed,
//     sasl (102) gets err 0 and a null token;
//   - create2 inside multi comes back as a plain create result (type 1, path only);
//     createContainer, createTTL and create with the container flag come back as type 15;
//     a TTL flag on a create inside multi fails the whole multi with MarshallingError;
//   - a multiRead answered with an error still carries the 9-byte end-of-results marker;
//   - checkWatches/removeWatches with type 4 or 5 and addWatch with an unknown mode get
//     MarshallingError; removing the data part of a persistent watch leaves the child part;
//   - exists and getData of "" are the root; "/a//b" and "/a/./b" get NoNode, not BadArguments;
//   - createContainer (opcode 19) makes a container whatever its flags say;
//   - /zookeeper/config has aversion -1;
//   - srvr prints "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC", which go-zk's
//     FLWSrvr rejects, and cons/stat list the four-letter-word connection itself.
