package server

import (
	"fmt"
	"slices"
	"testing"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// The expected values in these tests were produced by OpenJDK 17 with ZooKeeper 3.8's
// org.apache.zookeeper.data.Id: String.hashCode, Id.hashCode, and the iteration order
// of Collections.newSetFromMap(new ConcurrentHashMap<Id, Boolean>()) after adding the
// same Ids in the same order.

func TestJavaStringHash(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int32
	}{
		{"", 0}, {"a", 97}, {"ab", 3105}, {"hello", 99162322},
		{"ip", 3367}, {"digest", -1331913276}, {"super", 109801339}, {"x509", 3627398}, {"sasl", 3522855},
		{"127.0.0.1", 1505998205}, {"CN=admin", -1145934499},
		{"héllo", 103094734}, // é is one UTF-16 unit
		{"😀", 1772899},       // a surrogate pair: two units
	} {
		if got := javaStringHash(tc.s); got != tc.want {
			t.Errorf("javaStringHash(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

func TestIDHash(t *testing.T) {
	for _, tc := range []struct {
		id   wire.Identity
		want int32
	}{
		{wire.Identity{Scheme: "ip", ID: "127.0.0.1"}, 1506146057},
		{wire.Identity{Scheme: "super"}, -232294480},
		{wire.Identity{Scheme: "digest", ID: datatree.Digest("bob:pw")}, -1474158990},
		{wire.Identity{Scheme: "x509", ID: "CN=Zoë"}, 2126332171},
	} {
		if got := idHash(tc.id); got != tc.want {
			t.Errorf("idHash(%v) = %d, want %d", tc.id, got, tc.want)
		}
	}
}

func TestZooKeeperOrder(t *testing.T) {
	ip := wire.Identity{Scheme: "ip", ID: "127.0.0.1"}
	digest := func(cred string) wire.Identity {
		return wire.Identity{Scheme: "digest", ID: datatree.Digest(cred)}
	}
	id := func(scheme, id string) wire.Identity { return wire.Identity{Scheme: scheme, ID: id} }
	// u1..u14, as the conformance suite's acl scenario adds them after the ip identity.
	many := []wire.Identity{ip}
	for i := 1; i <= 14; i++ {
		many = append(many, digest(fmt.Sprintf("u%d:pw", i)))
	}
	// Ids whose hashes share their low 4 bits (c6...), or their low 7 (c29...): one bin
	// at 16 bins.
	collide4 := []string{"c6", "c18", "c29", "c90", "c108", "c119", "c180", "c191", "c207", "c218"}
	collide7 := []string{"c29", "c218", "c339", "c416", "c537", "c614", "c658", "c735", "c779", "c811", "c855", "c899"}
	digestIDs := func(ids ...string) []wire.Identity {
		out := make([]wire.Identity, len(ids))
		for i, s := range ids {
			out[i] = id("digest", s)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ids  []wire.Identity
		want []wire.Identity
	}{
		{"none", nil, []wire.Identity{}},
		{"ip", []wire.Identity{ip}, []wire.Identity{ip}},
		{"ip and a digest", []wire.Identity{ip, digest("bob:pw")}, []wire.Identity{digest("bob:pw"), ip}},
		{"duplicates", []wire.Identity{ip, digest("alice:wrong"), digest("alice:secret"), digest("blah"), ip, digest("alice:secret")},
			[]wire.Identity{digest("alice:secret"), digest("blah"), ip, digest("alice:wrong")}},
		{"digest super", []wire.Identity{ip, id("super", ""), digest("super:test")},
			[]wire.Identity{id("super", ""), ip, digest("super:test")}},
		{"x509 super", []wire.Identity{ip, id("super", "CN=admin"), id("x509", "CN=admin")},
			[]wire.Identity{id("super", "CN=admin"), id("x509", "CN=admin"), ip}},
		{"x509", []wire.Identity{ip, id("x509", "CN=zkcli-alice")}, []wire.Identity{id("x509", "CN=zkcli-alice"), ip}},
		{"non-ASCII", []wire.Identity{id("sasl", "jürgen"), id("digest", "😀:x"), id("ip", "::1"), id("x509", "CN=Zoë")},
			[]wire.Identity{id("x509", "CN=Zoë"), id("sasl", "jürgen"), id("digest", "😀:x"), id("ip", "::1")}},
		// The 12th key doubles the table to 32 bins; the bins split, some reversed.
		{"resize", many, []wire.Identity{many[3], many[9], many[5], many[11], many[4], ip, many[1], many[6], many[13],
			many[2], many[12], many[7], many[8], many[14], many[10]}},
		// The 9th key in one bin of a 16-bin table grows the table, to 128 bins.
		{"a full bin grows the table", digestIDs(collide4...),
			digestIDs("c29", "c218", "c18", "c108", "c180", "c119", "c191", "c90", "c6", "c207")},
		// At 128 bins the 10th key in one bin makes it a tree bin, which adds at the head.
		{"tree bin", digestIDs(collide7...),
			digestIDs("c899", "c855", "c29", "c218", "c339", "c416", "c537", "c614", "c658", "c735", "c779", "c811")},
		{"tree bin, again", append(digestIDs(collide7...), digestIDs(collide7...)...),
			digestIDs("c899", "c855", "c29", "c218", "c339", "c416", "c537", "c614", "c658", "c735", "c779", "c811")},
		{"one bin, in the order added", digestIDs("c18", "c6"), digestIDs("c18", "c6")},
		{"one bin, the other way", digestIDs("c6", "c18"), digestIDs("c6", "c18")},
	} {
		if got := zooKeeperOrder(tc.ids); !slices.Equal(got, tc.want) {
			t.Errorf("%s: zooKeeperOrder\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
}

// TestCHMTableGrowth: the table doubles when the count reaches three quarters of it,
// grows from 16 to 128 bins when a bin of a small table fills, and makes a full bin a
// tree from 64 bins on.
func TestCHMTableGrowth(t *testing.T) {
	table := func(ids ...string) *chmTable {
		var tb chmTable
		for i, s := range ids {
			tb.add(wire.Identity{Scheme: "digest", ID: s})
			if tb.count != i+1 {
				t.Fatalf("count %d after %d keys", tb.count, i+1)
			}
		}
		return &tb
	}
	trees := func(tb *chmTable) (n int) {
		for _, b := range tb.bins {
			if b.tree {
				n++
			}
		}
		return n
	}
	var names []string
	for i := range 48 {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	for _, tc := range []struct {
		name        string
		tb          *chmTable
		bins, trees int
	}{
		{"11 keys", table(names[:11]...), 16, 0},
		{"12 keys", table(names[:12]...), 32, 0},
		{"24 keys", table(names[:24]...), 64, 0},
		{"48 keys", table(names...), 128, 0},
		{"9 in a bin", table("c6", "c18", "c29", "c90", "c108", "c119", "c180", "c191", "c207"), 128, 0},
		{"10 in a bin", table("c29", "c218", "c339", "c416", "c537", "c614", "c658", "c735", "c779", "c811"), 128, 1},
	} {
		if len(tc.tb.bins) != tc.bins || trees(tc.tb) != tc.trees {
			t.Errorf("%s: %d bins, %d trees, want %d and %d", tc.name, len(tc.tb.bins), trees(tc.tb), tc.bins, tc.trees)
		}
	}
}
