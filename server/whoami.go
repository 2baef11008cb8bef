package server

import (
	"unicode/utf16"

	"github.com/paddock/paddock/server/wire"
)

// ZooKeeper 3.8 keeps a connection's identities in a set backed by a
// java.util.concurrent.ConcurrentHashMap (ServerCnxn.authInfo) and answers whoAmI with
// them in that set's iteration order. That order depends on the identities' hashes and
// on the order they were added, through the table's growth, so the only way to give it
// is to replay the insertions into a model of the table. The model below follows the
// map's behaviour for one thread adding keys and never removing any, which is all a
// connection does with its identities.
//
// Tree bins are modelled too, for their order only (the red-black tree is not): a
// connection holds at most maxIdentities, but a bin of a small table that fills makes
// the table grow to 128 bins, and from 64 bins on a bin holding nine or more of them
// becomes a tree, which orders its nodes differently. Neither happens by chance with so
// few identities, but a client choosing digest user names can make both happen.

// zooKeeperOrder returns ids, given in the order the connection added them, in the order
// ZooKeeper would list the same identities added in the same order. An identity listed
// twice is listed once.
func zooKeeperOrder(ids []wire.Identity) []wire.Identity {
	var t chmTable
	for _, id := range ids {
		t.add(id)
	}
	return t.keys()
}

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over the
// string's UTF-16 code units, in wrapping int32 arithmetic. A byte that is not valid
// UTF-8 counts as U+FFFD, as Go converts it; Java's decoder may replace a bad sequence
// differently, but such an id is not the one ZooKeeper would hold anyway.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// idHash is the hashCode of an org.apache.zookeeper.data.Id, as jute generates it.
func idHash(id wire.Identity) int32 {
	h := int32(17)
	h = 37*h + javaStringHash(id.Scheme)
	h = 37*h + javaStringHash(id.ID)
	return h
}

// spread is ConcurrentHashMap.spread: the high half of the hash folded into the low
// half, the sign bit cleared.
func spread(h int32) int32 {
	return (h ^ int32(uint32(h)>>16)) & 0x7fffffff
}

// ConcurrentHashMap's constants that shape the order.
const (
	chmInitialBins    = 16 // the table's size when the first key goes in
	chmTreeify        = 8  // a list bin that already holds this many nodes is converted...
	chmMinTreeifyBins = 64 // ...to a tree bin if the table has this many bins, else the table grows
	chmUntreeify      = 6  // a tree bin split by a resize into this many nodes or fewer is a list again
)

// chmTable models the bins of a ConcurrentHashMap.
type chmTable struct {
	bins    []chmBin
	count   int
	sizeCtl int // the count at which the table next doubles
}

// chmBin is one bin: its nodes in iteration order. A list bin adds a node at the tail;
// a tree bin (TreeBin) keeps its nodes in a linked list too, for iteration, but adds a
// node at the head of it.
type chmBin struct {
	nodes []chmNode
	tree  bool
}

type chmNode struct {
	hash int32 // spread
	id   wire.Identity
}

// add is putVal followed by addCount: the key goes into its bin unless it is there
// already; a list bin found to hold chmTreeify nodes or more becomes a tree, or has
// the table grow (tryPresize) while the table is small; then, if a node was added,
// the table doubles when the count reaches sizeCtl.
func (t *chmTable) add(id wire.Identity) {
	if t.bins == nil {
		t.bins = make([]chmBin, chmInitialBins)
		t.sizeCtl = chmInitialBins - chmInitialBins/4
	}
	h := spread(idHash(id))
	i := int(h) & (len(t.bins) - 1)
	b := &t.bins[i]
	if b.tree {
		if b.index(h, id) >= 0 {
			return
		}
		b.nodes = append([]chmNode{{h, id}}, b.nodes...)
	} else {
		// binCount in putVal: the position of the equal node, or the number of nodes the
		// new one is appended after; 0 for an empty bin.
		binCount := len(b.nodes)
		found := b.index(h, id)
		if found >= 0 {
			binCount = found + 1
		} else {
			b.nodes = append(b.nodes, chmNode{h, id})
		}
		if binCount >= chmTreeify {
			t.treeifyBin(i)
		}
		if found >= 0 {
			return
		}
	}
	t.count++
	for t.count >= t.sizeCtl {
		t.transfer()
	}
}

func (b *chmBin) index(h int32, id wire.Identity) int {
	for j, n := range b.nodes {
		if n.hash == h && n.id == id {
			return j
		}
	}
	return -1
}

// treeifyBin turns bin i into a tree bin, keeping its order, or, while the table has
// fewer than chmMinTreeifyBins bins, grows the table instead: tryPresize(2n) asks for a
// table of tableSizeFor(3n+1) bins and doubles until sizeCtl (three quarters of the
// table) is at least that, so a table of 16 grows to 128.
func (t *chmTable) treeifyBin(i int) {
	n := len(t.bins)
	if n >= chmMinTreeifyBins {
		t.bins[i].tree = true
		return
	}
	size := n << 1
	c := tableSizeFor(size + size>>1 + 1)
	for c > t.sizeCtl {
		t.transfer()
	}
}

// tableSizeFor is the smallest power of two that is at least c.
func tableSizeFor(c int) int {
	n := 1
	for n < c {
		n <<= 1
	}
	return n
}

// transfer doubles the table: bin i splits into bins i and i+n by the hash bit n.
//
// A list bin keeps its longest tail run of nodes that go to the same side (lastRun) in
// order, and puts each node before that run, in turn, at the head of its side's list,
// so those end up reversed. A tree bin's nodes keep their order on both sides; a side
// with chmUntreeify nodes or fewer becomes a list bin.
func (t *chmTable) transfer() {
	n := len(t.bins)
	next := make([]chmBin, 2*n)
	for i, b := range t.bins {
		if len(b.nodes) == 0 {
			continue
		}
		var lo, hi []chmNode
		if b.tree {
			for _, nd := range b.nodes {
				if int(nd.hash)&n == 0 {
					lo = append(lo, nd)
				} else {
					hi = append(hi, nd)
				}
			}
			next[i] = chmBin{nodes: lo, tree: len(lo) > chmUntreeify}
			next[i+n] = chmBin{nodes: hi, tree: len(hi) > chmUntreeify}
			continue
		}
		runBit, lastRun := int(b.nodes[0].hash)&n, 0
		for j := 1; j < len(b.nodes); j++ {
			if bit := int(b.nodes[j].hash) & n; bit != runBit {
				runBit, lastRun = bit, j
			}
		}
		run := append([]chmNode(nil), b.nodes[lastRun:]...)
		if runBit == 0 {
			lo = run
		} else {
			hi = run
		}
		for _, nd := range b.nodes[:lastRun] {
			if int(nd.hash)&n == 0 {
				lo = append([]chmNode{nd}, lo...)
			} else {
				hi = append([]chmNode{nd}, hi...)
			}
		}
		next[i] = chmBin{nodes: lo}
		next[i+n] = chmBin{nodes: hi}
	}
	t.bins = next
	t.sizeCtl = 2*n - n/2
}

// keys lists the keys as the map's iterator does: bin 0 to the last, each bin in order.
func (t *chmTable) keys() []wire.Identity {
	out := make([]wire.Identity, 0, t.count)
	for _, b := range t.bins {
		for _, nd := range b.nodes {
			out = append(out, nd.id)
		}
	}
	return out
}
