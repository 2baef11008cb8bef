package datatree

import (
	"math"
	"slices"
	"strings"
	"unsafe"
)

// index is the tree's ordered set of nodes: a copy-on-write B-tree keyed by (parent path,
// name), so that a node's children are one contiguous, sorted range and every parent
// sorts before its children.
//
// It is google/btree's design, written for this one item type for three reasons. First,
// how full it stays: a B-tree that splits a full node in the middle leaves every node it
// fills in order — sequential znodes, a snapshot's load — half empty, which for a tree
// of small znodes cost 26 bytes a znode. This one splits a leaf where its last insert
// went when the next goes right after it (InnoDB's insert-direction rule), so a run
// in order fills its leaves wherever in the index it runs, and an inner node at its end
// when the item goes after all of it. Second, the key: a lookup splits its path into
// (parent, name) once, not once per comparison. Third, where the records live: each
// B-tree node keeps its items' records in one buffer of its own, an item is the record's
// offset there, and the parents' paths and ACL references are once in the node's table.
// The garbage collector sees a few objects per B-tree node where it saw a record string
// and an ACL pointer per znode — a million objects to mark in every cycle at a million
// znodes, which held up writes during a collection — and a path costs its last segment
// (docs/performance.md, "Memory").
//
// Clone is O(1): both indexes then share every node, and the original copies a node
// before it changes it (the node's cow is not the index's). A clone is read-only (a
// snapshot's); the original may change while another goroutine reads it.
type index struct {
	root *bnode
	n    int
	cow  *cowToken
	// loading is set while a snapshot's nodes are inserted, all in order: a right node
	// split off the end then gets room for a whole node's records at once.
	loading  bool
	readOnly bool // a clone
}

// cowToken marks the nodes an index may change in place. It also counts the index's
// buffer rebuilds, which tell a node that is being rewritten (reserve).
type cowToken struct{ rebuilds uint64 }

const (
	maxItems = 63           // items in a node; a node has one child more
	minItems = maxItems / 4 // (not half: see growChild)
	maxKinds = 256          // the size of a node's table of kinds: an entry names one in a byte
)

// maxNodeBytes is the most entry bytes a node takes before it splits, whatever its number
// of items: an item is a 32-bit offset, and a path may be as long as a request (up to
// 512 MiB with max_buffer). A node over it by an entry or two, merged with a sibling,
// with a rebuild's room, stays well under 4 GiB. (A variable for the tests.)
var maxNodeBytes = 256 << 20

// full reports whether b must split before an insert goes into it: it holds maxItems
// items, or more than maxNodeBytes of entries in three items or more (so that both
// halves keep one).
func (b *bnode) full() bool {
	return len(b.items) == maxItems || (b.live > maxNodeBytes && len(b.items) >= 3)
}

// bnode is one node of the B-tree.
//
// Its items' records are entries in buf — uvarint length of the record, a byte that
// indexes kinds (the item's parent and ACL reference), the record — and items holds
// where each entry starts, in key order. Items in one node are mostly siblings with
// one ACL list: their parent's path and reference are there once.
//
// An entry, once written, never changes: a Node handed out points into buf and stays
// valid. A change writes a new entry at the end and leaves the old one as garbage; when
// buf has no room left, rebuild copies the live entries into a new buffer. A copy of a
// node made for copy-on-write shares buf and writes on after its end: the index a node
// is copied from is a read-only clone, which never writes into it.
type bnode struct {
	items    []uint32 // entry offsets in buf, sorted by key: a slice of arr
	children []*bnode // nil in a leaf; capacity maxItems+1
	cow      *cowToken
	// next is where an insert right after a leaf's last one goes (0: no insert yet).
	next  int
	buf   []byte
	kinds []kind // what entries name; entries of removed items may name some
	live  int    // the bytes of buf that items' entries take
	arr   [maxItems]uint32
	// rebuiltAt is the index's rebuild count at the node's last rebuild.
	rebuiltAt uint64
}

// kind is what a node's entries share: the parent's path and the ACL reference.
type kind struct {
	parent string
	ref    *nodeRef
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

func (k ikey) compare(n Node) int { return k.compareKey(key(n)) }

func (k ikey) compareKey(parent, name string) int {
	if c := strings.Compare(k.parent, parent); c != 0 {
		return c
	}
	return strings.Compare(k.name, name)
}

func newIndex() *index { return &index{cow: new(cowToken)} }

// Len returns the number of nodes.
func (x *index) Len() int { return x.n }

// Clone returns an index holding what x holds, in O(1).
func (x *index) Clone() *index {
	x.cow = &cowToken{rebuilds: x.cow.rebuilds}
	return &index{root: x.root, n: x.n, cow: new(cowToken), readOnly: true}
}

// writable panics if x is a clone: writing into a buffer the original shares would
// change nodes under it.
func (x *index) writable() {
	if x.readOnly {
		panic("datatree: write to a clone of the index")
	}
}

func (x *index) newNode(leaf bool) *bnode {
	b := &bnode{cow: x.cow}
	b.items = b.arr[:0]
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
	c.buf, c.live = b.buf, b.live
	c.kinds = append(make([]kind, 0, len(b.kinds)+1), b.kinds...)
	return c
}

// The entries of buf.

// entry returns the record and kind of the entry at off, and the entry's size.
func (b *bnode) entry(off uint32) (rec string, k byte, size int) {
	s := b.buf[off:]
	l, n := uint64(s[0]), 1
	if l >= 0x80 {
		l, n = uvarintString(unsafe.String(&s[0], len(s)))
	}
	return unsafe.String(&s[n+1], int(l)), s[n], n + 1 + int(l)
}

// key returns item i's key.
func (b *bnode) key(i int) (parent, name string) {
	rec, k, _ := b.entry(b.items[i])
	l, n := uvarintString(rec)
	return b.kinds[k].parent, rec[n : n+int(l)]
}

// node returns item i.
func (b *bnode) node(i int) Node {
	rec, k, _ := b.entry(b.items[i])
	return Node{parent: b.kinds[k].parent, rec: rec, ref: b.kinds[k].ref}
}

func (b *bnode) size(i int) int {
	_, _, n := b.entry(b.items[i])
	return n
}

func entrySize(n Node) int { return uvarintLen(uint64(len(n.rec))) + 1 + len(n.rec) }

// parentOf returns n's parent's path as b keeps it: the string another of its kinds
// has, or a copy — n's may be part of a longer string, or of a snapshot's buffer that
// is about to be reused.
func (b *bnode) parentOf(n Node) string {
	for _, k := range b.kinds {
		if k.parent == n.parent {
			return k.parent
		}
	}
	return strings.Clone(n.parent)
}

// kindIndex returns where n's kind is in b's kinds, or -1.
func (b *bnode) kindIndex(n Node) int {
	for i, k := range b.kinds {
		if k.ref == n.ref && k.parent == n.parent {
			return i
		}
	}
	return -1
}

// store writes n's entry into b's buffer, which x may change, and returns its offset.
// It may rebuild the buffer first, which moves every item's entry.
func (b *bnode) store(n Node) uint32 {
	size := entrySize(n)
	if len(b.kinds) == maxKinds && b.kindIndex(n) < 0 {
		b.rebuild(grow(b.live, size))
	} else {
		b.reserve(size)
	}
	k := b.kindIndex(n) // (after a rebuild, which renumbers the kinds)
	if k < 0 {
		k = len(b.kinds)
		b.kinds = append(b.kinds, kind{parent: b.parentOf(n), ref: n.ref})
	}
	off := len(b.buf)
	if off > math.MaxUint32 {
		panic("datatree: a B-tree node's entries passed 4 GiB") // full splits such a node first
	}
	b.buf = appendEntry(b.buf, n.rec, byte(k))
	b.live += size
	return uint32(off)
}

func appendEntry(buf []byte, rec string, k byte) []byte {
	l := uint64(len(rec))
	for ; l >= 0x80; l >>= 7 {
		buf = append(buf, byte(l)|0x80)
	}
	buf = append(buf, byte(l), k)
	return append(buf, rec...)
}

// reserve makes room in b's buffer for n bytes of entries, rebuilding it if it has not.
//
// A node rebuilt again within the index's last hotRebuilds rebuilds is one that writes
// keep rewriting — a parent taking children, znodes set over and over — and it is given
// room for as much garbage as it made since, up to a quarter of its entries more: each
// rebuild copies the whole node, and a write to a hot node copied about nine entries'
// worth with an eighth's room, four with three eighths'. A node rewritten now and then
// keeps an eighth: a tree written all over at random is not held at three eighths more.
func (b *bnode) reserve(n int) {
	if cap(b.buf)-len(b.buf) < n {
		spare := grow(b.live, n)
		if b.cow.rebuilds-b.rebuiltAt < hotRebuilds {
			spare += min(len(b.buf)-b.live, b.live/4)
		}
		b.rebuild(spare)
	}
}

const hotRebuilds = 64

// grow is the room a rebuild leaves for n bytes more in a buffer of live bytes: an eighth
// of both more. Nodes filling at random grow into their buffers over and over; with a
// quarter (and a whole node's room for a node split off a run), 300,000 znodes created
// in order under one parent, their numbers in decimal, left a third of their buffers
// unused, and 13 % with an eighth.
func grow(live, n int) int { return n + (live+n)/8 }

// rebuild copies b's live entries, in item order, into a new buffer with room for
// spare bytes more, and keeps in kinds only the ones they name.
func (b *bnode) rebuild(spare int) {
	b.cow.rebuilds++
	b.rebuiltAt = b.cow.rebuilds
	// The allocation's size class may hold more than asked for: the buffer takes it.
	buf := slices.Grow([]byte(nil), b.live+spare)
	if len(b.buf) == b.live && len(b.kinds) < maxKinds {
		// No garbage: the entries keep their offsets, and the kinds they name.
		b.buf = append(buf, b.buf...)
		return
	}
	var kinds []kind
	for i, off := range b.items {
		rec, k, _ := b.entry(off)
		have := b.kinds[k]
		j := len(kinds) - 1
		for ; j >= 0 && kinds[j] != have; j-- {
		}
		if j < 0 {
			j = len(kinds)
			kinds = append(kinds, have)
		}
		b.items[i] = uint32(len(buf))
		buf = appendEntry(buf, rec, byte(j))
	}
	b.buf, b.kinds = buf, kinds
}

// trim rebuilds b's buffer when it holds more than spare bytes beyond its live entries,
// and a 32nd more.
func (b *bnode) trim(spare int) {
	if cap(b.buf)-b.live > spare+b.live/32+64 {
		b.rebuild(spare)
	}
}

// The items of a node that x may change.

// insertAt inserts n as b's item i.
func (b *bnode) insertAt(i int, n Node) {
	off := b.store(n)
	b.items = append(b.items, 0)
	copy(b.items[i+1:], b.items[i:])
	b.items[i] = off
}

// set replaces b's item i with n and returns the item it replaced.
func (b *bnode) set(i int, n Node) Node {
	old := b.node(i)
	off := b.store(n) // (after old: a rebuild moves it)
	b.live -= b.size(i)
	b.items[i] = off
	return old
}

// removeAt removes b's item i and returns it.
func (b *bnode) removeAt(i int) Node {
	n := b.node(i)
	b.live -= b.size(i)
	copy(b.items[i:], b.items[i+1:])
	b.items = b.items[:len(b.items)-1]
	if cap(b.buf) > 4096 && b.live < cap(b.buf)/4 {
		b.rebuild(b.live / 4) // most of it went: give the rest back
	}
	return n
}

// find returns where k is in b's items, or where it would go.
func (b *bnode) find(k ikey) (int, bool) {
	lo, hi := 0, len(b.items)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := k.compareKey(b.key(mid)); {
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
			return b.node(i), true
		}
		if b.children == nil {
			break
		}
		b = b.children[i]
	}
	return Node{}, false
}

// ReplaceOrInsert puts n in the index and returns the node it replaced, if any. The
// index keeps a copy of n's record: n's own may be let go.
func (x *index) ReplaceOrInsert(n Node) (Node, bool) { return x.put(n, true) }

// InsertNew puts n in the index unless a node with its key is there, and returns that
// node, true, or the zero Node, false.
func (x *index) InsertNew(n Node) (Node, bool) { return x.put(n, false) }

// put puts n in the index, in the place of a node with its key if replace, and returns
// the node found with its key, if any.
func (x *index) put(n Node, replace bool) (Node, bool) {
	x.writable()
	k := keyOfNode(n)
	if x.root == nil {
		x.root = x.newNode(true)
	}
	x.root = x.mutable(x.root)
	if x.root.full() {
		old := x.root
		x.root = x.newNode(false)
		x.root.children = append(x.root.children, old)
		x.splitChild(x.root, 0, k)
	}
	old, found := x.insert(x.root, k, n, replace)
	if !found {
		x.n++
	}
	return old, found
}

// insert puts n (key k) in the subtree of b, which x may change and which is not full;
// a node with key k stays unless replace.
func (x *index) insert(b *bnode, k ikey, n Node, replace bool) (Node, bool) {
	for {
		i, found := len(b.items), false
		// A snapshot's nodes come in order: each goes after all of every node on its way.
		if !x.loading || i == 0 || k.compareKey(b.key(i-1)) <= 0 {
			i, found = b.find(k)
		}
		if b.children == nil && !found {
			b.insertAt(i, n)
			b.next = i + 1
			return Node{}, false
		}
		if !found && b.children[i].full() {
			x.splitChild(b, i, k)
			if c := k.compareKey(b.key(i)); c == 0 {
				found = true
			} else if c > 0 {
				i++
			}
		}
		switch {
		case found && replace:
			return b.set(i, n), true
		case found:
			return b.node(i), true
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
	at := len(child.items) / 2
	// Where a run goes on, the left node is done: its buffer keeps no room. A right node
	// split off the end gets an eighth of the child's records' worth — runs of live
	// inserts are short and a little out of order (grow) — or in a snapshot's load,
	// which is one run, all of it. Split in the middle, each half gets an eighth more.
	moved := func() (n int) {
		for j := at + 1; j < len(child.items); j++ {
			n += child.size(j)
		}
		return n
	}
	var spare, rightSpare int
	switch p, _ := child.find(k); {
	case len(child.items) < maxItems: // full of bytes: split in the middle
		spare, rightSpare = -1, moved()/8
	case child.children == nil && p == len(child.items):
		at = maxItems - 1 // the right node starts empty and takes k
		rightSpare = child.live / 8
		if x.loading {
			rightSpare = child.live
		}
	case child.children == nil && p == child.next && p > at:
		at = min(p, maxItems-2) // k goes last into the left; the right keeps what follows
		spare = child.live / 8
	case child.children != nil && p == len(child.items):
		at = maxItems - 2 // the right node keeps one item, so two children
		rightSpare = child.live / 8
		if x.loading {
			rightSpare = child.live
		}
	default:
		spare, rightSpare = -1, moved()/8
	}
	right := x.newNode(child.children == nil)
	movedBytes := moved()
	// The entries move as they are, with the kinds they name (the same strings).
	right.buf = slices.Grow([]byte(nil), movedBytes+rightSpare)
	var kindOf [maxKinds]int16
	for j := at + 1; j < len(child.items); j++ {
		rec, k, _ := child.entry(child.items[j])
		if kindOf[k] == 0 {
			right.kinds = append(right.kinds, child.kinds[k])
			kindOf[k] = int16(len(right.kinds))
		}
		right.items = append(right.items, uint32(len(right.buf)))
		right.buf = appendEntry(right.buf, rec, byte(kindOf[k]-1))
	}
	right.live = movedBytes
	median := child.node(at)
	child.live -= movedBytes + child.size(at)
	child.items = child.items[:at]
	if spare < 0 {
		spare = child.live / 8
	}
	child.trim(spare)
	right.next = max(child.next-at-1, 0)
	if child.children != nil {
		right.children = append(right.children, child.children[at+1:]...)
		clear(child.children[at+1:])
		child.children = child.children[:at+1]
	}
	b.insertAt(i, median)
	b.children = append(b.children, nil)
	copy(b.children[i+2:], b.children[i+1:])
	b.children[i+1] = right
}

// Delete removes the node with key k and returns it.
func (x *index) Delete(k ikey) (Node, bool) {
	x.writable()
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
// subtree's last item. A child it descends into with minItems items or fewer is grown
// first, once (growChild): that leaves it at least two items, so that removing one leaves
// it valid, and takes at most one item from b, which has two or more unless it is the
// root. Nodes split by their bytes (full) can hold few items, so one growth need not
// bring a child past minItems; a root left with no items and one child is passed
// through, and Delete lifts the child in its place.
func (x *index) remove(b *bnode, k *ikey) (Node, bool) {
	grown := false
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
			return b.removeAt(i), true
		}
		if !grown && len(b.items) > 0 && b.children[i].underfull() {
			x.growChild(b, i)
			grown = true
			continue // the items moved: find k again
		}
		grown = false
		child := x.mutable(b.children[i])
		b.children[i] = child
		if found {
			// k is here, between two children: its predecessor takes its place.
			pred, _ := x.remove(child, nil)
			return b.set(i, pred), true
		}
		b = child
	}
}

// growChild gives b's child i, which is underfull, more items: one from a sibling that
// can lend it, through b, or else the child merged with a sibling and their separator.
// A merge that would pass maxNodeBytes takes one item from a sibling of two or more
// instead, when there is one.
//
// minItems is a quarter of a node, not the half that makes every node at least half
// full: with half, a node split in two by an insert is two nodes at the minimum, and a
// delete from one merges them back — a create and a delete in turn under one parent
// split and merged a node each time, and each moves and rebuilds record buffers. With a
// quarter, a merge makes a node half full, far from the next split.
func (x *index) growChild(b *bnode, i int) {
	hasLeft, hasRight := i > 0, i < len(b.items)
	switch {
	case hasLeft && b.children[i-1].canLend():
		x.takeFromLeft(b, i)
	case hasRight && b.children[i+1].canLend():
		x.takeFromRight(b, i)
	default:
		j := min(i, len(b.items)-1) // children j and j+1 merge
		switch {
		case b.children[j].live+b.size(j)+b.children[j+1].live <= maxNodeBytes:
			x.merge(b, j)
		case hasLeft && len(b.children[i-1].items) >= 2:
			x.takeFromLeft(b, i)
		case hasRight && len(b.children[i+1].items) >= 2:
			x.takeFromRight(b, i)
		default:
			x.merge(b, j) // two nodes of one item: three large entries
		}
	}
}

// underfull reports whether a node should grow before a remove descends into it: it has
// one item, or few items and few bytes.
func (b *bnode) underfull() bool {
	return len(b.items) < 2 || (len(b.items) <= minItems && b.live <= maxNodeBytes/2)
}

// canLend reports whether a node can give a sibling an item and not become underfull.
func (b *bnode) canLend() bool {
	return len(b.items) > minItems || (len(b.items) > 2 && b.live > maxNodeBytes/2)
}

// takeFromLeft moves b's separator before child i into it, and its left sibling's last
// item into b.
func (x *index) takeFromLeft(b *bnode, i int) {
	child, left := x.mutable(b.children[i]), x.mutable(b.children[i-1])
	b.children[i], b.children[i-1] = child, left
	child.insertAt(0, b.node(i-1))
	b.set(i-1, left.removeAt(len(left.items)-1))
	if left.children != nil {
		lc := len(left.children) - 1
		child.children = append(child.children, nil)
		copy(child.children[1:], child.children)
		child.children[0] = left.children[lc]
		left.children[lc] = nil
		left.children = left.children[:lc]
	}
}

// takeFromRight moves b's separator after child i into it, and its right sibling's first
// item into b.
func (x *index) takeFromRight(b *bnode, i int) {
	child, right := x.mutable(b.children[i]), x.mutable(b.children[i+1])
	b.children[i], b.children[i+1] = child, right
	child.insertAt(len(child.items), b.node(i))
	b.set(i, right.removeAt(0))
	if right.children != nil {
		child.children = append(child.children, right.children[0])
		copy(right.children, right.children[1:])
		right.children[len(right.children)-1] = nil
		right.children = right.children[:len(right.children)-1]
	}
}

// merge makes b's children j and j+1, with their separator, one node.
func (x *index) merge(b *bnode, j int) {
	child, right := x.mutable(b.children[j]), b.children[j+1]
	b.children[j] = child
	child.reserve(b.size(j) + right.live)
	child.insertAt(len(child.items), b.removeAt(j))
	for k := range right.items {
		child.insertAt(len(child.items), right.node(k))
	}
	child.children = append(child.children, right.children...)
	copy(b.children[j+1:], b.children[j+2:])
	b.children[len(b.children)-1] = nil
	b.children = b.children[:len(b.children)-1]
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
		if !fn(b.node(i)) {
			return false
		}
	}
	return true
}
