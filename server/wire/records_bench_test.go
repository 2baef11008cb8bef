package wire

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// The codec's cost per request: the server decodes a request and encodes its reply for
// each; the frame reader runs once per request. Encoders are reused, as the server's are.

var benchStat = Stat{Czxid: 0x100000002, Mzxid: 0x100000009, Ctime: 1700000000000, Mtime: 1700000000123,
	Version: 3, DataLength: 100, Pzxid: 0x100000002}

const benchPath = "/paddock-bench/get-xyz/123"

// encodeRequest encodes a request frame (length, header, body) into e.
func encodeRequest(e *Encoder, xid int32, op Op, rec Record) {
	off := e.BeginFrame()
	(&RequestHeader{Xid: xid, Op: op}).Encode(e)
	rec.Encode(e)
	e.EndFrame(off)
}

// encodeReply encodes a reply frame (length, header, body) into e.
func encodeReply(e *Encoder, xid int32, rec Record) {
	off := e.BeginFrame()
	(&ReplyHeader{Xid: xid, Zxid: 0x100000009}).Encode(e)
	rec.Encode(e)
	e.EndFrame(off)
}

// body returns rec's encoding without a frame or header.
func body(rec Record) []byte {
	e := NewEncoder(nil)
	rec.Encode(e)
	return e.Bytes()
}

func benchEncode(b *testing.B, encode func(e *Encoder)) {
	e := NewEncoder(make([]byte, 0, 4096))
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		encode(e)
	}
	b.SetBytes(int64(e.Len()))
}

func benchDecode(b *testing.B, op Op, data []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodeRequest(op, data); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDecodeInto(b *testing.B, rec Record, data []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		d := NewDecoder(data)
		rec.Decode(d)
		if d.Err() != nil {
			b.Fatal(d.Err())
		}
	}
}

func BenchmarkGetDataRequestEncode(b *testing.B) {
	req := &PathWatchRequest{Path: benchPath}
	benchEncode(b, func(e *Encoder) { encodeRequest(e, 7, OpGetData, req) })
}

func BenchmarkGetDataRequestDecode(b *testing.B) {
	benchDecode(b, OpGetData, body(&PathWatchRequest{Path: benchPath, Watch: true}))
}

func BenchmarkGetDataResponseEncode(b *testing.B) {
	resp := &GetDataResponse{Data: make([]byte, 100), Stat: benchStat}
	benchEncode(b, func(e *Encoder) { encodeReply(e, 7, resp) })
}

func BenchmarkGetDataResponseDecode(b *testing.B) {
	benchDecodeInto(b, &GetDataResponse{}, body(&GetDataResponse{Data: make([]byte, 100), Stat: benchStat}))
}

func benchCreate() *CreateRequest {
	return &CreateRequest{Path: benchPath, Data: make([]byte, 100), ACL: OpenACLUnsafe, Flags: FlagPersistent}
}

func BenchmarkCreateRequestEncode(b *testing.B) {
	req := benchCreate()
	benchEncode(b, func(e *Encoder) { encodeRequest(e, 7, OpCreate, req) })
}

func BenchmarkCreateRequestDecode(b *testing.B) {
	benchDecode(b, OpCreate, body(benchCreate()))
}

func BenchmarkCreateResponseEncode(b *testing.B) {
	resp := &PathRecord{Path: benchPath}
	benchEncode(b, func(e *Encoder) { encodeReply(e, 7, resp) })
}

// benchMulti is a typical transaction: create a node, update another, check a third and
// delete a fourth.
func benchMulti() (*MultiRequest, *MultiResponse) {
	req := &MultiRequest{Ops: []MultiOp{
		{Op: OpCreate, Req: benchCreate()},
		{Op: OpSetData, Req: &SetDataRequest{Path: "/paddock-bench/set/1", Data: make([]byte, 100), Version: 3}},
		{Op: OpCheck, Req: &PathVersionRequest{Path: "/paddock-bench/lock", Version: 7}},
		{Op: OpDelete, Req: &PathVersionRequest{Path: "/paddock-bench/old/9", Version: -1}},
	}}
	resp := &MultiResponse{Results: []MultiResult{
		{Op: OpCreate, Path: benchPath},
		{Op: OpSetData, Stat: benchStat},
		{Op: OpCheck},
		{Op: OpDelete},
	}}
	return req, resp
}

func BenchmarkMultiRequestEncode(b *testing.B) {
	req, _ := benchMulti()
	benchEncode(b, func(e *Encoder) { encodeRequest(e, 7, OpMulti, req) })
}

func BenchmarkMultiRequestDecode(b *testing.B) {
	req, _ := benchMulti()
	benchDecode(b, OpMulti, body(req))
}

func BenchmarkMultiResponseEncode(b *testing.B) {
	_, resp := benchMulti()
	benchEncode(b, func(e *Encoder) { encodeReply(e, 7, resp) })
}

func BenchmarkMultiResponseDecode(b *testing.B) {
	_, resp := benchMulti()
	benchDecodeInto(b, &MultiResponse{}, body(resp))
}

// BenchmarkReadFrame reads getData request frames one after another through a bufio.Reader,
// reusing the body buffer, as a connection's read loop does.
func BenchmarkReadFrame(b *testing.B) {
	e := NewEncoder(nil)
	for i := range 1024 {
		encodeRequest(e, int32(i), OpGetData, &PathWatchRequest{Path: benchPath})
	}
	stream := e.Bytes()
	frameLen := len(stream) / 1024
	src := bytes.NewReader(stream)
	br := bufio.NewReaderSize(src, 64<<10)
	var buf []byte
	b.ReportAllocs()
	b.SetBytes(int64(frameLen))
	for b.Loop() {
		body, err := ReadFrame(br, DefaultMaxBuffer, buf)
		if err == io.EOF {
			src.Reset(stream)
			br.Reset(src)
			body, err = ReadFrame(br, DefaultMaxBuffer, buf)
		}
		if err != nil {
			b.Fatal(err)
		}
		buf = body[:0]
	}
}
