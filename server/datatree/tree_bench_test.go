package datatree

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/paddock/paddock/server/wire"
)

// benchTree returns a tree of n nodes: /bench/d<i/1000>/n<i>, 1000 children a parent.
func benchTree(n int) (*Tree, []string) {
	t := New()
	t.Create("/bench", nil, wire.OpenACLUnsafe, 0, 1, 1)
	paths := make([]string, 0, n)
	for i := 0; i < n; i++ {
		dir := fmt.Sprintf("/bench/d%d", i/1000)
		if i%1000 == 0 {
			t.Create(dir, nil, wire.OpenACLUnsafe, 0, int64(i+2), 1)
		}
		p := fmt.Sprintf("%s/n%d", dir, i)
		t.Create(p, make([]byte, 100), wire.OpenACLUnsafe, 0, int64(i+2), 1)
		paths = append(paths, p)
	}
	return t, paths
}

func BenchmarkGet(b *testing.B) {
	t, paths := benchTree(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !t.Get(paths[i%len(paths)]).Exists() {
			b.Fatal("missing")
		}
	}
}

func BenchmarkSetData(b *testing.B) {
	t, paths := benchTree(100_000)
	data := make([]byte, 100)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t.SetData(paths[i%len(paths)], data, int64(i), 1)
	}
}

func BenchmarkCreateDelete(b *testing.B) {
	t, _ := benchTree(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t.Create("/bench/d7/x", nil, wire.OpenACLUnsafe, 0, int64(i), 1)
		t.Delete("/bench/d7/x", int64(i))
	}
}

func BenchmarkChildren1000(b *testing.B) {
	t, _ := benchTree(10_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(t.Children("/bench/d3")) != 1000 {
			b.Fatal("children")
		}
	}
}

// BenchmarkSnapshotRecords encodes a 100k-node tree's snapshot; the clone itself is O(1).
func BenchmarkSnapshotRecords(b *testing.B) {
	t, _ := benchTree(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 0
		t.Snapshot().Records(func(p []byte) error { n += len(p); return nil })
		b.SetBytes(int64(n))
	}
}

// BenchmarkMemoryPerNode reports the live heap per znode of 100 bytes of data, as
// created from requests (each with its own decoded ACL list and path).
func BenchmarkMemoryPerNode(b *testing.B) {
	const nodes = 200_000
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		t := New()
		t.Create("/bench", nil, wire.OpenACLUnsafe, 0, 1, 1)
		for j := 0; j < nodes; j++ {
			dir := fmt.Sprintf("/bench/d%d", j/1000)
			if j%1000 == 0 {
				t.Create(dir, nil, wire.OpenACLUnsafe, 0, int64(j+2), 1)
			}
			acl := []wire.ACL{{Perms: 31, Scheme: string([]byte("world")), ID: string([]byte("anyone"))}}
			t.Create(fmt.Sprintf("%s/n%07d", dir, j), make([]byte, 100), acl, 0, int64(j+2), 1)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/nodes, "B/node")
		runtime.KeepAlive(t)
	}
}

// BenchmarkSnapshotLoad rebuilds a 1M-node tree from its snapshot records: most of a
// restart's work.
func BenchmarkSnapshotLoad(b *testing.B) {
	t, _ := benchTree(1_000_000)
	var records [][]byte
	t.Snapshot().Records(func(p []byte) error {
		records = append(records, append([]byte(nil), p...))
		return nil
	})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l := NewLoader()
		for _, r := range records {
			if err := l.Add(r); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := l.Tree(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryBreakdown splits the live heap of a tree of 1M znodes of 100 bytes
// (the benchmark's /bench/d<i/1000>/n<i> layout) into its parts, per znode: the ordered
// index's structure (its B-tree nodes, counted from their shape: a node's struct, its
// items array and an inner node's children array, each in its allocator size class),
// the B-tree nodes' record buffers (each znode's path, stat and data, with the buffers'
// room to grow), and the rest. docs/performance.md, "Memory", has the figures.
func BenchmarkMemoryBreakdown(b *testing.B) {
	const n = 1_000_000
	heap := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	per := func(bytes int64) float64 { return float64(bytes) / n }
	for i := 0; i < b.N; i++ {
		paths := make([]string, n)
		for j := range paths {
			paths[j] = fmt.Sprintf("/bench/d%d/n%d", j/1000, j)
		}
		base := heap()
		t := New()
		t.Create("/bench", nil, wire.OpenACLUnsafe, 0, 1, 1)
		for j, p := range paths {
			if j%1000 == 0 {
				t.Create(fmt.Sprintf("/bench/d%d", j/1000), nil, wire.OpenACLUnsafe, 0, int64(j+2), 1)
			}
			t.Create(p, make([]byte, 100), wire.OpenACLUnsafe, 0, int64(j+2), 1)
		}
		total := heap() - base
		var index, buffers, live int64
		var walk func(bn *bnode)
		walk = func(bn *bnode) {
			index += 384 // the struct, with its array of 63 items, in its size class
			buffers += int64(cap(bn.buf))
			live += int64(bn.live)
			if bn.children != nil {
				index += 512 // the children array, 64 pointers
				for _, c := range bn.children {
					walk(c)
				}
			}
		}
		walk(t.index.root)
		runtime.KeepAlive(t)
		runtime.KeepAlive(paths) // live before base: not to be freed inside the measurement
		b.ReportMetric(per(index), "index-B/node")
		b.ReportMetric(per(buffers), "records-B/node")
		b.ReportMetric(per(live), "entries-B/node")
		b.ReportMetric(per(total-index-buffers), "rest-B/node")
		b.ReportMetric(per(total), "B/node")
	}
}
