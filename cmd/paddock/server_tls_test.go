package main

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
)

// TestServerSecureClientPortOnly: `paddock server` with a ZooKeeper zoo.cfg that has a
// secureClientPort and no clientPort serves TLS clients with certificates, whose x509
// identity its ACLs check, and nothing in plain TCP.
func TestServerSecureClientPortOnly(t *testing.T) {
	ct := testutil.NewClientTLS(t)
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cfg := fmt.Sprintf("admin.enableServer=false\ndataDir=%s\nsecureClientPort=%d\nsecureClientPortAddress=127.0.0.1\n"+
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"+
		"ssl.keyStore.location=%s\nssl.keyStore.type=PEM\nssl.trustStore.location=%s\nssl.trustStore.type=PEM\n",
		t.TempDir(), port, ct.ServerStore, ct.CAFile)
	cmd := command("server", "--zoo-cfg", writeFile(t, "zoo.cfg", cfg))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})

	alice := ct.Issue(t, "alice")
	conf, err := coordinator.TLSFiles{CA: ct.CAFile, Cert: alice.Cert, Key: alice.Key}.Config()
	if err != nil {
		t.Fatal(err)
	}
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithDialer(coordinator.TLSDialer(conf, nil)),
		zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.After(20 * time.Second)
	for connected := false; !connected; {
		select {
		case e := <-events:
			connected = e.State == zk.StateHasSession
		case <-deadline:
			t.Fatalf("no TLS session with paddock server on %s; stderr:\n%s", addr, stderr.String())
		}
	}
	acl := zk.ACL{Perms: zk.PermAll, Scheme: "x509", ID: "CN=alice"}
	if _, err := c.Create("/alice", nil, 0, []zk.ACL{acl}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := c.GetACL("/alice"); err != nil || len(got) != 1 || got[0] != acl {
		t.Errorf("getACL /alice = %v, %v; want [%v]", got, err, acl)
	}
	if out, err := testutil.FourLetterWord(addr, "srvr", 2*time.Second); err == nil && out != "" {
		t.Errorf("a plain four-letter word on the secure port was answered: %q", out)
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
