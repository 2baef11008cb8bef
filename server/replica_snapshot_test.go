package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// TestEnsembleMemberCatchesUpBySnapshot: a member that was down while the others
// compacted their logs past it gets the leader's snapshot, streamed to its receive
// directory, and then holds every node.
func TestEnsembleMemberCatchesUpBySnapshot(t *testing.T) {
	e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) { c.SnapCount = 8 })
	addrs := e.Addrs()
	down := (e.Leader() + 1) % 3
	e.Stop(down)
	var others []string
	for i, a := range addrs {
		if i != down {
			others = append(others, a)
		}
	}
	c, _ := connectTo(t, others)
	for i := range 60 {
		if _, err := c.Create(fmt.Sprintf("/n%02d", i), []byte(fmt.Sprint(i)), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	e.Start(down)
	e.WaitServing()
	back, _ := connectTo(t, addrs[down:down+1])
	if _, err := back.Sync("/"); err != nil {
		t.Fatal(err)
	}
	children, _, err := back.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	if len(children) != 61 { // the 60 and /zookeeper
		t.Fatalf("the member that was down holds %d nodes under /, want 61", len(children))
	}
	if data, _, err := back.Get("/n42"); err != nil || string(data) != "42" {
		t.Fatalf("/n42 on the member that was down: %q, %v", data, err)
	}
	dir := e.Configs[down].DataLogDir
	if dir == "" {
		dir = e.Configs[down].DataDir
	}
	if _, err := os.Stat(filepath.Join(dir, "raft", "recv")); err != nil {
		t.Fatalf("the member caught up without receiving a snapshot: %v", err)
	}
}
