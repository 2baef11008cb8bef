package server_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// TestDumpStoreReadsAMember: paddock store dump prints an ensemble member's Raft
// directory: its snapshot with the tree, and its log's entries with their batch sizes,
// hard states and snapshot records.
func TestDumpStoreReadsAMember(t *testing.T) {
	e := testutil.StartEnsemble(t, 1, 0, func(_ int, c *server.Config) { c.SnapCount = 4 })
	c, _ := connectTo(t, e.Addrs())
	for i := range 12 {
		if _, err := c.Create(fmt.Sprintf("/m%d", i), []byte("member"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	// The snapshot is written off the Ready loop: wait until one is recorded.
	var out bytes.Buffer
	deadline := time.Now().Add(10 * time.Second)
	for {
		out.Reset()
		err := server.DumpStore(&out, e.Configs[0].DataDir, e.Configs[0].DataLogDir)
		if err == nil && strings.Contains(out.String(), " snapshot index=") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot record in the member's log (%v):\n%s", err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.Stop(0)
	out.Reset()
	if err := server.DumpStore(&out, e.Configs[0].DataDir, e.Configs[0].DataLogDir); err != nil {
		t.Fatalf("dump: %v\n%s", err, out.String())
	}
	for _, want := range []string{"raft snapshot ", "(index ", "voters=[1]", "raft log ", "entry index=1 term=1 EntryConfChange",
		" txns=1 ", "hard state term=", " snapshot index=", `data="member"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dump lacks %q:\n%s", want, out.String())
		}
	}
}
