package datatree

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/paddock/paddock/server/wire"
)

func TestACLInterning(t *testing.T) {
	tr := New()
	open := func() []wire.ACL { return []wire.ACL{{Perms: 31, Scheme: "world", ID: "anyone"}} }
	a := tr.Create("/a", nil, open(), 0, 1, 1)
	b := tr.Create("/b", nil, open(), 0, 2, 1)
	if &a.ACL()[0] != &b.ACL()[0] {
		t.Fatal("equal ACL lists are stored twice")
	}
	c := tr.SetACL("/b", []wire.ACL{{Perms: 1, Scheme: "world", ID: "anyone"}})
	if &c.ACL()[0] == &a.ACL()[0] || c.ACL()[0].Perms != 1 || a.ACL()[0].Perms != 31 {
		t.Fatal("setACL changed a shared list")
	}
}

// TestACLCacheForgets: lists no node uses any more leave the cache, so unique ACLs
// from clients do not accumulate forever.
func TestACLCacheForgets(t *testing.T) {
	tr := New()
	for i := 0; i < 100; i++ {
		p := fmt.Sprintf("/n%d", i)
		tr.Create(p, nil, []wire.ACL{{Perms: 31, Scheme: "digest", ID: fmt.Sprintf("u%d:h", i)}}, 0, int64(i+1), 1)
		tr.Delete(p, int64(i+1))
	}
	deadline := time.Now().Add(10 * time.Second)
	for tr.acls.len() > 5 {
		if time.Now().After(deadline) {
			t.Fatalf("%d lists still cached after their nodes were deleted", tr.acls.len())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
