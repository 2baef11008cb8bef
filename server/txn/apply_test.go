package txn

import (
	"errors"
	"reflect"
	"testing"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

const sess = int64(0x0100000000000001)

// fixture applies txns to a fresh tree with zxids 1, 2, 3, ... and time = 1000 * zxid.
type fixture struct {
	t    *testing.T
	tree *datatree.Tree
	zxid int64
	opts Options
	ids  []wire.Identity
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, tree: datatree.New(), opts: Options{ExtendedTypes: true}}
	f.ids = []wire.Identity{{Scheme: "ip", ID: "127.0.0.1"}}
	f.do(sess, wire.OpCreateSession, &CreateSession{Timeout: 30000, Password: make([]byte, 16)})
	return f
}

func (f *fixture) do(session int64, op wire.Op, req wire.Record) Result {
	f.t.Helper()
	f.zxid++
	x := &Txn{Zxid: f.zxid, Time: 1000 * f.zxid, Session: session, Op: op, Ids: f.ids, Req: req}
	// Every txn goes through its log form, as it would on replay.
	var e wire.Encoder
	x.Encode(&e)
	y, err := Decode(e.Bytes())
	if err != nil {
		f.t.Fatalf("decode %v: %v", op, err)
	}
	res := Apply(f.tree, y, f.opts)
	if f.tree.LastZxid() != f.zxid {
		f.t.Fatalf("last zxid %d after applying %d", f.tree.LastZxid(), f.zxid)
	}
	return res
}

func (f *fixture) create(path string, flags int32) Result {
	f.t.Helper()
	return f.do(sess, wire.OpCreate2, &wire.CreateRequest{Path: path, Data: []byte("d"), ACL: wire.OpenACLUnsafe, Flags: flags})
}

func (f *fixture) stat(path string) wire.Stat {
	f.t.Helper()
	n := f.tree.Get(path)
	if !n.Exists() {
		f.t.Fatalf("%s does not exist", path)
	}
	return n.Stat()
}

func wantErr(t *testing.T, got, want error) {
	t.Helper()
	if !errors.Is(got, want) && !(got == nil && want == nil) {
		t.Fatalf("err = %v, want %v", got, want)
	}
}

func TestFreshTree(t *testing.T) {
	tr := datatree.New()
	if got := tr.Get("/").Stat().Cversion; got != -1 {
		t.Errorf("/ cversion = %d, want -1", got)
	}
	if got := tr.Get("/zookeeper").Stat().Cversion; got != -2 {
		t.Errorf("/zookeeper cversion = %d, want -2", got)
	}
	if tr.NodeCount() != 5 || tr.DataSize() != 44 {
		t.Errorf("node count %d data size %d, want 5 and 44 as ZooKeeper reports", tr.NodeCount(), tr.DataSize())
	}
	if acl := tr.Get("/zookeeper/config").ACL(); !reflect.DeepEqual(acl, wire.ReadACLUnsafe) {
		t.Errorf("/zookeeper/config acl = %v", acl)
	}
}

func TestCreateStatsAndSequence(t *testing.T) {
	f := newFixture(t)
	r := f.create("/a", wire.FlagPersistent)
	wantErr(t, r.Err, nil)
	if r.Stat.Czxid != 2 || r.Stat.Ctime != 2000 || r.Stat.Pzxid != 2 || r.Stat.DataLength != 1 {
		t.Fatalf("stat %+v", r.Stat)
	}
	if s := f.stat("/"); s.Cversion != 0 || s.Pzxid != 2 || s.Mzxid != 0 {
		t.Fatalf("root stat after first create: %+v", s)
	}
	f.create("/a/x", wire.FlagPersistent)
	r = f.create("/a/s-", wire.FlagPersistentSequential)
	if r.Path != "/a/s-0000000001" {
		t.Fatalf("sequential path %q", r.Path)
	}
	f.do(sess, wire.OpDelete, &wire.PathVersionRequest{Path: "/a/x", Version: -1})
	r = f.create("/a/", wire.FlagPersistentSequential)
	if r.Path != "/a/0000000002" {
		t.Fatalf("trailing-slash sequential path %q", r.Path)
	}
	s := f.stat("/a")
	// 3 creates and 1 delete: cversion 4; pzxid from the last create.
	if s.Cversion != 4 || s.NumChildren != 2 || s.Pzxid != f.zxid {
		t.Fatalf("/a stat %+v", s)
	}
}

func TestCreateErrors(t *testing.T) {
	f := newFixture(t)
	f.create("/e", wire.FlagEphemeral)
	tests := []struct {
		name string
		op   wire.Op
		req  wire.Record
		want error
	}{
		{"exists", wire.OpCreate, &wire.CreateRequest{Path: "/e", ACL: wire.OpenACLUnsafe}, datatree.ErrNodeExists},
		{"no parent", wire.OpCreate, &wire.CreateRequest{Path: "/x/y", ACL: wire.OpenACLUnsafe}, datatree.ErrNoNode},
		{"under ephemeral", wire.OpCreate, &wire.CreateRequest{Path: "/e/c", ACL: wire.OpenACLUnsafe}, datatree.ErrNoChildrenForEphemerals},
		{"bad flags", wire.OpCreate, &wire.CreateRequest{Path: "/b", ACL: wire.OpenACLUnsafe, Flags: 7}, datatree.ErrBadArguments},
		{"no slash", wire.OpCreate, &wire.CreateRequest{Path: "b", ACL: wire.OpenACLUnsafe}, datatree.ErrBadPath},
		{"trailing slash", wire.OpCreate, &wire.CreateRequest{Path: "/b/", ACL: wire.OpenACLUnsafe}, datatree.ErrNoNode},
		{"dot segment", wire.OpCreate, &wire.CreateRequest{Path: "/.", ACL: wire.OpenACLUnsafe}, datatree.ErrBadPath},
		{"empty acl", wire.OpCreate, &wire.CreateRequest{Path: "/b"}, datatree.ErrInvalidACL},
		{"auth acl without digest", wire.OpCreate, &wire.CreateRequest{Path: "/b", ACL: []wire.ACL{{Perms: 31, Scheme: "auth"}}}, datatree.ErrInvalidACL},
		{"ttl without ttl", wire.OpCreate, &wire.CreateRequest{Path: "/b", ACL: wire.OpenACLUnsafe, Flags: 5}, datatree.ErrBadArguments},
		{"ttl zero", wire.OpCreateTTL, &wire.CreateTTLRequest{CreateRequest: wire.CreateRequest{Path: "/b", ACL: wire.OpenACLUnsafe, Flags: 5}}, datatree.ErrBadArguments},
		{"ttl on persistent", wire.OpCreateTTL, &wire.CreateTTLRequest{CreateRequest: wire.CreateRequest{Path: "/b", ACL: wire.OpenACLUnsafe}, TTL: 5}, datatree.ErrBadArguments},
		{"createTTL, persistent, no ttl", wire.OpCreateTTL, &wire.CreateTTLRequest{CreateRequest: wire.CreateRequest{Path: "/b", ACL: wire.OpenACLUnsafe}, TTL: -1}, datatree.ErrBadArguments},
		{"container flag on create2 is persistent", wire.OpCreate2, &wire.CreateRequest{Path: "/e", ACL: wire.OpenACLUnsafe, Flags: wire.FlagContainer}, datatree.ErrNodeExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.stat("/")
			r := f.do(sess, tt.op, tt.req)
			wantErr(t, r.Err, tt.want)
			if len(r.Events) != 0 || f.stat("/") != before {
				t.Fatalf("a failed create changed the tree or fired %v", r.Events)
			}
		})
	}
	f.opts.ExtendedTypes = false
	r := f.do(sess, wire.OpCreateTTL, &wire.CreateTTLRequest{CreateRequest: wire.CreateRequest{Path: "/b", ACL: wire.OpenACLUnsafe, Flags: 5}, TTL: 5})
	wantErr(t, r.Err, datatree.ErrUnimplemented)
}

func TestDeleteSetDataSetACL(t *testing.T) {
	f := newFixture(t)
	f.create("/a", 0)
	f.create("/a/b", 0)
	wantErr(t, f.do(sess, wire.OpDelete, &wire.PathVersionRequest{Path: "/a", Version: -1}).Err, datatree.ErrNotEmpty)
	wantErr(t, f.do(sess, wire.OpDelete, &wire.PathVersionRequest{Path: "/zookeeper", Version: -1}).Err, datatree.ErrBadArguments)
	wantErr(t, f.do(sess, wire.OpDelete, &wire.PathVersionRequest{Path: "/a/b", Version: 3}).Err, datatree.ErrBadVersion)
	r := f.do(sess, wire.OpSetData, &wire.SetDataRequest{Path: "/a/b", Data: nil, Version: 0})
	wantErr(t, r.Err, nil)
	if r.Stat.Version != 1 || r.Stat.DataLength != 0 || r.Stat.Mzxid != f.zxid || r.Stat.Mtime != 1000*f.zxid {
		t.Fatalf("setData stat %+v", r.Stat)
	}
	if f.tree.Get("/a/b").Data() != nil {
		t.Fatal("null data must stay null")
	}
	if !reflect.DeepEqual(r.Events, []Event{{Type: wire.EventNodeDataChanged, Path: "/a/b", ACL: wire.OpenACLUnsafe}}) {
		t.Fatalf("events %v", r.Events)
	}
	r = f.do(sess, wire.OpSetACL, &wire.SetACLRequest{Path: "/a/b", ACL: wire.ReadACLUnsafe, Version: 0})
	if r.Err != nil || r.Stat.Aversion != 1 || len(r.Events) != 0 {
		t.Fatalf("setACL: %+v", r)
	}
	wantErr(t, f.do(sess, wire.OpSetData, &wire.SetDataRequest{Path: "/a/b", Version: -1}).Err, datatree.ErrNoAuth)
	pzxid := f.stat("/a").Pzxid
	r = f.do(sess, wire.OpDelete, &wire.PathVersionRequest{Path: "/a/b", Version: 1})
	wantErr(t, r.Err, nil)
	if s := f.stat("/a"); s.Pzxid != f.zxid || s.Pzxid == pzxid || s.Cversion != 2 || s.Mzxid != 2 {
		t.Fatalf("parent after delete: %+v", s)
	}
	want := []Event{{wire.EventNodeDeleted, "/a/b", wire.ReadACLUnsafe}, {wire.EventNodeChildrenChanged, "/a", wire.OpenACLUnsafe}}
	if !reflect.DeepEqual(r.Events, want) {
		t.Fatalf("events %v", r.Events)
	}
}

func TestMultiAtomic(t *testing.T) {
	f := newFixture(t)
	f.create("/m", 0)
	before := f.stat("/m")
	r := f.do(sess, wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/m/s-", ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentSequential}},
		{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/m", Data: []byte("x"), Version: -1}},
		{Op: wire.OpCheck, Req: &wire.PathVersionRequest{Path: "/m", Version: 0}},
		{Op: wire.OpDelete, Req: &wire.PathVersionRequest{Path: "/m", Version: -1}},
	}})
	if !r.Failed || r.Err != nil || len(r.Events) != 0 {
		t.Fatalf("result %+v", r)
	}
	wantCodes := []error{nil, nil, datatree.ErrBadVersion, ErrRolledBack}
	for i, res := range r.Multi {
		if res.Op != wire.OpError || !errors.Is(res.Err, wantCodes[i]) && res.Err != wantCodes[i] {
			t.Fatalf("result %d = %+v, want error %v", i, res, wantCodes[i])
		}
	}
	if after := f.stat("/m"); after != before {
		t.Fatalf("rolled-back multi changed /m: %+v -> %+v", before, after)
	}
	r = f.do(sess, wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/m/s-", ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentSequential}},
		{Op: wire.OpCreateContainer, Req: &wire.CreateRequest{Path: "/m/c", ACL: wire.OpenACLUnsafe, Flags: wire.FlagContainer}},
		{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/m", Data: []byte("x"), Version: 0}},
		{Op: wire.OpCheck, Req: &wire.PathVersionRequest{Path: "/m", Version: 1}},
	}})
	if r.Failed || r.Multi[0].Path != "/m/s-0000000000" || r.Multi[1].Op != wire.OpCreate2 || r.Multi[2].Stat.Version != 1 {
		t.Fatalf("multi results %+v", r.Multi)
	}
	if f.tree.Get("/m/c").Kind() != datatree.Container || len(r.Events) != 5 {
		t.Fatalf("createContainer in multi: kind %v, events %v", f.tree.Get("/m/c").Kind(), r.Events)
	}
}

func TestSessionsAndEphemerals(t *testing.T) {
	f := newFixture(t)
	other := sess + 1
	f.do(other, wire.OpCreateSession, &CreateSession{Timeout: 10000})
	f.create("/p", 0)
	f.do(other, wire.OpCreate, &wire.CreateRequest{Path: "/p/e1", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral})
	f.do(other, wire.OpCreate, &wire.CreateRequest{Path: "/p/e2", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral})
	if s := f.stat("/p/e1"); s.EphemeralOwner != other {
		t.Fatalf("ephemeralOwner %x", s.EphemeralOwner)
	}
	r := f.do(other, wire.OpCloseSession, wire.Empty{})
	if r.Err != nil || len(r.Events) != 4 || f.tree.Get("/p/e1").Exists() || f.tree.Session(other) != nil {
		t.Fatalf("close: %+v", r)
	}
	if s := f.stat("/p"); s.Cversion != 4 || s.NumChildren != 0 {
		t.Fatalf("/p after close %+v", s)
	}
	r = f.do(other, wire.OpCreate, &wire.CreateRequest{Path: "/p/late", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral})
	wantErr(t, r.Err, datatree.ErrSessionExpired)
}

func TestACLChecks(t *testing.T) {
	f := newFixture(t)
	digest := datatree.Digest("user:pw")
	f.ids = append(f.ids, wire.Identity{Scheme: "digest", ID: digest})
	r := f.do(sess, wire.OpCreate, &wire.CreateRequest{Path: "/d", ACL: []wire.ACL{{Perms: wire.PermAll, Scheme: "auth"}}})
	wantErr(t, r.Err, nil)
	if got := f.tree.Get("/d").ACL(); !reflect.DeepEqual(got, []wire.ACL{{Perms: wire.PermAll, Scheme: "digest", ID: digest}}) {
		t.Fatalf("auth acl expanded to %v", got)
	}
	f.ids = []wire.Identity{{Scheme: "ip", ID: "10.0.0.7"}}
	wantErr(t, f.do(sess, wire.OpSetData, &wire.SetDataRequest{Path: "/d", Version: -1}).Err, datatree.ErrNoAuth)
	f.ids = append(f.ids, wire.Identity{Scheme: "super"})
	wantErr(t, f.do(sess, wire.OpSetData, &wire.SetDataRequest{Path: "/d", Version: -1}).Err, nil)
	f.ids = []wire.Identity{{Scheme: "ip", ID: "10.0.0.7"}}
	f.opts.SkipACL = true
	wantErr(t, f.do(sess, wire.OpSetData, &wire.SetDataRequest{Path: "/d", Version: -1}).Err, nil)
}

func TestDeleteContainer(t *testing.T) {
	f := newFixture(t)
	f.do(sess, wire.OpCreateContainer, &wire.CreateRequest{Path: "/c", ACL: wire.OpenACLUnsafe, Flags: wire.FlagContainer})
	f.do(sess, wire.OpCreateTTL, &wire.CreateTTLRequest{CreateRequest: wire.CreateRequest{Path: "/t", ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentWithTTL}, TTL: 5000})
	if s := f.stat("/t"); s.EphemeralOwner != 0 {
		t.Fatalf("TTL node reports owner %x", s.EphemeralOwner)
	}
	f.create("/c/x", 0)
	wantErr(t, f.do(0, wire.OpDeleteContainer, &wire.PathRecord{Path: "/c"}).Err, datatree.ErrNotEmpty)
	wantErr(t, f.do(0, wire.OpDeleteContainer, &wire.PathRecord{Path: "/t"}).Err, datatree.ErrBadArguments)
	f.do(sess, wire.OpDelete, &wire.PathVersionRequest{Path: "/c/x", Version: -1})
	wantErr(t, f.do(0, wire.OpDeleteContainer, &wire.PathRecord{Path: "/c"}).Err, nil)
	f.zxid += 10 // ten seconds later, past the TTL
	wantErr(t, f.do(0, wire.OpDeleteContainer, &wire.PathRecord{Path: "/t"}).Err, nil)
	wantErr(t, f.do(0, wire.OpDeleteContainer, &wire.PathRecord{Path: "/a"}).Err, datatree.ErrNoNode)
}
