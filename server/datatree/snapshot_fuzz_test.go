package datatree

import (
	"encoding/binary"
	"testing"

	"github.com/paddock/paddock/server/wire"
)

// FuzzLoader feeds the loader snapshot records from a peer or a damaged file — the
// records a byte stream splits into (a 2-byte length before each) — after a good
// snapshot's first records: it must refuse them with an error, never panic, and a tree
// it accepts must answer its reads and take a write.
func FuzzLoader(f *testing.F) {
	tr := New()
	tr.Create("/a", []byte("x"), wire.OpenACLUnsafe, 0, 1, 1)
	tr.Create("/a/b", make([]byte, inlineDataMax+1), wire.ReadACLUnsafe, 5, 2, 2)
	var good [][]byte
	tr.Snapshot().Records(func(p []byte) error {
		good = append(good, append([]byte(nil), p...))
		return nil
	})
	var seed []byte
	for _, r := range good[1:] {
		seed = binary.BigEndian.AppendUint16(seed, uint16(len(r)))
		seed = append(seed, r...)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte{0, 4, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		l := NewLoader()
		if l.Add(good[0]) != nil { // the header
			t.Fatal("header refused")
		}
		for len(data) >= 2 {
			n := int(binary.BigEndian.Uint16(data))
			data = data[2:]
			n = min(n, len(data))
			if l.Add(data[:n]) != nil {
				l.Abort()
				return
			}
			data = data[n:]
		}
		got, err := l.Tree()
		if err != nil {
			return
		}
		got.Walk(func(n Node) {
			_ = n.Stat()
			_ = n.Data()
			_ = got.Children(n.Path())
		})
		if root := got.Get(RootPath); root.Exists() && !got.Get("/fuzz").Exists() {
			got.Create("/fuzz", nil, wire.OpenACLUnsafe, 0, got.LastZxid()+1, 1)
		}
	})
}
