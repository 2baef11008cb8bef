package datatree

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/paddock/paddock/server/wire"
)

func TestMemPerNode(t *testing.T) {
	if os.Getenv("MEMTEST") == "" {
		return
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr := New()
	tr.Create("/bench", nil, wire.OpenACLUnsafe, 0, 1, 1)
	for i := 0; i < 1_000_000; i++ {
		dir := fmt.Sprintf("/bench/d%d", i/1000)
		if i%1000 == 0 {
			tr.Create(dir, nil, wire.OpenACLUnsafe, 0, int64(i+2), 1)
		}
		acl := []wire.ACL{{Perms: 31, Scheme: "world", ID: "anyone"}} // as decoded per request
		tr.Create(fmt.Sprintf("%s/n%07d", dir, i), make([]byte, 100), acl, 0, int64(i+2), 1)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	fmt.Printf("heap per node: %d bytes (HeapInuse %d MB)\n", (after.HeapInuse-before.HeapInuse)/1_000_000, after.HeapInuse>>20)
	runtime.KeepAlive(tr)
}
