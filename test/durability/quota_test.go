package durability

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

// quotaCountLimit is the hard count limit of the crash test's quota: writers reach it, so
// refusals happen while the server is killed too.
const quotaCountLimit = 120

// TestQuotaStatsAfterCrash kills the server (kill -9) at a random moment while writers
// create, set data on and delete nodes under a quota'd subtree, with quotas enforced and
// snapshots taken every few txns. After every restart the quota's stats node must hold
// exactly the node count and data bytes that a walk of the subtree finds, and the hard
// limit must still hold.
func TestQuotaStatsAfterCrash(t *testing.T) {
	t.Parallel()
	rng := newRand(testutil.Seed(t, "PADDOCK_DURABILITY_SEED"), 7)
	dir := t.TempDir()
	env := append([]string{"PADDOCK_SERVER_ENFORCE_QUOTA=true", "PADDOCK_SERVER_SNAP_COUNT=16"}, commonEnv...)
	port := 0
	rounds := envInt(t, "PADDOCK_DURABILITY_QUOTA_ROUNDS", 4)
	for round := range rounds + 1 {
		p := startPaddock(t, testutil.PaddockProcessOptions{DataDir: filepath.Join(dir, "data"), Port: port, Env: env,
			LogPath: filepath.Join(dir, fmt.Sprintf("server-%02d.log", round))})
		port = p.Port()
		g := &gate{}
		c, err := connect(p.Addr, 10*time.Second, g, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			mustCreateData(t, c, "/q", []byte("quota'd"))
			mustCreateData(t, c, "/zookeeper/quota/q", nil)
			mustCreateData(t, c, "/zookeeper/quota/q/zookeeper_limits",
				[]byte(fmt.Sprintf("count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=%d", quotaCountLimit)))
			mustCreateData(t, c, "/zookeeper/quota/q/zookeeper_stats", []byte("count=0,bytes=0"))
		}
		count := checkQuotaStats(t, c, round)
		t.Logf("round %d: %d nodes under /q, stats consistent", round, count)
		if round == rounds {
			if _, err := c.Create("/q/one-more", nil, 0, worldACL); count == quotaCountLimit && !strings.Contains(fmt.Sprint(err), "-125") ||
				count < quotaCountLimit && err != nil {
				t.Fatalf("create at count %d of %d after the crashes: %v", count, quotaCountLimit, err)
			}
			c.Close()
			return
		}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				quotaWriter(c, fmt.Sprintf("/q/r%d-w%d-", round, w), 3*w)
			}()
		}
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		g.close()
		p.Kill()
		c.Close()
		wg.Wait()
	}
}

func mustCreateData(t *testing.T, c *zk.Conn, path string, data []byte) {
	t.Helper()
	if _, err := c.Create(path, data, 0, worldACL); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// quotaWriter creates nodes with data of varying size, rewrites and deletes some, until
// the connection fails. A create refused with QuotaExceeded deletes the writer's oldest
// node instead, so that the subtree keeps changing at the limit.
func quotaWriter(c *zk.Conn, prefix string, seed int) {
	var live []string
	for i := 0; ; i++ {
		path := fmt.Sprintf("%s%d", prefix, i)
		_, err := c.Create(path, make([]byte, (seed+i)%17), 0, worldACL)
		switch {
		case err != nil && strings.Contains(err.Error(), "-125") && len(live) > 0:
			err, live = c.Delete(live[0], -1), live[1:]
		case err == nil && i%3 == 1:
			_, err = c.Set(path, make([]byte, (seed+2*i)%29), -1)
			live = append(live, path)
		case err == nil && i%3 == 2:
			err = c.Delete(path, -1)
		case err == nil:
			live = append(live, path)
		}
		if err != nil && !strings.Contains(err.Error(), "-125") {
			return
		}
	}
}

// checkQuotaStats walks /q and compares what it finds with the stats node; it returns
// the count.
func checkQuotaStats(t *testing.T, c *zk.Conn, round int) int64 {
	t.Helper()
	var count, bytes int64
	var walk func(path string)
	walk = func(path string) {
		data, _, err := c.Get(path)
		if err != nil {
			t.Fatalf("round %d: get %s: %v", round, path, err)
		}
		count, bytes = count+1, bytes+int64(len(data))
		children, _, err := c.Children(path)
		if err != nil {
			t.Fatalf("round %d: children of %s: %v", round, path, err)
		}
		for _, ch := range children {
			walk(path + "/" + ch)
		}
	}
	walk("/q")
	stats, _, err := c.Get("/zookeeper/quota/q/zookeeper_stats")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("count=%d,bytes=%d", count, bytes); string(stats) != want {
		t.Fatalf("round %d: after the restart the stats are %q; the subtree holds %s", round, stats, want)
	}
	if count > quotaCountLimit {
		t.Fatalf("round %d: %d nodes under a hard limit of %d", round, count, quotaCountLimit)
	}
	return count
}
