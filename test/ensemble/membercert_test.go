package ensemble

import (
	"crypto/tls"
	"os/exec"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// TestClientCertificateIsNoMember replays issue 31's attack 6 on member processes: an
// ensemble over TLS with ssl.quorum.hostnameVerification=false, and a client
// certificate that `paddock certs client` makes with the ensemble's own CA — under a
// member's name, for good measure. Before, a certificate that named no member proved
// every member, and without host name checks such a client certificate got in as any
// member. Now it claims each member on each member's peer port and is refused every
// time, each refusal counted, and the ensemble keeps its leader, its term and its data.
func TestClientCertificateIsNoMember(t *testing.T) {
	c := newCluster(t, 3, clusterOptions{tls: true, noHostnameVerification: true})
	a := newAttackTarget(t, c)
	out, err := exec.Command(paddock.Path(t), "certs", "client", "--dir", c.certDir, "--name", "member-1").CombinedOutput()
	if err != nil {
		t.Fatalf("paddock certs client: %v\n%s", err, out)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(c.certDir, "client-member-1.pem"), filepath.Join(c.certDir, "client-member-1-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}
	for to := range c.members {
		before := c.members[to].counter(t, "zk_peer_connections_refused")
		for from := range c.members {
			if from == to {
				continue
			}
			if in, err := dialIntruder(t, c.members[to].peerAddr(), cfg, from+1, to+1); err == nil {
				in.raft(message(raftpb.MsgHeartbeat, from+1, to+1, uint64(a.epoch)+1))
				t.Errorf("the client certificate got in on member %d as member %d", to+1, from+1)
			}
		}
		c.members[to].waitCounter(t, "zk_peer_connections_refused", before+int64(len(c.members)-1))
	}
	a.unaffected(t, "after the client certificate's claims")
}
