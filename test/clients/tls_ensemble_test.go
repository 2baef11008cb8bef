package clients

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

// TestClientsOnATLSEnsemble runs Apache's zkCli and go-zookeeper/zk against an ensemble
// whose members talk over mutual TLS (sslQuorum): the clients still speak plain text
// to the client port, and see one ensemble — a write through one member read through
// another, a watch set on one fired by a write through another.
func TestClientsOnATLSEnsemble(t *testing.T) {
	requireFile(t, zkCliPath, "zookeeper")
	e := testutil.StartEnsemble(t, 3, 0, testutil.QuorumTLS(t))
	addrs := e.Addrs()

	got := runZkCliSteps(t, addrs[0], []cliStep{
		{cmd: "create /tls over-tls", want: []string{"Created /tls"}},
		{cmd: "create -e /tls/eph e", want: []string{"Created /tls/eph"}},
		{cmd: "ls /tls", want: []string{"[eph]"}},
	})
	for i, want := range [][]string{{"Created /tls"}, {"Created /tls/eph"}, {"[eph]"}} {
		if err := matchLines(got[i], want, false); err != nil {
			t.Errorf("zkCli on member 1, step %d: %v: %q", i, err, got[i])
		}
	}
	got = runZkCliSteps(t, addrs[2], []cliStep{
		{cmd: "sync /tls"},
		{cmd: "get /tls", want: []string{"over-tls"}},
		{cmd: "set /tls again"},
	})
	if err := matchLines(got[1], []string{"over-tls"}, false); err != nil {
		t.Errorf("zkCli on member 3 reads /tls: %v: %q", err, got[1])
	}

	watcher := connectZK(t, addrs[1])
	if _, err := watcher.Sync("/tls"); err != nil {
		t.Fatal(err)
	}
	data, _, events, err := watcher.GetW("/tls")
	if err != nil || string(data) != "again" {
		t.Fatalf("go-zk on member 2 reads /tls as %q, %v", data, err)
	}
	writer := connectZK(t, addrs[0])
	if _, err := writer.Set("/tls", []byte("from go"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/tls" {
			t.Errorf("watch on member 2 got %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write through member 1 fired no watch set on member 2")
	}
}
