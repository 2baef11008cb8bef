package datatree

import (
	"errors"
	"reflect"
	"testing"

	"github.com/paddock/paddock/server/wire"
)

func TestValidatePath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"/", true}, {"/a", true}, {"/a/b-c_d.e", true}, {"/a/..b", true}, {"/é", true},
		{"", false}, {"a", false}, {"/a/", false}, {"//a", false}, {"/a//b", false},
		{"/.", false}, {"/a/..", false}, {"/a/./b", false}, {"/a\x00b", false}, {"/a\x1fb", false},
		{"/a\u007fb", false}, {"/a\ud7ffb", true}, {"/a\ue000", false}, {"/a\ufff0", false},
		{"/😀", false}, // outside the BMP: a surrogate pair in Java
		{"/\xff", false},
	}
	for _, tt := range tests {
		err := ValidatePath(tt.path)
		if (err == nil) != tt.ok {
			t.Errorf("ValidatePath(%q) = %v, want ok=%v", tt.path, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrBadPath) {
			t.Errorf("ValidatePath(%q) = %v, not ErrBadPath", tt.path, err)
		}
	}
}

func TestDigest(t *testing.T) {
	// The digest both the go-zookeeper/zk and kazoo test harnesses use as their super digest.
	if got := Digest("super:test"); got != "super:D/InIHSb7yEEbrWz8b9l71RjZJU=" {
		t.Fatalf("Digest = %q", got)
	}
	if got := Digest("blah"); got[:5] != "blah:" {
		t.Fatalf("a credential without a colon: %q", got)
	}
}

func TestAllowed(t *testing.T) {
	ip := func(addr string) []wire.Identity { return []wire.Identity{{Scheme: "ip", ID: addr}} }
	acl := func(scheme, id string, perms wire.Perm) []wire.ACL {
		return []wire.ACL{{Perms: perms, Scheme: scheme, ID: id}}
	}
	tests := []struct {
		name string
		acl  []wire.ACL
		perm wire.Perm
		ids  []wire.Identity
		want bool
	}{
		{"empty acl", nil, wire.PermAdmin, nil, true},
		{"world", wire.OpenACLUnsafe, wire.PermWrite, nil, true},
		{"world read only", wire.ReadACLUnsafe, wire.PermWrite, nil, false},
		{"ip exact", acl("ip", "10.1.2.3", 31), wire.PermRead, ip("10.1.2.3"), true},
		{"ip other", acl("ip", "10.1.2.3", 31), wire.PermRead, ip("10.1.2.4"), false},
		{"ip /24", acl("ip", "10.1.2.0/24", 31), wire.PermRead, ip("10.1.2.200"), true},
		{"ip /23 boundary", acl("ip", "10.1.2.0/23", 31), wire.PermRead, ip("10.1.3.9"), true},
		{"ip /23 outside", acl("ip", "10.1.2.0/23", 31), wire.PermRead, ip("10.1.4.9"), false},
		{"ip leading zeros as Java", acl("ip", "010.001.002.003", 31), wire.PermRead, ip("10.1.2.3"), true},
		{"ipv6 /64", acl("ip", "2001:db8::/64", 31), wire.PermRead, ip("2001:db8::1"), true},
		{"ipv4 vs ipv6", acl("ip", "2001:db8::/64", 31), wire.PermRead, ip("10.1.2.3"), false},
		{"digest", acl("digest", "u:h", 31), wire.PermRead, []wire.Identity{{Scheme: "digest", ID: "u:h"}}, true},
		{"digest other", acl("digest", "u:h", 31), wire.PermRead, []wire.Identity{{Scheme: "digest", ID: "u:x"}}, false},
		{"super", acl("digest", "u:h", 1), wire.PermAdmin, []wire.Identity{{Scheme: "super"}}, true},
		{"perm missing", acl("digest", "u:h", wire.PermRead), wire.PermWrite, []wire.Identity{{Scheme: "digest", ID: "u:h"}}, false},
	}
	for _, tt := range tests {
		if got := Allowed(tt.acl, tt.perm, tt.ids); got != tt.want {
			t.Errorf("%s: Allowed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFixupACL(t *testing.T) {
	digest := wire.Identity{Scheme: "digest", ID: "u:h"}
	tests := []struct {
		name string
		in   []wire.ACL
		ids  []wire.Identity
		want []wire.ACL
		err  bool
	}{
		{"empty", nil, nil, nil, true},
		{"world anyone", wire.OpenACLUnsafe, nil, wire.OpenACLUnsafe, false},
		{"world someone", []wire.ACL{{Perms: 31, Scheme: "world", ID: "me"}}, nil, nil, true},
		{"duplicates", []wire.ACL{wire.OpenACLUnsafe[0], wire.OpenACLUnsafe[0]}, nil, wire.OpenACLUnsafe, false},
		{"auth expands to digests", []wire.ACL{{Perms: 5, Scheme: "auth"}}, []wire.Identity{{Scheme: "ip", ID: "1.2.3.4"}, digest},
			[]wire.ACL{{Perms: 5, Scheme: "digest", ID: "u:h"}}, false},
		{"auth without digest", []wire.ACL{{Perms: 5, Scheme: "auth"}}, []wire.Identity{{Scheme: "ip", ID: "1.2.3.4"}}, nil, true},
		{"digest id needs one colon", []wire.ACL{{Perms: 1, Scheme: "digest", ID: "nohash"}}, nil, nil, true},
		{"digest trailing colon", []wire.ACL{{Perms: 1, Scheme: "digest", ID: "u:"}}, nil, nil, true},
		{"ip bad", []wire.ACL{{Perms: 1, Scheme: "ip", ID: "300.1.1.1"}}, nil, nil, true},
		{"ip bad bits", []wire.ACL{{Perms: 1, Scheme: "ip", ID: "1.1.1.1/33"}}, nil, nil, true},
		{"unknown scheme", []wire.ACL{{Perms: 1, Scheme: "kerberos", ID: "x"}}, nil, nil, true},
		{"sasl", []wire.ACL{{Perms: 1, Scheme: "sasl", ID: "alice"}}, nil, []wire.ACL{{Perms: 1, Scheme: "sasl", ID: "alice"}}, false},
		{"sasl kerberos principal", []wire.ACL{{Perms: 1, Scheme: "sasl", ID: "zk/host@REALM"}}, nil,
			[]wire.ACL{{Perms: 1, Scheme: "sasl", ID: "zk/host@REALM"}}, false},
		{"sasl bad principal", []wire.ACL{{Perms: 1, Scheme: "sasl", ID: "a/b/c@R"}}, nil, nil, true},
		{"auth with sasl", []wire.ACL{{Perms: 31, Scheme: "auth"}}, []wire.Identity{{Scheme: "ip", ID: "1.2.3.4"}, {Scheme: "sasl", ID: "bob"}},
			[]wire.ACL{{Perms: 31, Scheme: "sasl", ID: "bob"}}, false},
	}
	for _, tt := range tests {
		got, err := FixupACL(tt.in, tt.ids)
		if (err != nil) != tt.err || (err == nil && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("%s: FixupACL = %v, %v; want %v (error %v)", tt.name, got, err, tt.want, tt.err)
		}
	}
}

// TestRollback checks that undoing a mix of mutations restores every index exactly.
func TestRollback(t *testing.T) {
	tr := New()
	tr.Create("/p", []byte("x"), wire.OpenACLUnsafe, 0, 1, 100)
	tr.Create("/p/e", nil, wire.OpenACLUnsafe, 7, 2, 100)
	tr.AddSession(&Session{ID: 7, Timeout: 1000})
	before := snapshot(tr)
	tr.Begin()
	tr.Create("/p/c", []byte("yy"), wire.OpenACLUnsafe, ContainerOwner, 3, 200)
	tr.SetData("/p", []byte("longer data"), 3, 200)
	tr.SetACL("/p", wire.ReadACLUnsafe)
	tr.Delete("/p/e", 3)
	tr.RemoveSession(7)
	tr.Create("/t", nil, wire.OpenACLUnsafe, TTLOwner(500), 3, 200)
	tr.Rollback()
	if after := snapshot(tr); !reflect.DeepEqual(before, after) {
		t.Fatalf("rollback did not restore the tree:\n before %+v\n after  %+v", before, after)
	}
}

type treeState struct {
	Nodes      map[string]wire.Stat
	Data       map[string]string
	Ephemerals []string
	Containers []string
	TTLs       []string
	Sessions   int
	Size       int64
}

func snapshot(tr *Tree) treeState {
	s := treeState{Nodes: map[string]wire.Stat{}, Data: map[string]string{}}
	tr.Walk(func(n Node) {
		s.Nodes[n.Path()] = n.Stat()
		s.Data[n.Path()] = string(n.Data())
	})
	s.Ephemerals = tr.Ephemerals(7)
	s.Containers, s.TTLs = tr.Containers(), tr.TTLNodes()
	s.Sessions, s.Size = len(tr.Sessions()), tr.DataSize()
	return s
}

// TestCreateChildExisting: creating an existing path changes nothing — not the node,
// not its parent, not the tree's digest — and returns the node that is there.
func TestCreateChildExisting(t *testing.T) {
	tr := New()
	tr.Create("/a", []byte("x"), nil, 0, 1, 10)
	orig, _ := tr.CreateChild(tr.Get("/a"), "/a/b", []byte("first"), nil, 0, 2, 20)
	before := tr.Digest()
	got, created := tr.CreateChild(tr.Get("/a"), "/a/b", []byte("second"), nil, 7, 3, 30)
	if created || got != orig {
		t.Fatalf("CreateChild of an existing path = %q, %v; want the existing node %q, false", got.rec, created, orig.rec)
	}
	if tr.Digest() != before || string(tr.Get("/a/b").Data()) != "first" || tr.Get("/a").Stat().Cversion != 1 {
		t.Errorf("the tree changed: data %q, parent cversion %d", tr.Get("/a/b").Data(), tr.Get("/a").Stat().Cversion)
	}
}

// TestGetAfterEveryChange: Get answers from the node put last without walking the
// index; after every kind of change, and after a rollback, it must answer as the
// index does.
func TestGetAfterEveryChange(t *testing.T) {
	tr := New()
	paths := []string{"/", "/p", "/p/a", "/p/b", "/q"}
	check := func(step string) {
		t.Helper()
		for _, p := range paths {
			want, _ := tr.index.Get(keyOfPath(p))
			if got := tr.Get(p); got != want {
				t.Fatalf("after %s: Get(%q) = %+v, the index holds %+v", step, p, got, want)
			}
		}
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"create /p", func() { tr.Create("/p", nil, nil, 0, 1, 1) }},
		{"create /p/a", func() { tr.Create("/p/a", nil, nil, 0, 2, 2) }},
		{"set /p/a", func() { tr.SetData("/p/a", []byte("x"), 3, 3) }},
		{"delete /p/a", func() { tr.Delete("/p/a", 4) }},
		{"delete /p", func() { tr.Delete("/p", 5) }},
		{"create /p again", func() { tr.Create("/p", nil, nil, 0, 6, 6) }},
		{"rolled back multi", func() {
			tr.Begin()
			tr.Create("/p/b", nil, nil, 0, 7, 7)
			tr.SetACL("/p", wire.ReadACLUnsafe)
			tr.Create("/q", nil, nil, 0, 7, 7)
			tr.Delete("/q", 7)
			tr.Rollback()
		}},
		{"committed multi", func() {
			tr.Begin()
			tr.Create("/p/b", nil, nil, 0, 8, 8)
			tr.Delete("/p/b", 8)
			tr.Commit()
		}},
		// Every change above puts a parent after removing a node; the index's own
		// operations must keep Get right without that.
		{"remove of the node put last", func() {
			n := newNode("/q", nil, &stat{}, openACL)
			tr.insert(n)
			tr.remove(n)
		}},
	}
	for _, s := range steps {
		s.do()
		check(s.name)
	}
}
