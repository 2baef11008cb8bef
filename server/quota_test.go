package server_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// setQuota writes a quota on path as zkCli's setquota does.
func setQuota(t *testing.T, c *zk.Conn, path, limits string) {
	t.Helper()
	qp := "/zookeeper/quota" + path
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create(qp, nil, 0, acl); err != nil {
		t.Fatalf("create %s: %v", qp, err)
	}
	if _, err := c.Create(qp+"/zookeeper_limits", []byte(limits), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(qp+"/zookeeper_stats", []byte("count=0,bytes=0"), 0, acl); err != nil {
		t.Fatal(err)
	}
}

func quotaStats(t *testing.T, c *zk.Conn, path string) string {
	t.Helper()
	data, _, err := c.Get("/zookeeper/quota" + path + "/zookeeper_stats")
	if err != nil {
		t.Fatalf("stats of %s: %v", path, err)
	}
	return string(data)
}

// isQuotaExceeded reports QuotaExceeded (-125), which go-zookeeper has no error for.
func isQuotaExceeded(err error) bool { return err != nil && strings.Contains(err.Error(), "-125") }

// The stats of a quota are part of the replicated state: after a restart, from the log
// alone or from a snapshot and the log after it, they are what they were, and they keep
// following writes (the quota index is rebuilt), and hard limits are still enforced.
func TestQuotaStatsSurviveRestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		snapCount int
	}{{"log", 100000}, {"snapshots", 4}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testutil.PaddockConfig(t)
			cfg.EnforceQuota = true
			cfg.SnapCount = tc.snapCount
			srv := testutil.StartServer(t, cfg)
			c, _ := connectTo(t, []string{srv.Addr().String()})
			acl := zk.WorldACL(zk.PermAll)
			if _, err := c.Create("/q", []byte("root"), 0, acl); err != nil {
				t.Fatal(err)
			}
			setQuota(t, c, "/q", "count=-1,bytes=-1=;byteHardLimit=40;countHardLimit=6")
			for i := range 4 {
				if _, err := c.Create(fmt.Sprintf("/q/n%d", i), []byte("abc"), 0, acl); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Set("/q/n0", []byte("abcdefgh"), -1); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete("/q/n3", -1); err != nil {
				t.Fatal(err)
			}
			before := quotaStats(t, c, "/q")
			if before != "count=4,bytes=18" {
				t.Fatalf("stats before restart %q, want count=4,bytes=18", before)
			}
			c.Close()
			srv.Close()

			srv = testutil.StartServer(t, cfg)
			c, _ = connectTo(t, []string{srv.Addr().String()})
			if after := quotaStats(t, c, "/q"); after != before {
				t.Fatalf("stats after restart %q, want %q", after, before)
			}
			for i := 4; i <= 6; i++ {
				_, err := c.Create(fmt.Sprintf("/q/n%d", i), []byte("abc"), 0, acl)
				if i < 6 && err != nil || i == 6 && !isQuotaExceeded(err) {
					t.Fatalf("create /q/n%d after restart: %v (countHardLimit 6)", i, err)
				}
			}
			if _, err := c.Set("/q/n1", make([]byte, 30), -1); !isQuotaExceeded(err) {
				t.Fatalf("setData past byteHardLimit after restart: %v", err)
			}
			if got := quotaStats(t, c, "/q"); got != "count=6,bytes=24" {
				t.Fatalf("stats after restart and writes %q, want count=5,bytes=21", got)
			}
		})
	}
}

// In an ensemble the quota check happens where every member applies the txn, against
// the state every member holds: creates raced from clients of all three members under
// one quota give exactly the allowed count, the same on every member, and only the
// member that served a client writes that client's audit lines.
func TestQuotaEnsembleSameOutcome(t *testing.T) {
	dirs := make([]string, 3)
	e := testutil.StartEnsemble(t, 3, 0, func(i int, c *server.Config) {
		c.EnforceQuota = true
		c.AuditEnable = true
		c.ReconfigEnabled = true
		dirs[i] = c.DataDir
	})
	addrs := e.Addrs()
	admin, _ := connectTo(t, addrs[:1])
	acl := zk.WorldACL(zk.PermAll)
	if _, err := admin.Create("/q", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	const limit = 10 // /q and 9 children
	setQuota(t, admin, "/q", fmt.Sprintf("count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=%d", limit))

	var mu sync.Mutex
	created, refused := 0, 0
	var wg sync.WaitGroup
	for m, addr := range addrs {
		c, _ := connectTo(t, []string{addr})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				_, err := c.Create(fmt.Sprintf("/q/m%d-%d", m, i), nil, 0, acl)
				mu.Lock()
				switch {
				case err == nil:
					created++
				case isQuotaExceeded(err):
					refused++
				default:
					t.Errorf("member %d create: %v", m+1, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if created != limit-1 || refused != 24-(limit-1) {
		t.Fatalf("%d created and %d refused; want %d and %d", created, refused, limit-1, 24-(limit-1))
	}
	var refusedCounted int64
	for m, addr := range addrs {
		c, _ := connectTo(t, []string{addr})
		if _, err := c.Sync("/q"); err != nil {
			t.Fatal(err)
		}
		children, _, err := c.Children("/q")
		if err != nil || len(children) != limit-1 {
			t.Errorf("member %d: %d children of /q (%v), want %d", m+1, len(children), err, limit-1)
		}
		if got, want := quotaStats(t, c, "/q"), fmt.Sprintf("count=%d,bytes=0", limit); got != want {
			t.Errorf("member %d: stats %q, want %q", m+1, got, want)
		}
		refusedCounted += e.Server(m).Stats().QuotaAudit.QuotaRefused
	}
	if refusedCounted != int64(refused) {
		t.Errorf("members counted %d refusals, clients saw %d", refusedCounted, refused)
	}

	// A reconfig by a client that is not super is refused, and audited as such.
	if _, err := admin.IncrementalReconfig(nil, []string{"3"}, -1); err != zk.ErrNoAuth {
		t.Fatalf("reconfig without super: %v", err)
	}

	// Each member's audit log holds its own clients' creates and no other member's.
	for m := range addrs {
		e.Stop(m)
	}
	if log := readAudit(t, dirs[0]+"/audit.log"); !strings.Contains(log, "operation=reconfig\tznode=/zookeeper/config\tresult=failure\n") {
		t.Errorf("member 1's audit log has no failed reconfig:\n%s", log)
	}
	for m, dir := range dirs {
		log := readAudit(t, dir+"/audit.log")
		for other := range addrs {
			n := strings.Count(log, fmt.Sprintf("znode=/q/m%d-", other))
			if (other == m) != (n == 8) || other != m && n != 0 {
				t.Errorf("member %d's audit log has %d lines of member %d's client, want %d", m+1, n, other+1,
					map[bool]int{true: 8, false: 0}[other == m])
			}
		}
	}
}
