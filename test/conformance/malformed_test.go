package conformance

import (
	"encoding/binary"

	"github.com/paddock/paddock/server/wire"
)

// scenarioMalformed covers what a server does with bad input: a malformed record
// (MarshallingError, connection stays), an unknown or internal opcode (Unimplemented, then
// close), a stand-alone check, frames over jute.maxbuffer or with a negative length (close,
// no reply), a frame of exactly jute.maxbuffer (accepted), and reconfig on a standalone server.
func scenarioMalformed(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s1.create(sc.Root, []byte("r"), 0)
	truncatedPath := binary.BigEndian.AppendUint32(nil, 100) // a 100-byte path, 3 bytes given
	truncatedPath = append(truncatedPath, "/ab"...)
	for _, op := range []wire.Op{wire.OpGetData, wire.OpExists, wire.OpGetChildren2, wire.OpSync, wire.OpGetACL} {
		s1.SendBody(s1.Conn().NextXid(), op, truncatedPath, "body=truncated path")
		s1.Read()
	}
	for _, op := range []wire.Op{wire.OpCreate, wire.OpSetData, wire.OpDelete, wire.OpMulti, wire.OpSetACL} {
		s1.SendBody(s1.Conn().NextXid(), op, truncatedPath, "body=truncated path")
		s1.Read()
	}
	s1.SendBody(s1.Conn().NextXid(), wire.OpGetData, nil, "body=empty")
	s1.Read()
	s1.SendBody(s1.Conn().NextXid(), wire.OpCreate, binary.BigEndian.AppendUint32(nil, 0xfffffffe), "body=path length -2")
	s1.Read()
	sc.Note("the connection is still usable")
	s1.getData(sc.Root, false)

	sc.Note("trailing bytes after a record are ignored")
	e := wire.NewEncoder(nil)
	(&wire.PathWatchRequest{Path: sc.Root}).Encode(e)
	s1.SendBody(s1.Conn().NextXid(), wire.OpGetData, append(e.Bytes(), 1, 2, 3), "path=/ROOT watch=false +3 bytes")
	s1.Read()

	// A stand-alone check (outside multi): ZooKeeper 3.8.0 runs it as a txn (consuming a
	// zxid) and answers a failed check with its error. A successful one gets no reply at all
	// (FinalRequestProcessor serialises a null stat: NPE, "Destruction averted"), which no
	// server should copy, so it is not sent here; 3.8.5+/3.9.3+ answer -6 and close instead
	// (ZOOKEEPER-2623).
	sc.Note("stand-alone check: failures are answered")
	s1.Call(wire.OpCheck, &wire.PathVersionRequest{Path: sc.Root, Version: 5})
	s1.Call(wire.OpCheck, &wire.PathVersionRequest{Path: sc.Path("missing"), Version: -1})
	s1.Call(wire.OpCheck, &wire.PathVersionRequest{Path: "bad", Version: -1})

	sc.Note("reconfig on a standalone server without reconfigEnabled")
	s1.Call(wire.OpReconfig, &wire.ReconfigRequest{NewMembers: "server.1=127.0.0.1:2888:3888;2181", CurConfigID: -1})
	s1.Barrier()

	for _, c := range []struct {
		label string
		op    wire.Op
		rec   wire.Record
	}{
		{"op10", 10, nil},
		{"op999", 999, nil},
		{"opneg", -99, nil},
		{"createSession", wire.OpCreateSession, nil},
		{"deleteContainer", wire.OpDeleteContainer, &wire.PathRecord{Path: sc.Root}},
		{"sasl", wire.OpSASL, &wire.SASLRequest{Token: []byte("x")}},
	} {
		// After Unimplemented the server closes the connection; a request sent after the
		// reply would race with the close, so none is.
		s := sc.Connect(c.label, ConnectOptions{})
		if f := s.Call(c.op, c.rec); f != nil && f.Header.Err == wire.ErrUnimplemented {
			s.ExpectClosed()
			continue
		}
		s.getData(sc.Root, false)
		s.Close()
	}

	sc.Note("frames over jute.maxbuffer, or with a negative length, close the connection unanswered")
	big := sc.Connect("big", ConnectOptions{})
	big.WriteRaw(binary.BigEndian.AppendUint32(nil, 0xfffff+1), "frame length 0x100000")
	big.ExpectClosed()
	neg := sc.Connect("neg", ConnectOptions{})
	neg.WriteRaw(binary.BigEndian.AppendUint32(nil, 0xffffffff), "frame length -1")
	neg.ExpectClosed()
	sc.Note("a frame of exactly jute.maxbuffer is accepted")
	max := sc.Connect("max", ConnectOptions{})
	path := sc.Path("big")
	// header 8 + path (4+len) + data (4+n) + version 4 = 0xfffff
	n := 0xfffff - 8 - (4 + len(path)) - 4 - 4
	max.create(path, nil, 0)
	max.setData(path, make([]byte, n), -1)
	max.exists(path, false)
	max.delete(path, -1)
	max.Close()

	sc.Note("a first frame that is not a ConnectRequest")
	raw := sc.Dial("raw")
	raw.WriteRaw([]byte{0, 0, 0, 4, 0, 0, 0, 0}, "4-byte frame")
	raw.ExpectClosed()
	s1.Close()
}
