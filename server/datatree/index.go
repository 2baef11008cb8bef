package datatree

import "strings"

// index is the tree's ordered set of nodes: a copy-on-write B-tree keyed by (parent path,
// name), so that a node's children are one contiguous, sorted range and every parent
// sorts before its children.
//
// It is google/btree's design, written for this one item type for two reasons. First,
// how full it stays: a B-tree that splits a full node in the middle leaves every node it
// fills in order — sequential znodes, a snapshot's load — half empty, which for a tree
// of small znodes cost 26 bytes a znode. This one splits a leaf where its last insert
// went when the next goes right after it (InnoDB's insert-direction rule), so a run
// in order fills its leaves wherever in the index it runs, and an inner node at its end
// when the item goes after all of it. Second, the key: a lookup splits its path into
// (parent, name) once, not once per comparison.
//
// Clone is O(1): both indexes then share every node, and each copies a node before it
// changes it (the node's cow is not the index's). An index is not safe for concurrent
// use; a clone may be read on another goroutine while the original changes.
type index struct {
	root *bnode
	n    int
	cow  *cowToken
}

// cowToken marks the nodes an index may change in place. (Not empty: distinct
// allocations of a zero-size type may share an address.)
type cowToken struct{ _ byte }

const (
	maxItems = 63 // items in a node; a node has one child more
	minItems = maxItems / 2
)

type bnode struct {
	items    []Node   // sorted; capacity maxItems
	children []*bnode // nil in a leaf; capacity maxItems+1
	cow      *cowToken
	// next is where an insert right after a leaf's last one goes (0: no insert yet).
	next int
}

// ikey is an index key: the (parent, name) pair of a path; the root is ("", "").
type ikey struct{ parent, name string }

func keyOfPath(path string) ikey {
	p, n := indexKey(path)
	return ikey{p, n}
}

func keyOfNode(n Node) ikey {
	p, name := key(n)
	return ikey{p, name}
}

func (k ikey) compare(n Node) int {
	p, name := key(n)
	if c := strings.Compare(k.parent, p); c != 0 {
		return c
	}
	return strings.Compare(k.name, name)
}

func newIndex() *index { return &index{cow: new(cowToken)} }

// Len returns the number of nodes.
func (x *index) Len() int { return x.n }

// Clone returns an index holding what x holds, in O(1).
func (x *index) Clone() *index {
	x.cow = new(cowToken)
	return &index{root: x.root, n: x.n, cow: new(cowToken)}
}

func (x *index) newNode(leaf bool) *bnode {
	b := &bnode{items: make([]Node, 0, maxItems), cow: x.cow}
	if !leaf {
		b.children = make([]*bnode, 0, maxItems+1)
	}
	return b
}

// mutable returns b itself if x may change it, else a copy x may change.
func (x *index) mutable(b *bnode) *bnode {
	if b.cow == x.cow {
		return b
	}
	c := x.newNode(b.children == nil)
	c.next = b.next
	c.items = append(c.items, b.items...)
	c.children = append(c.children, b.children...)
	return c
}

// find returns where k is in b's items, or where it would go.
func (b *bnode) find(k ikey) (int, bool) {
	lo, hi := 0, len(b.items)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := k.compare(b.items[mid]); {
		case c == 0:
			return mid, true
		case c < 0:
			hi = mid
		default:
			lo = mid + 1
		}
	}
	return lo, false
}

// Get returns the node with key k.
func (x *index) Get(k ikey) (Node, bool) {
	for b := x.root; b != nil; {
		i, found := b.find(k)
		if found {
			return b.items[i], true
		}
		if b.children == nil {
			break
		}
		b = b.children[i]
	}
	return Node{}, false
}

// ReplaceOrInsert puts n in the index and returns the node it replaced, if any.
func (x *index) ReplaceOrInsert(n Node) (Node, bool) {
	k := keyOfNode(n)
	if x.root == nil {
		x.root = x.newNode(true)
	}
	x.root = x.mutable(x.root)
	if len(x.root.items) == maxItems {
		old := x.root
		x.root = x.newNode(false)
		x.root.children = append(x.root.children, old)
		x.splitChild(x.root, 0, k)
	}
	old, replaced := x.insert(x.root, k, n)
	if !replaced {
		x.n++
	}
	return old, replaced
}

// insert puts n (key k) in the subtree of b, which x may change and which is not full.
func (x *index) insert(b *bnode, k ikey, n Node) (Node, bool) {
	for {
		i, found := b.find(k)
		if found {
			old := b.items[i]
			b.items[i] = n
			return old, true
		}
		if b.children == nil {
			b.items = append(b.items, Node{})
			copy(b.items[i+1:], b.items[i:])
			b.items[i] = n
			b.next = i + 1
			return Node{}, false
		}
		if len(b.children[i].items) == maxItems {
			x.splitChild(b, i, k)
			if c := k.compare(b.items[i]); c == 0 {
				old := b.items[i]
				b.items[i] = n
				return old, true
			} else if c > 0 {
				i++
			}
		}
		b.children[i] = x.mutable(b.children[i])
		b = b.children[i]
	}
}

// splitChild splits b's full child i around one of its items, which moves up into b
// (which has room). Where k continues a run of inserts in order — it goes right after
// the leaf's last insert, or after all of an inner node's items — the child keeps what
// comes before k and the new right node what comes after, for the run to come to fill;
// elsewhere it splits in the middle.
func (x *index) splitChild(b *bnode, i int, k ikey) {
	child := x.mutable(b.children[i])
	b.children[i] = child
	at := maxItems / 2
	switch p, _ := child.find(k); {
	case child.children == nil && p == len(child.items):
		at = maxItems - 1 // the right node starts empty and takes k
	case child.children == nil && p == child.next && p > at:
		at = min(p, maxItems-2) // k goes last into the left; the right keeps what follows
	case child.children != nil && p == len(child.items):
		at = maxItems - 2 // the right node keeps one item, so two children
	}
	right := x.newNode(child.children == nil)
	median := child.items[at]
	right.items = append(right.items, child.items[at+1:]...)
	clear(child.items[at:])
	child.items = child.items[:at]
	right.next = max(child.next-at-1, 0)
	if child.children != nil {
		right.children = append(right.children, child.children[at+1:]...)
		clear(child.children[at+1:])
		child.children = child.children[:at+1]
	}
	b.items = append(b.items, Node{})
	copy(b.items[i+1:], b.items[i:])
	b.items[i] = median
	b.children = append(b.children, nil)
	copy(b.children[i+2:], b.children[i+1:])
	b.children[i+1] = right
}

// Delete removes the node with key k and returns it.
func (x *index) Delete(k ikey) (Node, bool) {
	if x.root == nil {
		return Node{}, false
	}
	x.root = x.mutable(x.root)
	n, ok := x.remove(x.root, &k)
	if len(x.root.items) == 0 && x.root.children != nil {
		x.root = x.root.children[0]
	}
	if ok {
		x.n--
	}
	return n, ok
}

// remove removes k from the subtree of b, which x may change; a nil k removes the
// subtree's last item. Every child it descends into has more than minItems items
// first, so that removing one leaves it valid.
func (x *index) remove(b *bnode, k *ikey) (Node, bool) {
	for {
		i, found := len(b.items), false
		if k != nil {
			i, found = b.find(*k)
		}
		if b.children == nil {
			switch {
			case found:
			case k == nil && len(b.items) > 0:
				i = len(b.items) - 1
			default:
				return Node{}, false
			}
			n := b.items[i]
			copy(b.items[i:], b.items[i+1:])
			b.items[len(b.items)-1] = Node{}
			b.items = b.items[:len(b.items)-1]
			return n, true
		}
		if len(b.children[i].items) <= minItems {
			x.growChild(b, i)
			continue // the items moved: find k again
		}
		child := x.mutable(b.children[i])
		b.children[i] = child
		if found {
			// k is here, between two children: its predecessor takes its place.
			n := b.items[i]
			b.items[i], _ = x.remove(child, nil)
			return n, true
		}
		b = child
	}
}

// growChild gives b's child i more than minItems items: one from a sibling that can
// spare it, through b, or else the child merged with a sibling and their separator.
func (x *index) growChild(b *bnode, i int) {
	switch {
	case i > 0 && len(b.children[i-1].items) > minItems:
		child, left := x.mutable(b.children[i]), x.mutable(b.children[i-1])
		b.children[i], b.children[i-1] = child, left
		child.items = append(child.items, Node{})
		copy(child.items[1:], child.items)
		child.items[0] = b.items[i-1]
		last := len(left.items) - 1
		b.items[i-1] = left.items[last]
		left.items[last] = Node{}
		left.items = left.items[:last]
		if left.children != nil {
			lc := len(left.children) - 1
			child.children = append(child.children, nil)
			copy(child.children[1:], child.children)
			child.children[0] = left.children[lc]
			left.children[lc] = nil
			left.children = left.children[:lc]
		}
	case i < len(b.items) && len(b.children[i+1].items) > minItems:
		child, right := x.mutable(b.children[i]), x.mutable(b.children[i+1])
		b.children[i], b.children[i+1] = child, right
		child.items = append(child.items, b.items[i])
		b.items[i] = right.items[0]
		copy(right.items, right.items[1:])
		right.items[len(right.items)-1] = Node{}
		right.items = right.items[:len(right.items)-1]
		if right.children != nil {
			child.children = append(child.children, right.children[0])
			copy(right.children, right.children[1:])
			right.children[len(right.children)-1] = nil
			right.children = right.children[:len(right.children)-1]
		}
	default:
		if i == len(b.items) {
			i--
		}
		child, right := x.mutable(b.children[i]), b.children[i+1]
		b.children[i] = child
		child.items = append(child.items, b.items[i])
		child.items = append(child.items, right.items...)
		child.children = append(child.children, right.children...)
		copy(b.items[i:], b.items[i+1:])
		b.items[len(b.items)-1] = Node{}
		b.items = b.items[:len(b.items)-1]
		copy(b.children[i+1:], b.children[i+2:])
		b.children[len(b.children)-1] = nil
		b.children = b.children[:len(b.children)-1]
	}
}

// Ascend calls fn for every node in order until fn returns false.
func (x *index) Ascend(fn func(Node) bool) {
	if x.root != nil {
		x.root.ascend(nil, fn)
	}
}

// AscendGreaterOrEqual calls fn for every node from key k on, in order, until fn
// returns false.
func (x *index) AscendGreaterOrEqual(k ikey, fn func(Node) bool) {
	if x.root != nil {
		x.root.ascend(&k, fn)
	}
}

func (b *bnode) ascend(from *ikey, fn func(Node) bool) bool {
	i := 0
	if from != nil {
		i, _ = b.find(*from)
	}
	for ; i <= len(b.items); i++ {
		if b.children != nil && !b.children[i].ascend(from, fn) {
			return false
		}
		from = nil // everything after the first child visited is past it
		if i == len(b.items) {
			break
		}
		if !fn(b.items[i]) {
			return false
		}
	}
	return true
}
