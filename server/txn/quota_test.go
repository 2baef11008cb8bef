package txn

import (
	"errors"
	"testing"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// setQuota creates a quota on path the way zkCli's setquota does: the quota path's
// nodes, the limits node, then the stats node with "count=0,bytes=0", which the tree
// recounts at once.
func (f *fixture) setQuota(path, limits string) {
	f.t.Helper()
	qp := datatree.QuotaPath + path
	if r := f.do(sess, wire.OpCreate, &wire.CreateRequest{Path: qp, ACL: wire.OpenACLUnsafe}); r.Err != nil {
		f.t.Fatalf("create %s: %v", qp, r.Err)
	}
	for name, data := range map[string]string{datatree.QuotaLimitNode: limits} {
		f.do(sess, wire.OpCreate, &wire.CreateRequest{Path: qp + "/" + name, Data: []byte(data), ACL: wire.OpenACLUnsafe})
	}
	f.do(sess, wire.OpCreate, &wire.CreateRequest{Path: qp + "/" + datatree.QuotaStatNode, Data: []byte("count=0,bytes=0"), ACL: wire.OpenACLUnsafe})
}

func (f *fixture) quotaStats(path string) string {
	f.t.Helper()
	n := f.tree.Get(datatree.QuotaPath + path + "/" + datatree.QuotaStatNode)
	if !n.Exists() {
		f.t.Fatalf("no stats node for %s", path)
	}
	return string(n.Data())
}

func wantStats(t *testing.T, f *fixture, path, want string) {
	t.Helper()
	if got := f.quotaStats(path); got != want {
		t.Fatalf("stats of %s = %q, want %q", path, got, want)
	}
}

func TestStatsTrackFormats(t *testing.T) {
	tests := []struct{ in, out string }{
		{"count=3,bytes=10", "count=3,bytes=10"},
		{"count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2"},
		{"countHardLimit=2", "count=-1,bytes=-1=;countHardLimit=2"},
		{"", "count=-1,bytes=-1"},
		{"count=x,bytes=,;;junk", "count=-1,bytes=-1"},
	}
	for _, tt := range tests {
		if got := datatree.ParseStatsTrack([]byte(tt.in)).String(); got != tt.out {
			t.Errorf("%q -> %q, want %q", tt.in, got, tt.out)
		}
	}
	st := datatree.ParseStatsTrack([]byte("count=-1,bytes=-1=;byteHardLimit=9;countHardLimit=2"))
	if st.CountHardLimit() != 2 || st.ByteHardLimit() != 9 || st.Count() != -1 {
		t.Fatalf("parsed %v", st)
	}
}

func TestQuotaStatsFollowWrites(t *testing.T) {
	f := newFixture(t)
	f.create("/a", 0)   // 1 byte
	f.create("/a/b", 0) // 1 byte
	f.setQuota("/a", "count=10,bytes=100")
	wantStats(t, f, "/a", "count=2,bytes=2") // recounted when the stats node was created
	if got := f.tree.Quotas(); len(got) != 1 || got[0] != "/a" {
		t.Fatalf("quotas %v", got)
	}
	f.create("/a/b/c", 0)
	f.create("/ab", 0) // not under /a: a prefix of the name is not a prefix of the path
	wantStats(t, f, "/a", "count=3,bytes=3")
	f.do(sess, wire.OpSetData, &wire.SetDataRequest{Path: "/a/b", Data: []byte("hello"), Version: -1})
	wantStats(t, f, "/a", "count=3,bytes=7")
	f.do(sess, wire.OpDelete, &wire.PathVersionRequest{Path: "/a/b/c", Version: -1})
	wantStats(t, f, "/a", "count=2,bytes=6")
	// An ephemeral deleted by its session's close counts down too.
	f.do(sess, wire.OpCreate, &wire.CreateRequest{Path: "/a/e", Data: []byte("xy"), ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral})
	wantStats(t, f, "/a", "count=3,bytes=8")
	f.do(sess, wire.OpCloseSession, wire.Empty{})
	wantStats(t, f, "/a", "count=2,bytes=6")
	// The stats node's stat does not move: it is bookkeeping, not a write.
	if s := f.tree.Get(datatree.QuotaPath + "/a/" + datatree.QuotaStatNode).Stat(); s.Version != 0 || s.Mzxid != s.Czxid {
		t.Fatalf("stats node stat changed: %+v", s)
	}
}

func TestQuotaHardLimitsEnforced(t *testing.T) {
	f := newFixture(t)
	f.opts.EnforceQuota = true
	f.create("/q", 0)
	f.setQuota("/q", "count=-1,bytes=-1=;byteHardLimit=6;countHardLimit=3")
	f.create("/q/1", 0)
	f.create("/q/2", 0)
	wantStats(t, f, "/q", "count=3,bytes=3")
	r := f.create("/q/3", 0)
	if !errors.Is(r.Err, datatree.ErrQuotaExceeded) || len(r.Quota) != 1 || !r.Quota[0].Hard || r.Quota[0].Value != 4 {
		t.Fatalf("create past countHardLimit: err %v quota %+v", r.Err, r.Quota)
	}
	// NodeExists comes before QuotaExceeded, as in ZooKeeper.
	wantErr(t, f.create("/q/1", 0).Err, datatree.ErrNodeExists)
	wantErr(t, f.do(sess, wire.OpSetData, &wire.SetDataRequest{Path: "/q/1", Data: []byte("abcde"), Version: -1}).Err, datatree.ErrQuotaExceeded)
	// The quota check comes before the version check.
	wantErr(t, f.do(sess, wire.OpSetData, &wire.SetDataRequest{Path: "/q/1", Data: []byte("abcde"), Version: 7}).Err, datatree.ErrQuotaExceeded)
	wantErr(t, f.do(sess, wire.OpSetData, &wire.SetDataRequest{Path: "/q/1", Data: []byte("abcd"), Version: -1}).Err, nil)
	// Shrinking is always allowed.
	wantErr(t, f.do(sess, wire.OpSetData, &wire.SetDataRequest{Path: "/q/1", Data: nil, Version: -1}).Err, nil)
	wantStats(t, f, "/q", "count=3,bytes=2")
	// A multi whose later op passes the quota rolls back, stats included.
	r = f.do(sess, wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/q/2", Data: []byte("zz"), Version: -1}},
		{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/q/3", ACL: wire.OpenACLUnsafe}},
	}})
	if !r.Failed || !errors.Is(r.Multi[1].Err, datatree.ErrQuotaExceeded) {
		t.Fatalf("multi %+v", r)
	}
	wantStats(t, f, "/q", "count=3,bytes=2")
	// Without enforcement the same create passes and reports the hard limit passed.
	f.opts.EnforceQuota = false
	r = f.create("/q/3", 0)
	if r.Err != nil || len(r.Quota) != 1 || r.Quota[0].Kind != "count" {
		t.Fatalf("unenforced create: %+v", r)
	}
	wantStats(t, f, "/q", "count=4,bytes=3")
}

func TestQuotaSoftLimitsOnlyReported(t *testing.T) {
	f := newFixture(t)
	f.opts.EnforceQuota = true
	f.create("/s", 0)
	f.setQuota("/s", "count=1,bytes=-1")
	r := f.create("/s/x", 0)
	if r.Err != nil || len(r.Quota) != 1 || r.Quota[0].Hard || r.Quota[0].Limit != 1 || r.Quota[0].Value != 2 {
		t.Fatalf("soft quota: %+v", r)
	}
	if r := f.create("/other", 0); len(r.Quota) != 0 {
		t.Fatalf("a write outside any quota reported %+v", r.Quota)
	}
}

func TestQuotaRemovedWithLimitsNode(t *testing.T) {
	f := newFixture(t)
	f.opts.EnforceQuota = true
	f.create("/d", 0)
	f.setQuota("/d", "count=-1,bytes=-1=;countHardLimit=1")
	wantErr(t, f.create("/d/x", 0).Err, datatree.ErrQuotaExceeded)
	f.do(sess, wire.OpDelete, &wire.PathVersionRequest{Path: datatree.QuotaPath + "/d/" + datatree.QuotaLimitNode, Version: -1})
	wantErr(t, f.create("/d/x", 0).Err, nil)
	if len(f.tree.Quotas()) != 0 {
		t.Fatalf("quotas %v after deleting the limits node", f.tree.Quotas())
	}
}

func TestQuotaSurvivesSnapshot(t *testing.T) {
	f := newFixture(t)
	f.opts.EnforceQuota = true
	f.create("/p", 0)
	f.setQuota("/p", "count=-1,bytes=-1=;countHardLimit=2")
	l := datatree.NewLoader()
	if err := f.tree.Snapshot().Records(l.Add); err != nil {
		t.Fatal(err)
	}
	loaded, err := l.Tree()
	if err != nil {
		t.Fatal(err)
	}
	f.tree = loaded
	wantErr(t, f.create("/p/1", 0).Err, nil)
	wantErr(t, f.create("/p/2", 0).Err, datatree.ErrQuotaExceeded)
	wantStats(t, f, "/p", "count=2,bytes=2")
}

// A multi that creates a quota and then fails leaves neither the nodes, nor the index
// entry, nor the data size behind.
func TestQuotaCreatedInRolledBackMulti(t *testing.T) {
	f := newFixture(t)
	f.opts.EnforceQuota = true
	f.create("/r", 0)
	size, count := f.tree.DataSize(), f.tree.NodeCount()
	qp := datatree.QuotaPath + "/r"
	r := f.do(sess, wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: qp, ACL: wire.OpenACLUnsafe}},
		{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: qp + "/" + datatree.QuotaLimitNode, Data: []byte("count=-1,bytes=-1=;countHardLimit=1"), ACL: wire.OpenACLUnsafe}},
		{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: qp + "/" + datatree.QuotaStatNode, Data: []byte("count=0,bytes=0"), ACL: wire.OpenACLUnsafe}},
		{Op: wire.OpCreate, Req: &wire.CreateRequest{Path: "/r/x", ACL: wire.OpenACLUnsafe}},
	}})
	if !r.Failed || !errors.Is(r.Multi[3].Err, datatree.ErrQuotaExceeded) {
		t.Fatalf("multi %+v", r.Multi)
	}
	if len(f.tree.Quotas()) != 0 || f.tree.Get(qp).Exists() || f.tree.DataSize() != size || f.tree.NodeCount() != count {
		t.Fatalf("rolled-back quota left quotas %v, node %v, size %d (want %d), count %d (want %d)",
			f.tree.Quotas(), f.tree.Get(qp).Exists(), f.tree.DataSize(), size, f.tree.NodeCount(), count)
	}
	wantErr(t, f.create("/r/x", 0).Err, nil)
}
