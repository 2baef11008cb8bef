package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// sampleRecords returns one populated value of every record type, keyed by a name.
func sampleRecords() map[string]Record {
	stat := Stat{Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: -1, Aversion: 7,
		EphemeralOwner: 0x100000000000001, DataLength: 9, NumChildren: 10, Pzxid: 11}
	acl := []ACL{{Perms: PermAll, Scheme: "world", ID: "anyone"}, {Perms: PermRead, Scheme: "digest", ID: "u:h="}}
	return map[string]Record{
		"RequestHeader":    &RequestHeader{Xid: 7, Op: OpGetData},
		"ReplyHeader":      &ReplyHeader{Xid: 7, Zxid: 0x100000002, Err: ErrNoNode},
		"PathWatchRequest": &PathWatchRequest{Path: "/a/b", Watch: true},
		"PathRecord":       &PathRecord{Path: "/x"},
		"CreateRequest":    &CreateRequest{Path: "/a", Data: []byte("d"), ACL: acl, Flags: FlagEphemeralSequential},
		"CreateNullData":   &CreateRequest{Path: "/a", ACL: acl},
		"CreateTTLRequest": &CreateTTLRequest{CreateRequest: CreateRequest{Path: "/t", Data: []byte{}, ACL: acl, Flags: 5}, TTL: 1000},
		"PathVersion":      &PathVersionRequest{Path: "/v", Version: -1},
		"SetDataRequest":   &SetDataRequest{Path: "/s", Data: []byte("xyz"), Version: 3},
		"SetACLRequest":    &SetACLRequest{Path: "/s", ACL: acl, Version: 0},
		"PathTypeRequest":  &PathTypeRequest{Path: "/w", Type: int32(WatcherAny)},
		"AuthPacket":       &AuthPacket{Scheme: "digest", Auth: []byte("u:p")},
		"SetWatches":       &SetWatches{RelativeZxid: 9, Data: []string{"/a"}, Exist: []string{"/b", "/c"}, Child: []string{"/"}},
		"SetWatches2": &SetWatches{V2: true, RelativeZxid: 9, Data: []string{"/a"}, Exist: []string{"/b"}, Child: []string{"/"},
			Persistent: []string{"/p"}, PersistentRecursive: []string{"/r", "/q"}},
		"ReconfigRequest":  &ReconfigRequest{JoiningServers: "server.4=h:1:2", CurConfigID: -1},
		"SASLRequest":      &SASLRequest{Token: []byte{1, 2}},
		"StatResponse":     &StatResponse{Stat: stat},
		"Create2Response":  &Create2Response{Path: "/a0000000001", Stat: stat},
		"GetDataResponse":  &GetDataResponse{Data: []byte("hello"), Stat: stat},
		"GetACLResponse":   &GetACLResponse{ACL: acl, Stat: stat},
		"Children":         &ChildrenResponse{Children: []string{"a", "b"}},
		"Children2":        &ChildrenResponse{WithStat: true, Children: []string{"zookeeper"}, Stat: stat},
		"IntResponse":      &IntResponse{Value: 3},
		"WhoAmIResponse":   &WhoAmIResponse{Clients: []Identity{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: "u"}}},
		"WatcherEvent":     &WatcherEvent{Type: EventNodeChildrenChanged, State: StateSyncConnected, Path: "/p"},
		"ConnectRequest":   &ConnectRequest{Timeout: 15000, Password: make([]byte, 16)},
		"ConnectRequestRO": &ConnectRequest{Timeout: 15000, SessionID: 5, Password: make([]byte, 16), HasReadOnly: true, ReadOnly: true},
		"ConnectResponse":  &ConnectResponse{Timeout: 10000, SessionID: 1 << 56, Password: bytes.Repeat([]byte{7}, 16), HasReadOnly: true},
		"MultiHeader":      &MultiHeader{Type: OpCreate, Err: -1},
		"MultiRequest": &MultiRequest{Ops: []MultiOp{
			{Op: OpCreate, Req: &CreateRequest{Path: "/m", ACL: acl}},
			{Op: OpCreateTTL, Req: &CreateTTLRequest{CreateRequest: CreateRequest{Path: "/t", ACL: acl, Flags: 5}, TTL: 10}},
			{Op: OpCheck, Req: &PathVersionRequest{Path: "/m", Version: 0}},
			{Op: OpSetData, Req: &SetDataRequest{Path: "/m", Data: []byte("x"), Version: -1}},
			{Op: OpDelete, Req: &PathVersionRequest{Path: "/m", Version: -1}},
		}},
		"MultiReadRequest": &MultiRequest{Ops: []MultiOp{
			{Op: OpGetChildren, Req: &PathWatchRequest{Path: "/"}},
			{Op: OpGetData, Req: &PathWatchRequest{Path: "/zookeeper"}},
		}},
		"MultiResponse": &MultiResponse{Results: []MultiResult{
			{Op: OpCreate, Path: "/m"},
			{Op: OpCreate2, Path: "/c", Stat: stat},
			{Op: OpSetData, Stat: stat},
			{Op: OpDelete},
			{Op: OpCheck},
			{Op: OpGetChildren, Children: []string{"x"}},
			{Op: OpGetData, Data: []byte("d"), Stat: stat},
			{Op: OpError, Err: ErrNoNode},
		}},
	}
}

// blank returns a zero value of the same record type, carrying the V2/WithStat/HasReadOnly
// switches that select the wire layout rather than being on the wire themselves.
func blank(r Record) Record {
	switch v := r.(type) {
	case *SetWatches:
		return &SetWatches{V2: v.V2}
	case *ChildrenResponse:
		return &ChildrenResponse{WithStat: v.WithStat}
	}
	return reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record)
}

func TestRecordRoundTrip(t *testing.T) {
	for name, rec := range sampleRecords() {
		t.Run(name, func(t *testing.T) {
			var e Encoder
			rec.Encode(&e)
			got := blank(rec)
			d := NewDecoder(e.Bytes())
			got.Decode(d)
			if err := d.Err(); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if d.Remaining() != 0 {
				t.Fatalf("%d bytes left over", d.Remaining())
			}
			if !reflect.DeepEqual(rec, got) {
				t.Fatalf("round trip changed the record:\n sent %+v\n got  %+v", rec, got)
			}
		})
	}
}

func TestRecordTruncated(t *testing.T) {
	for name, rec := range sampleRecords() {
		t.Run(name, func(t *testing.T) {
			var e Encoder
			rec.Encode(&e)
			full := e.Bytes()
			for n := 0; n < len(full); n++ {
				switch rec.(type) {
				case *ConnectRequest, *ConnectResponse:
					if n == len(full)-1 && full[n] <= 1 {
						continue // the readOnly byte is optional: dropping it is a valid record
					}
				}
				d := NewDecoder(full[:n])
				blank(rec).Decode(d)
				if d.Err() == nil {
					t.Fatalf("decoding %d of %d bytes succeeded", n, len(full))
				}
			}
		})
	}
}

// Golden bytes from ZK-PROTOCOL.md §1.13.
func TestGoldenBytes(t *testing.T) {
	frame := func(r ...Record) string {
		var e Encoder
		off := e.BeginFrame()
		for _, x := range r {
			x.Encode(&e)
		}
		e.EndFrame(off)
		return hex.EncodeToString(e.Bytes())
	}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"ping request", frame(&RequestHeader{Xid: XidPing, Op: OpPing}), "00000008fffffffe0000000b"},
		{"ping reply", frame(&ReplyHeader{Xid: XidPing, Zxid: 0x1234}), "00000010fffffffe000000000000123400000000"},
		{"closeSession", frame(&RequestHeader{Xid: 3, Op: OpCloseSession}), "0000000800000003fffffff5"},
		{"go-zk ConnectRequest", frame(&ConnectRequest{Timeout: 15000, Password: make([]byte, 16)}),
			"0000002c" + "00000000" + "0000000000000000" + "00003a98" + "0000000000000000" + "00000010" + strings.Repeat("00", 16)},
		{"java ConnectRequest", frame(&ConnectRequest{Timeout: 15000, Password: make([]byte, 16), HasReadOnly: true}),
			"0000002d" + "00000000" + "0000000000000000" + "00003a98" + "0000000000000000" + "00000010" + strings.Repeat("00", 16) + "00"},
		{"expired ConnectResponse", frame(&ConnectResponse{Password: make([]byte, 16)}),
			"00000024" + "00000000" + "00000000" + "0000000000000000" + "00000010" + strings.Repeat("00", 16)},
		{"notification", frame(&ReplyHeader{Xid: XidNotification, Zxid: -1}, &WatcherEvent{Type: EventNodeDeleted, State: StateSyncConnected, Path: "/a"}),
			"0000001e" + "ffffffff" + "ffffffffffffffff" + "00000000" + "00000002" + "00000003" + "00000002" + "2f61"},
		{"multi end", frame(&MultiResponse{}), "00000009" + "ffffffff" + "01" + "ffffffff"},
		{"multi error entry", frame(&MultiResponse{Results: []MultiResult{{Op: OpError, Err: ErrNodeExists}}}),
			"00000016" + "ffffffff" + "00" + "ffffff92" + "ffffff92" + "ffffffff01ffffffff"},
		{"null data", frame(&GetDataResponse{}), "00000048ffffffff" + strings.Repeat("00", 68)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got  %s\n want %s", tt.name, tt.got, tt.want)
		}
	}
}

func TestDecoderRejectsBadLengths(t *testing.T) {
	tests := []struct {
		name string
		in   string
		read func(d *Decoder)
	}{
		{"negative string", "fffffffe", func(d *Decoder) { _ = d.String() }},
		{"string past end", "00000005616263", func(d *Decoder) { _ = d.String() }},
		{"huge buffer", "7fffffff00", func(d *Decoder) { d.Buffer() }},
		{"huge vector", "7fffffff", func(d *Decoder) { d.Strings() }},
		{"negative vector", "fffffff0", func(d *Decoder) { d.Strings() }},
		{"short long", "000000", func(d *Decoder) { d.Long() }},
	}
	for _, tt := range tests {
		b, _ := hex.DecodeString(tt.in)
		d := NewDecoder(b)
		tt.read(d)
		if d.Err() == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func TestNullsFromKazoo(t *testing.T) {
	// kazoo writes empty strings as null (-1); they must read as "".
	b, _ := hex.DecodeString("00000000" + "ffffffff" + "ffffffff")
	var a AuthPacket
	d := NewDecoder(b)
	a.Decode(d)
	if d.Err() != nil || a.Scheme != "" || a.Auth != nil {
		t.Fatalf("got %+v, %v", a, d.Err())
	}
}

func TestMultiRejectsForeignOp(t *testing.T) {
	var e Encoder
	(&MultiHeader{Type: OpSync, Err: -1}).Encode(&e)
	(&PathRecord{Path: "/"}).Encode(&e)
	_, err := DecodeRequest(OpMulti, e.Bytes())
	if !errors.Is(err, ErrBadMultiOp) {
		t.Fatalf("err = %v, want ErrBadMultiOp", err)
	}
}

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		want    string
		wantErr error
	}{
		{"ok", "00000002abcd", 10, "abcd", nil},
		{"empty", "00000000", 10, "", nil},
		{"too large", "0000000b", 10, "", ErrFrameTooLarge},
		{"negative", "ffffffff", 10, "", ErrFrameTooLarge},
		{"short body", "00000004ab", 10, "", nil},
	}
	for _, tt := range tests {
		b, _ := hex.DecodeString(tt.in)
		got, err := ReadFrame(bytes.NewReader(b), tt.max, nil)
		switch {
		case tt.name == "short body":
			if err == nil {
				t.Errorf("%s: no error", tt.name)
			}
		case !errors.Is(err, tt.wantErr) && err != tt.wantErr:
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.wantErr)
		case err == nil && hex.EncodeToString(got) != tt.want:
			t.Errorf("%s: got %x", tt.name, got)
		}
	}
}

func TestCodeAndOpNames(t *testing.T) {
	if ErrNoNode.Error() != "zk: no node" || Code(-999).Error() != "zk: error code -999" {
		t.Fatalf("code names: %q %q", ErrNoNode.Error(), Code(-999).Error())
	}
	if OpGetData.String() != "getData" || OpGetData.Short() != "GETD" || Op(10).String() != "op(10)" {
		t.Fatal("op names")
	}
	for op := Op(-20); op < 200; op++ {
		rec, ok := NewRequest(op)
		if ok != (rec != nil) {
			t.Fatalf("NewRequest(%v): ok=%v rec=%v", op, ok, rec)
		}
		if ok && op.String() == "op("+strings.TrimPrefix(op.String(), "op(") {
			t.Fatalf("request op %d has no name", op)
		}
	}
}

// Grow leaves room for exactly what is asked where there is none, keeps what was
// encoded, and allocates nothing where there is room.
func TestEncoderGrow(t *testing.T) {
	for _, tc := range []struct{ have, spare, n int }{{0, 0, 0}, {0, 0, 1}, {5, 0, 100}, {5, 10, 10}, {5, 10, 11}, {300, 0, 1 << 20}} {
		e := NewEncoder(make([]byte, 0, tc.have+tc.spare))
		e.Raw(bytes.Repeat([]byte{7}, tc.have))
		before := cap(e.Bytes())
		e.Grow(tc.n)
		switch {
		case tc.n <= tc.spare && cap(e.Bytes()) != before:
			t.Errorf("%+v: grew from %d to %d with room enough", tc, before, cap(e.Bytes()))
		case tc.n > tc.spare && cap(e.Bytes()) != tc.have+tc.n:
			t.Errorf("%+v: capacity %d, want exactly %d", tc, cap(e.Bytes()), tc.have+tc.n)
		case !bytes.Equal(e.Bytes(), bytes.Repeat([]byte{7}, tc.have)):
			t.Errorf("%+v: the encoded bytes changed", tc)
		}
	}
}
