package ensemble

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestTakenAdminPort: three members whose zoo.cfg files all name one admin port that
// another process holds (three zoo.cfg files that leave admin.serverPort at 8080, on a
// machine where something else has 8080) all start and serve, as ZooKeeper members do:
// each logs a warning naming the address and why, and serves without the admin port.
func TestTakenAdminPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	port := held.Addr().(*net.TCPAddr).Port
	c := newCluster(t, 3, clusterOptions{adminPort: port}) // every member serves, one leads

	admin := "admin_addr=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for _, m := range c.members {
		b, err := os.ReadFile(m.child.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		warned := false
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "admin port not served") &&
				strings.Contains(line, admin) && strings.Contains(line, "address already in use") {
				warned = true
			}
		}
		if !warned {
			t.Errorf("%s logged no warning naming %s and why; log tail:\n%s", m, admin, m.child.LogTail(30))
		}
	}

	// A write through the last member is read back from the first.
	w := c.memberConn(2)
	if err := createRetry(w, "/admin-port-taken", []byte("served"), recoverBound); err != nil {
		t.Fatal(err)
	}
	r := c.memberConn(0)
	if _, err := r.Sync("/admin-port-taken"); err != nil {
		t.Fatal(err)
	}
	if data, _, err := r.Get("/admin-port-taken"); err != nil || string(data) != "served" {
		t.Fatalf("get from %s: %q, %v", c.members[0], data, err)
	}
}
