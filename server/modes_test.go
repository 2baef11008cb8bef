package server_test

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// TestStandaloneSyncAndReconfig checks the standalone log's answers to the two
// requests a member answers after a round with its ensemble: a sync is answered from
// the tree, and a reconfig is refused — even with reconfig_enabled — through the log,
// as an error txn that consumes a zxid, as a standalone ZooKeeper does.
func TestStandaloneSyncAndReconfig(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		addr := testutil.StartPaddock(t, func(c *server.Config) { c.ReconfigEnabled, c.SkipACL = enabled, true })
		c, _ := connect(t, addr)
		before, err := c.Create("/before", nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		_, first, err := c.Get(before)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.IncrementalReconfig([]string{"server.2=127.0.0.1:1:2;127.0.0.1:3"}, nil, -1); err != zk.ErrReconfigDisabled {
			t.Errorf("reconfig_enabled=%v: reconfig on a standalone server: %v, want ErrReconfigDisabled", enabled, err)
		}
		if path, err := c.Sync("/before"); err != nil || path != "/before" {
			t.Errorf("sync: %q, %v", path, err)
		}
		if _, err := c.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		_, after, err := c.Get("/after")
		if err != nil {
			t.Fatal(err)
		}
		if after.Czxid != first.Czxid+2 {
			t.Errorf("reconfig_enabled=%v: /after created at zxid %x, /before at %x: want the refused reconfig to take the zxid between",
				enabled, after.Czxid, first.Czxid)
		}
	}
}
