package wire

import (
	"bytes"
	"reflect"
	"testing"
)

// requestSeeds maps each request opcode to a sample body, seeding the fuzzers.
func requestSeeds() map[Op]Record {
	s := sampleRecords()
	return map[Op]Record{
		OpCreate: s["CreateRequest"], OpCreate2: s["CreateNullData"], OpCreateContainer: s["CreateRequest"],
		OpCreateTTL: s["CreateTTLRequest"], OpDelete: s["PathVersion"], OpCheck: s["PathVersion"],
		OpExists: s["PathWatchRequest"], OpGetData: s["PathWatchRequest"], OpGetChildren: s["PathWatchRequest"],
		OpGetChildren2: s["PathWatchRequest"], OpSetData: s["SetDataRequest"], OpGetACL: s["PathRecord"],
		OpSync: s["PathRecord"], OpGetEphemerals: s["PathRecord"], OpGetAllChildrenNumber: s["PathRecord"],
		OpSetACL: s["SetACLRequest"], OpMulti: s["MultiRequest"], OpMultiRead: s["MultiReadRequest"],
		OpCheckWatches: s["PathTypeRequest"], OpRemoveWatches: s["PathTypeRequest"], OpAddWatch: s["PathTypeRequest"],
		OpReconfig: s["ReconfigRequest"], OpAuth: s["AuthPacket"], OpSetWatches: s["SetWatches"],
		OpSetWatches2: s["SetWatches2"], OpSASL: s["SASLRequest"], OpPing: Empty{}, OpCloseSession: Empty{}, OpWhoAmI: Empty{},
	}
}

// FuzzDecodeRequest feeds arbitrary bodies to every request decoder. A decoder must never
// panic, and what it accepts must survive an encode/decode round trip unchanged.
func FuzzDecodeRequest(f *testing.F) {
	for op, rec := range requestSeeds() {
		var e Encoder
		rec.Encode(&e)
		f.Add(int32(op), e.Bytes())
	}
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		rec, err := DecodeRequest(Op(op), body)
		if err != nil {
			return
		}
		var e Encoder
		rec.Encode(&e)
		again, err := DecodeRequest(Op(op), e.Bytes())
		if err != nil {
			t.Fatalf("re-decoding %T: %v", rec, err)
		}
		if !reflect.DeepEqual(normalize(rec), normalize(again)) {
			t.Fatalf("round trip changed %T:\n%+v\n%+v", rec, rec, again)
		}
	})
}

// normalize maps the values that legitimately change in a round trip (a null string
// vector read as nil becomes an empty one) to one form.
func normalize(r Record) Record {
	if m, ok := r.(*MultiRequest); ok && len(m.Ops) == 0 {
		return &MultiRequest{}
	}
	return r
}

// FuzzDecodeConnect covers the handshake record, which has no header.
func FuzzDecodeConnect(f *testing.F) {
	for _, name := range []string{"ConnectRequest", "ConnectRequestRO"} {
		var e Encoder
		sampleRecords()[name].Encode(&e)
		f.Add(e.Bytes())
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var r ConnectRequest
		d := NewDecoder(body)
		r.Decode(d)
		if d.Err() != nil {
			return
		}
		var e Encoder
		r.Encode(&e)
		var again ConnectRequest
		d = NewDecoder(e.Bytes())
		again.Decode(d)
		if d.Err() != nil || !reflect.DeepEqual(r, again) {
			t.Fatalf("round trip: %+v -> %+v (%v)", r, again, d.Err())
		}
	})
}

// FuzzReadFrame checks the frame reader never returns more than the limit or panics.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 'a', 'b'}, 16)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, 16)
	f.Add([]byte{0, 0, 0, 0}, 0)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		body, err := ReadFrame(bytes.NewReader(in), max, nil)
		if err != nil {
			return
		}
		if len(body) > max || len(body) != len(in)-4 && !bytes.HasPrefix(in[4:], body) {
			t.Fatalf("frame of %d bytes from %d input bytes, max %d", len(body), len(in), max)
		}
	})
}
