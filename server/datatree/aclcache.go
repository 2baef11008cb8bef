package datatree

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"
	"weak"

	"github.com/paddock/paddock/server/wire"
)

// aclCache interns ACL lists, as ZooKeeper's ReferenceCountedACLCache does: the nodes of
// a tree mostly share a handful of lists, so each distinct list is stored once. Entries
// are weak: a list no node refers to any more is dropped by the garbage collector, with no
// reference counts to keep right through multi rollbacks. Safe for concurrent use (the
// cleanups run on the runtime's goroutine).
type aclCache struct {
	mu sync.Mutex
	m  map[string]weak.Pointer[wire.ACL] // canonical key -> first element of the list
}

func newACLCache() *aclCache { return &aclCache{m: make(map[string]weak.Pointer[wire.ACL])} }

// aclKey encodes an ACL list canonically; order matters, as it does on the wire.
func aclKey(acl []wire.ACL) string {
	var b strings.Builder
	for _, a := range acl {
		b.WriteString(strconv.Itoa(int(a.Perms)))
		b.WriteByte(0)
		b.WriteString(a.Scheme)
		b.WriteByte(0)
		b.WriteString(a.ID)
		b.WriteByte(0)
	}
	return b.String()
}

// intern returns the stored list equal to acl, storing acl if there is none.
// The returned list must never be modified.
func (c *aclCache) intern(acl []wire.ACL) []wire.ACL {
	if len(acl) == 0 {
		return acl
	}
	key := aclKey(acl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if wp, ok := c.m[key]; ok {
		if p := wp.Value(); p != nil {
			return unsafe.Slice(p, len(acl))
		}
	}
	stored := append([]wire.ACL(nil), acl...) // a tight copy the cache may hand out forever
	first := &stored[0]
	c.m[key] = weak.Make(first)
	runtime.AddCleanup(first, c.forget, key)
	return stored
}

// forget drops a key whose list is gone, unless it was stored again since.
func (c *aclCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if wp, ok := c.m[key]; ok && wp.Value() == nil {
		delete(c.m, key)
	}
}

// len returns the number of lists cached, for tests.
func (c *aclCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
