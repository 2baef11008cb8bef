package datatree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/paddock/paddock/server/wire"
)

// indexModel is what an index must hold: paths by key, compared by sorting.
type indexModel map[string]Node

func (m indexModel) sorted() []Node {
	out := make([]Node, 0, len(m))
	for _, n := range m {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Node) int { return keyOfNode(a).compare(b) })
	return out
}

func collect(x *index) []Node {
	var out []Node
	x.Ascend(func(n Node) bool { out = append(out, n); return true })
	return out
}

// checkIndex checks x against m: order, length, lookups, a range scan, and the B-tree's
// shape (every leaf at one depth, no node over maxItems or empty but the root).
func checkIndex(t *testing.T, step string, x *index, m indexModel, r *rand.Rand) {
	t.Helper()
	want := m.sorted()
	if got := collect(x); !slices.Equal(got, want) || x.Len() != len(want) {
		t.Fatalf("%s: index holds %d nodes (Len %d), want %d, or out of order", step, len(got), x.Len(), len(want))
	}
	for _, n := range want {
		if got, ok := x.Get(keyOfPath(n.Path())); !ok || got != n {
			t.Fatalf("%s: Get(%q) = %q, %v", step, n.Path(), got.rec, ok)
		}
	}
	if len(want) > 0 {
		from := want[r.IntN(len(want))]
		var got []Node
		x.AscendGreaterOrEqual(keyOfPath(from.Path()), func(n Node) bool { got = append(got, n); return true })
		i := slices.Index(want, from)
		if !slices.Equal(got, want[i:]) {
			t.Fatalf("%s: AscendGreaterOrEqual(%q) gave %d nodes, want %d", step, from.Path(), len(got), len(want)-i)
		}
	}
	depth := -1
	var walk func(b *bnode, d int, root bool)
	walk = func(b *bnode, d int, root bool) {
		if len(b.items) > maxItems || (!root && len(b.items) == 0) {
			t.Fatalf("%s: a node of %d items", step, len(b.items))
		}
		live := 0
		for i, off := range b.items {
			if int(off) >= len(b.buf) {
				t.Fatalf("%s: item %d at %d of a %d-byte buffer", step, i, off, len(b.buf))
			}
			_, k, size := b.entry(off)
			if int(k) >= len(b.kinds) || len(b.kinds) > maxKinds {
				t.Fatalf("%s: item %d names kind %d of %d", step, i, k, len(b.kinds))
			}
			live += size
		}
		if live != b.live || live > len(b.buf) {
			t.Fatalf("%s: items take %d bytes, the node counts %d, its buffer has %d", step, live, b.live, len(b.buf))
		}
		if b.children == nil {
			if depth == -1 {
				depth = d
			} else if depth != d {
				t.Fatalf("%s: leaves at depths %d and %d", step, depth, d)
			}
			return
		}
		if len(b.children) != len(b.items)+1 {
			t.Fatalf("%s: %d items, %d children", step, len(b.items), len(b.children))
		}
		for _, c := range b.children {
			walk(c, d+1, false)
		}
	}
	if x.root != nil {
		walk(x.root, 0, true)
	}
}

// TestIndexRandomized runs inserts (appends in order and at random), replaces and
// deletes against a model, cloning now and then: each clone must keep what it held
// while the original and the later clones change.
func TestIndexRandomized(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 7))
		x, m := newIndex(), indexModel{}
		type frozen struct {
			x    *index
			want []Node
		}
		var clones []frozen
		seq := 0
		for step := range 8000 {
			var path string
			switch r.IntN(5) {
			case 0: // appends under one parent, as sequential znodes
				seq++
				path = fmt.Sprintf("/s/n%08d", seq)
			case 4: // a run in order in the middle of the index, before the one above
				seq++
				path = fmt.Sprintf("/s/m%08d", seq)
			case 1:
				path = fmt.Sprintf("/p%d/c%d", r.IntN(8), r.IntN(200))
			default:
				path = fmt.Sprintf("/p%d", r.IntN(300))
			}
			if r.IntN(3) == 0 { // delete something there is, or not
				if len(m) > 0 && r.IntN(4) > 0 {
					for path = range m { // an arbitrary one
						break
					}
				}
				_, had := m[path]
				got, ok := x.Delete(keyOfPath(path))
				if ok != had || (ok && got != m[path]) {
					t.Fatalf("seed %d step %d: Delete(%q) = %v, model has it: %v", seed, step, path, ok, had)
				}
				delete(m, path)
			} else {
				// Mostly the open ACL; some nodes a list of their own, some data kept in
				// their own reference: a node's table of references fills and is renewed.
				ref, data := openACL, []byte(fmt.Sprint(step))
				switch r.IntN(10) {
				case 0:
					ref = &nodeRef{list: []wire.ACL{{Perms: wire.PermRead, Scheme: "world", ID: "anyone"}}}
				case 1:
					data = make([]byte, inlineDataMax+1+r.IntN(100))
				}
				n := newNode(path, data, &stat{czxid: int64(step)}, ref)
				prev, had := m[path]
				if r.IntN(5) == 0 { // a create: what is there stays
					found, exists := x.InsertNew(n)
					if exists != had || found != prev {
						t.Fatalf("seed %d step %d: InsertNew(%q) found %v, model had it: %v", seed, step, path, exists, had)
					}
					if !had {
						m[path] = n
					}
				} else {
					old, replaced := x.ReplaceOrInsert(n)
					if replaced != had || old != prev {
						t.Fatalf("seed %d step %d: ReplaceOrInsert(%q) replaced %v, model had it: %v", seed, step, path, replaced, had)
					}
					m[path] = n
				}
			}
			if step%500 == 0 {
				clones = append(clones, frozen{x.Clone(), m.sorted()})
			}
			if step%2000 == 1999 {
				checkIndex(t, fmt.Sprintf("seed %d step %d", seed, step), x, m, r)
			}
		}
		for i, c := range clones {
			if got := collect(c.x); !slices.Equal(got, c.want) {
				t.Fatalf("seed %d: clone %d changed: %d nodes, had %d", seed, i, len(got), len(c.want))
			}
		}
		// Empty it: the root goes back to a leaf.
		for _, n := range m.sorted() {
			if _, ok := x.Delete(keyOfPath(n.Path())); !ok {
				t.Fatalf("seed %d: %q not deleted", seed, n.Path())
			}
			delete(m, n.Path())
		}
		checkIndex(t, fmt.Sprintf("seed %d emptied", seed), x, m, r)
	}
}

// TestIndexAppendsFill: nodes appended in order fill their B-tree nodes, where a split
// in the middle would leave them half empty.
func TestIndexAppendsFill(t *testing.T) {
	x := newIndex()
	const n = 100_000
	for i := range n {
		x.ReplaceOrInsert(newNode(fmt.Sprintf("/q/n%08d", i), nil, &stat{}, openACL))
	}
	nodes := 0
	var walk func(b *bnode)
	walk = func(b *bnode) {
		nodes++
		for _, c := range b.children {
			walk(c)
		}
	}
	walk(x.root)
	if fill := float64(n) / float64(nodes*maxItems); fill < 0.95 {
		t.Fatalf("%d appends fill %d B-tree nodes %.0f %%", n, nodes, fill*100)
	}
}

// TestIndexDeleteDeep deletes most of a three-level index in random order — items of
// inner nodes, steals and merges at every level — while a clone taken before keeps all.
func TestIndexDeleteDeep(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x, m := newIndex(), indexModel{}
	for i := range 50_000 {
		n := newNode(fmt.Sprintf("/d%d/n%06d", i%3, i), nil, &stat{}, openACL)
		x.ReplaceOrInsert(n)
		m[n.Path()] = n
	}
	if x.root.children == nil || x.root.children[0].children == nil {
		t.Fatal("the index is not three levels deep")
	}
	before := m.sorted()
	clone := x.Clone()
	order := r.Perm(len(before))
	for j, i := range order[:45_000] {
		path := before[i].Path()
		if _, ok := x.Delete(keyOfPath(path)); !ok {
			t.Fatalf("%q not deleted", path)
		}
		delete(m, path)
		if j%15_000 == 14_999 {
			checkIndex(t, fmt.Sprintf("after %d deletes", j+1), x, m, r)
		}
	}
	if got := collect(clone); !slices.Equal(got, before) {
		t.Fatalf("the clone changed: %d nodes, had %d", len(got), len(before))
	}
}

// TestIndexRefTableRenewed: a node whose items keep changing to references of their own
// (lists of their own, data over inlineDataMax) renews its table of kinds, which entries
// name in a byte, when it fills — before its buffer does, where the other items are
// large.
func TestIndexRefTableRenewed(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x, m := newIndex(), indexModel{}
	put := func(n Node) {
		x.ReplaceOrInsert(n)
		m[n.Path()] = n
	}
	for i := range maxItems - 2 {
		put(newNode(fmt.Sprintf("/r/big%02d", i), make([]byte, inlineDataMax), &stat{}, openACL))
	}
	renewed := false
	for i := range 4 * maxKinds {
		if i%2 == 0 {
			put(newNode("/r/x", make([]byte, inlineDataMax+1), &stat{czxid: int64(i)}, openACL))
		} else {
			put(newNode("/r/x", nil, &stat{czxid: int64(i)}, &nodeRef{list: []wire.ACL{{Perms: wire.PermRead, Scheme: "ip", ID: fmt.Sprint(i)}}}))
		}
		renewed = renewed || len(x.root.kinds) == maxKinds
		if got, _ := x.Get(keyOfPath("/r/x")); got != m["/r/x"] {
			t.Fatalf("put %d: /r/x has reference %p, want %p", i, got.ref, m["/r/x"].ref)
		}
	}
	if x.root.children != nil || !renewed {
		t.Fatalf("the test did not fill one node's table (a leaf: %v)", x.root.children == nil)
	}
	checkIndex(t, "after many references", x, m, r)
}

// TestIndexCloneReadOnly: a clone shares the original's buffers, which the original
// writes on into: a write to the clone is a bug, and panics.
func TestIndexCloneReadOnly(t *testing.T) {
	x := newIndex()
	x.ReplaceOrInsert(newNode("/a", nil, &stat{}, openACL))
	c := x.Clone()
	for name, write := range map[string]func(){
		"ReplaceOrInsert": func() { c.ReplaceOrInsert(newNode("/b", nil, &stat{}, openACL)) },
		"Delete":          func() { c.Delete(keyOfPath("/a")) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on a clone did not panic", name)
				}
			}()
			write()
		}()
	}
	if c.Len() != 1 || x.Len() != 1 {
		t.Fatalf("the clone holds %d nodes, the original %d; want 1 and 1", c.Len(), x.Len())
	}
}

// TestIndexBufferRoom bounds the room the B-tree nodes' buffers hold beyond their live
// entries: for znodes created in order, in decimal (which is not their names' order), at
// random, and for a few znodes set over and over, which make their nodes hot.
func TestIndexBufferRoom(t *testing.T) {
	room := func(x *index) float64 {
		var live, capacity int
		var walk func(b *bnode)
		walk = func(b *bnode) {
			live += b.live
			capacity += cap(b.buf)
			for _, c := range b.children {
				walk(c)
			}
		}
		walk(x.root)
		return float64(capacity)/float64(live) - 1
	}
	data := make([]byte, 100)
	const n = 50_000
	for _, c := range []struct {
		name string
		at   func(i int) int
		most float64
	}{
		{"in order", func(i int) int { return i }, 0.20},
		{"at random", func(i int) int { return int(uint32(i) * 2654435761 % n) }, 0.25},
	} {
		x := newIndex()
		for i := range n {
			x.ReplaceOrInsert(newNode(fmt.Sprintf("/bench/create-x-1/%d", c.at(i)), data, &stat{czxid: 1 << 32}, openACL))
		}
		r := room(x)
		t.Logf("%s: %.0f %% room", c.name, 100*r)
		if r > c.most {
			t.Errorf("%s: the buffers hold %.0f %% more than their entries, want at most %.0f %%", c.name, 100*r, 100*c.most)
		}
	}
	x := newIndex()
	for i := range n {
		x.ReplaceOrInsert(newNode(fmt.Sprintf("/s/%06d", i), data, &stat{}, openACL))
	}
	for i := range 20 * n {
		x.ReplaceOrInsert(newNode(fmt.Sprintf("/s/%06d", i%1000), data, &stat{version: int32(i)}, openACL))
	}
	r := room(x)
	t.Logf("after the sets: %.0f %% room", 100*r)
	if r > 0.30 {
		t.Errorf("after sets on 1,000 of %d znodes the buffers hold %.0f %% more than their entries, want at most 30 %%", n, 100*r)
	}
}

// TestIndexLongNames: entries of long names — a path may be as long as a request —
// split a node by its bytes before its items fill it, which keeps every node's buffer
// within what its 32-bit offsets address. maxNodeBytes is lowered to 16 KiB here, the
// names are up to 8 KiB: the shape and the checks are the same as at 256 MiB and 512.
func TestIndexLongNames(t *testing.T) {
	defer func(v int) { maxNodeBytes = v }(maxNodeBytes)
	maxNodeBytes = 16 << 10
	r := rand.New(rand.NewPCG(8, 9))
	x, m := newIndex(), indexModel{}
	name := func(i int) string {
		return fmt.Sprintf("/l/%06d-%s", i, strings.Repeat("n", r.IntN(8<<10)))
	}
	for i := range 3000 {
		if r.IntN(4) == 0 && len(m) > 0 {
			for path := range m {
				x.Delete(keyOfPath(path))
				delete(m, path)
				break
			}
			continue
		}
		at := i
		if r.IntN(2) == 0 {
			at = r.IntN(1_000_000) // at random, besides the run in order
		}
		n := newNode(name(at), nil, &stat{}, openACL)
		x.ReplaceOrInsert(n)
		m[n.Path()] = n
	}
	checkIndex(t, "long names", x, m, r)
	most := 0
	var walk func(b *bnode)
	walk = func(b *bnode) {
		most = max(most, b.live)
		for _, c := range b.children {
			walk(c)
		}
	}
	walk(x.root)
	// Over the limit by what an insert and a rotation bring at most: two entries.
	t.Logf("the largest node takes %d bytes (limit %d)", most, maxNodeBytes)
	if most > maxNodeBytes+2*(9<<10) {
		t.Fatalf("a node takes %d bytes, over the limit of %d by more than two entries", most, maxNodeBytes)
	}
}
