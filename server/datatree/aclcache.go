package datatree

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"weak"

	"github.com/paddock/paddock/server/wire"
)

// The system nodes' lists, shared by every tree.
var (
	openACL = &nodeRef{list: wire.OpenACLUnsafe}
	readACL = &nodeRef{list: wire.ReadACLUnsafe}
)

// aclCache interns ACL lists, as ZooKeeper's ReferenceCountedACLCache does: the nodes of
// a tree mostly share a handful of lists, so each distinct list is stored once. Entries
// are weak: a list no node refers to any more is dropped by the garbage collector, with no
// reference counts to keep right through multi rollbacks. Safe for concurrent use (the
// cleanups run on the runtime's goroutine).
type aclCache struct {
	mu sync.Mutex
	m  map[string]weak.Pointer[nodeRef] // canonical key -> the list
}

func newACLCache() *aclCache { return &aclCache{m: make(map[string]weak.Pointer[nodeRef])} }

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

// intern returns the stored list equal to acl, storing a copy of acl if there is none.
// The system nodes' lists are found without building a key: the open one is what most
// clients give.
func (c *aclCache) intern(acl []wire.ACL) *nodeRef {
	for _, l := range [...]*nodeRef{openACL, readACL} {
		if slices.Equal(acl, l.list) {
			return l
		}
	}
	key := aclKey(acl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if wp, ok := c.m[key]; ok {
		if l := wp.Value(); l != nil {
			return l
		}
	}
	l := &nodeRef{list: append([]wire.ACL(nil), acl...)} // a tight copy, never modified
	c.m[key] = weak.Make(l)
	runtime.AddCleanup(l, c.forget, key)
	return l
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
