package datatree

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/paddock/paddock/server/wire"
)

// sampleTree builds a tree with every kind of node, a deep path, null and empty data,
// several ACLs and sessions.
func sampleTree() *Tree {
	t := New()
	zxid := int64(0)
	next := func() int64 { zxid++; t.SetLastZxid(zxid); return zxid }
	t.AddSession(&Session{ID: 7, Timeout: 4000, Password: []byte("0123456789abcdef")})
	t.AddSession(&Session{ID: 9, Timeout: 6000, Password: make([]byte, 16)})
	t.Create("/a", []byte("x"), wire.OpenACLUnsafe, 0, next(), 1000)
	t.Create("/a/b", nil, []wire.ACL{{Perms: 1, Scheme: "digest", ID: "u:h"}, {Perms: 31, Scheme: "ip", ID: "10.0.0.0/8"}}, 0, next(), 1001)
	t.Create("/a/b/c", []byte{}, wire.OpenACLUnsafe, 0, next(), 1002)
	t.Create("/a/e", []byte("eph"), wire.OpenACLUnsafe, 7, next(), 1003)
	t.Create("/cont", nil, wire.OpenACLUnsafe, ContainerOwner, next(), 1004)
	t.Create("/ttl", nil, wire.OpenACLUnsafe, TTLOwner(5000), next(), 1005)
	t.Create("/a/gone", nil, wire.OpenACLUnsafe, 0, next(), 1006)
	t.Delete("/a/gone", next())
	t.SetData("/a", []byte("changed"), next(), 1008)
	t.SetACL("/a/b/c", wire.ReadACLUnsafe)
	return t
}

func roundTrip(t *testing.T, s *Snapshot) *Tree {
	t.Helper()
	l := NewLoader()
	if err := s.Records(l.Add); err != nil {
		t.Fatal(err)
	}
	tr, err := l.Tree()
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestSnapshotRoundTrip(t *testing.T) {
	orig := sampleTree()
	got := roundTrip(t, orig.Snapshot())
	if got.Digest() != orig.Digest() {
		t.Fatal("the loaded tree's digest differs")
	}
	if !reflect.DeepEqual(snapshot(got), snapshot(orig)) {
		t.Fatalf("loaded tree differs:\n%+v\n%+v", snapshot(got), snapshot(orig))
	}
	if got.LastZxid() != orig.LastZxid() || got.NodeCount() != orig.NodeCount() || got.EphemeralCount() != 1 ||
		!reflect.DeepEqual(got.Containers(), []string{"/cont"}) || !reflect.DeepEqual(got.TTLNodes(), []string{"/ttl"}) {
		t.Fatalf("indexes not rebuilt: zxid %d count %d eph %d cont %v ttl %v",
			got.LastZxid(), got.NodeCount(), got.EphemeralCount(), got.Containers(), got.TTLNodes())
	}
	if got.Get("/a/b").Data() != nil || got.Get("/a/b/c").Data() == nil {
		t.Fatal("null and empty data must stay distinct")
	}
	if s := got.Get("/a").Stat(); s.Cversion != 4 || s.NumChildren != 2 {
		t.Fatalf("/a stat after load: %+v", s)
	}
}

// TestSnapshotIsolation: a snapshot read while the tree keeps changing shows the tree as
// it was when it was taken. Run with -race.
func TestSnapshotIsolation(t *testing.T) {
	tr := sampleTree()
	want := tr.Digest()
	snap := tr.Snapshot()
	done := make(chan *Tree)
	go func() {
		l := NewLoader()
		snap.Records(l.Add)
		loaded, _ := l.Tree()
		done <- loaded
	}()
	for i := 0; i < 2000; i++ {
		p := fmt.Sprintf("/a/n%d", i)
		tr.Create(p, []byte("v"), wire.OpenACLUnsafe, 0, int64(100+i), 2000)
		tr.SetData("/a", []byte(p), int64(100+i), 2000)
		if i%3 == 0 {
			tr.Delete(p, int64(100+i))
		}
	}
	tr.Delete("/a/e", 5000)
	loaded := <-done
	if loaded == nil || loaded.Digest() != want {
		t.Fatal("the snapshot saw changes made after it was taken")
	}
}

func TestLoaderRejects(t *testing.T) {
	var records [][]byte
	sampleTree().Snapshot().Records(func(p []byte) error {
		records = append(records, append([]byte(nil), p...))
		return nil
	})
	load := func(recs [][]byte) error {
		l := NewLoader()
		for _, r := range recs {
			if err := l.Add(r); err != nil {
				return err
			}
		}
		_, err := l.Tree()
		return err
	}
	child := len(records) - 3 // a node record late in the list
	tests := map[string][][]byte{
		"no header":         records[1:],
		"missing node":      append(append([][]byte{}, records[:child]...), records[child+1:]...),
		"duplicate node":    append(append([][]byte{}, records[:child+1]...), records[child:]...),
		"child before root": append([][]byte{records[0], records[3]}, records[1:]...),
		"truncated record":  append(append([][]byte{}, records[:2]...), records[2][:5]),
		"second header":     append([][]byte{records[0]}, records...),
		"unknown kind":      {records[0], {0, 0, 0, 9}},
	}
	for name, recs := range tests {
		if err := load(recs); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: err = %v, want ErrBadSnapshot", name, err)
		}
	}
	if err := load(records); err != nil {
		t.Fatalf("the intact records: %v", err)
	}
}

// TestLoaderRefusesInconsistentSnapshots: records that do not make a consistent tree
// are refused, by Add or by Tree, naming what is wrong — also when the nodes number
// more than one batch of the loader's inserter.
func TestLoaderRefusesInconsistentSnapshots(t *testing.T) {
	big := New()
	big.Create("/many", nil, wire.OpenACLUnsafe, 0, 1, 1)
	for i := range 3 * loadBatch {
		big.Create(fmt.Sprintf("/many/n%05d", i), nil, wire.OpenACLUnsafe, 0, int64(i+2), 1)
	}
	for _, base := range []*Tree{sampleTree(), big} {
		var recs [][]byte
		base.Snapshot().Records(func(p []byte) error { recs = append(recs, append([]byte(nil), p...)); return nil })
		// recs[0] is the header, recs[1] the root; the rest are nodes, then sessions.
		n := base.NodeCount()
		tests := []struct {
			name string
			recs [][]byte
			want string
		}{
			{"a parent missing", append(append([][]byte{}, recs[:2]...), recs[3:]...), "before its parent"},
			{"two nodes swapped", swap(recs, 2, 3), "out of order"},
			{"the root not first", swap(recs, 1, 2), "out of order"},
			{"a node twice", append(append(append([][]byte{}, recs[:3]...), recs[2]), recs[3:]...), "out of order or twice"},
			{"a record missing", recs[:len(recs)-1], "header says"},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%d nodes/%s", n, tt.name), func(t *testing.T) {
				l := NewLoader()
				var err error
				for _, r := range tt.recs {
					if err = l.Add(r); err != nil {
						break
					}
				}
				if err == nil {
					_, err = l.Tree()
				} else {
					l.Abort()
				}
				if !errors.Is(err, ErrBadSnapshot) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want ErrBadSnapshot saying %q", err, tt.want)
				}
			})
		}
	}
}

func swap(recs [][]byte, i, j int) [][]byte {
	out := append([][]byte{}, recs...)
	out[i], out[j] = out[j], out[i]
	return out
}
