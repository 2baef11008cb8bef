// Package wire is the ZooKeeper client protocol codec: opcodes, error codes, the jute
// records of zookeeper.jute, and the length-prefixed frame reader. It does no I/O beyond
// reading from an io.Reader and starts no goroutines.
//
// Every message in either direction is one frame:
//
//	+----------------+----------------------------------+
//	| int32 len (BE) | len bytes of payload             |
//	+----------------+----------------------------------+
//
// The first frame a client sends is a ConnectRequest and the first the server sends is a
// ConnectResponse, neither with a header. After that:
//
//	request:      RequestHeader{int xid; int type}          + request record
//	reply:        ReplyHeader{int xid; long zxid; int err}  + response record (only if err == 0)
//	notification: ReplyHeader{xid -1, zxid, 0}              + WatcherEvent{int type; int state; ustring path}
//
// jute primitives are big-endian: int (4 bytes), long (8), boolean (1 byte), buffer and
// ustring (int32 length, -1 for null, then the bytes), vector (int32 count, -1 for null,
// then the items). Records are their fields in order, with no tags and no padding.
//
// A multi request is a list of MultiHeader{int type; boolean done; int err} + op record,
// ended by the header {-1, true, -1}; its response has the same shape with results.
//
// Decoders never trust a length: every buffer, string and vector length is checked against
// the bytes that remain, so a hostile frame can cost at most its own size in memory.
package wire
