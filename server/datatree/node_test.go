package datatree

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/paddock/paddock/server/wire"
)

// TestNodeRecordRoundTrip: every stat field, the data (null, empty, inline, beside the
// record) and the ACL come back from a record as they went in, extremes included.
func TestNodeRecordRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick64 := func() int64 {
		switch r.IntN(5) {
		case 0:
			return 0
		case 1:
			return math.MinInt64
		case 2:
			return math.MaxInt64
		case 3:
			return -r.Int64()
		}
		return r.Int64()
	}
	pick32 := func() int32 { return int32(pick64()) }
	acls := []*nodeRef{nil, openACL, readACL, {list: []wire.ACL{{Perms: wire.PermRead, Scheme: "digest", ID: "u:h"}}}}
	for i := range 20000 {
		st := stat{czxid: pick64(), ctime: pick64(), owner: pick64(), version: pick32(), aversion: pick32(),
			childCreates: pick32(), numChildren: pick32()}
		st.mzxid, st.pzxid, st.mtime = st.czxid, st.czxid, st.ctime
		if r.IntN(2) == 0 {
			st.mzxid, st.pzxid, st.mtime = pick64(), pick64(), pick64()
		}
		var data []byte
		switch r.IntN(4) {
		case 1:
			data = []byte{}
		case 2:
			data = bytes.Repeat([]byte{byte(i)}, r.IntN(inlineDataMax+1))
		case 3:
			data = bytes.Repeat([]byte{byte(i)}, inlineDataMax+1+r.IntN(2000))
		}
		path := "/" + strings.Repeat("p", 1+r.IntN(40))
		ref := acls[r.IntN(len(acls))]
		n := newNode(path, data, &st, ref)
		got, _, _ := n.decode()
		if got != st || n.Path() != path || !bytes.Equal(n.Data(), data) || (n.Data() == nil) != (data == nil) ||
			len(n.ACL()) != len(ref.acl()) || n.Stat().DataLength != int32(len(data)) {
			t.Fatalf("case %d: stat %+v data %d bytes (nil %v) → %+v, path %q, %d bytes (nil %v)",
				i, st, len(data), data == nil, got, n.Path(), len(n.Data()), n.Data() == nil)
		}
		if _, _, at := n.decode(); len(data) > inlineDataMax && (n.ref.aclRef() != ref || at != len(n.rec)) {
			t.Fatalf("case %d: %d bytes of data: %d of them in the record, ACL reference %p for %p", i, len(data), len(n.rec)-at, n.ref.aclRef(), ref)
		}
	}
}

// TestChildCreateUnderBigParent: a child's create changes its parent's counters; a
// parent with a megabyte of data keeps sharing that data, not copying it.
func TestChildCreateUnderBigParent(t *testing.T) {
	tr := New()
	big := bytes.Repeat([]byte("x"), 1<<20)
	tr.Create("/big", big, nil, 0, 1, 1)
	before := tr.Get("/big")
	tr.Create("/big/c", nil, nil, 0, 2, 2)
	after := tr.Get("/big")
	if &after.Data()[0] != &before.Data()[0] || after.NumChildren() != 1 || after.Pzxid() != 2 || len(after.rec) > 32 {
		t.Fatalf("parent after a child create: %d children, pzxid %d, record %d bytes, data shared %v",
			after.NumChildren(), after.Pzxid(), len(after.rec), &after.Data()[0] == &before.Data()[0])
	}
	if tr.SetData("/big", []byte("small"), 3, 3); string(tr.Get("/big").Data()) != "small" || tr.Get("/big").ref.data != nil {
		t.Fatalf("data back to small: %q, own reference %v", tr.Get("/big").Data(), tr.Get("/big").ref.data != nil)
	}
}

// TestGetPathWithNUL: no node has a NUL in its path; a lookup of one finds nothing,
// not the node named by the part before the NUL.
func TestGetPathWithNUL(t *testing.T) {
	tr := New()
	tr.Create("/a", nil, nil, 0, 1, 1)
	if n := tr.Get("/a\x00b"); n.Exists() {
		t.Fatalf("Get(\"/a\\x00b\") = %q", n.Path())
	}
}
