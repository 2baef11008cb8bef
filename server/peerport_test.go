package server_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// plainEnsemble configures three members without TLS whose peer ports are on host.
func plainEnsemble(t *testing.T, host string, plaintext bool) []server.Config {
	t.Helper()
	var lines []string
	clients := make([]int, 3)
	for i := range clients {
		peer := freePort(t)
		clients[i] = freePort(t)
		lines = append(lines, fmt.Sprintf("%d=%s:%d:%d;127.0.0.1:%d", i+1, host, peer, peer, clients[i]))
	}
	cfgs := make([]server.Config, 3)
	for i := range cfgs {
		cfgs[i] = testutil.PaddockConfig(t)
		cfgs[i].ServerID, cfgs[i].Ensemble = int64(i+1), lines
		cfgs[i].ClientAddr = fmt.Sprintf("127.0.0.1:%d", clients[i])
		cfgs[i].ElectionTimeout = 500 * time.Millisecond
		cfgs[i].QuorumPlaintext = plaintext
	}
	return cfgs
}

// TestPlainPeerPortAtStart: a member without TLS whose peer port is on 0.0.0.0 (every
// interface) refuses to start, naming quorum_plaintext; with it the ensemble starts,
// serves, and each member warns that its plain peer port is beyond loopback. On
// 127.0.0.1 no key is needed and no such warning is logged.
func TestPlainPeerPortAtStart(t *testing.T) {
	_, err := server.New(plainEnsemble(t, "0.0.0.0", false)[0], testutil.TestLogger())
	if err == nil || !strings.Contains(err.Error(), "quorum_plaintext = false: the peer port of server.1, 0.0.0.0:") ||
		!strings.Contains(err.Error(), "set quorum_plaintext: true (zoo.cfg: quorum.plaintext=true)") {
		t.Fatalf("a plain peer port on 0.0.0.0 without quorum_plaintext: %v; want the key named", err)
	}
	for _, tt := range []struct {
		host      string
		plaintext bool
		warned    bool
	}{{"0.0.0.0", true, true}, {"127.0.0.1", false, false}} {
		t.Run(tt.host, func(t *testing.T) {
			cfgs := plainEnsemble(t, tt.host, tt.plaintext)
			logs := startMembers(t, cfgs)
			for i, rec := range logs {
				warns := rec.find("plain peer port beyond loopback (quorum_plaintext)")
				if got := len(warns) == 1; got != tt.warned {
					t.Errorf("member %d on %s: %d warnings about a plain peer port beyond loopback, want warned %v",
						i+1, tt.host, len(warns), tt.warned)
				}
				if tt.warned && len(warns) == 1 {
					if v, _ := attr(warns[0], "peer_addr"); !strings.HasPrefix(v.String(), tt.host+":") || warns[0].Level != slog.LevelWarn {
						t.Errorf("member %d: warning %v with peer_addr %q, want WARN and %s:port", i+1, warns[0].Level, v, tt.host)
					}
				}
			}
			conn, _ := connectTo(t, []string{cfgs[1].ClientAddr})
			if _, err := conn.Create("/plain", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("the ensemble on %s takes no writes: %v", tt.host, err)
			}
		})
	}
}

// startMembers starts the members of cfgs at once, each logging to its own recorder,
// and waits until every member serves and one leads.
func startMembers(t *testing.T, cfgs []server.Config) []*recorder {
	t.Helper()
	recs := make([]*recorder, len(cfgs))
	servers := make([]*server.Server, len(cfgs))
	errs := make(chan error, len(cfgs))
	for i := range cfgs {
		recs[i] = &recorder{}
		go func() {
			s, err := server.New(cfgs[i], slog.New(recs[i]))
			if err == nil {
				err = s.Start()
			}
			if err == nil {
				servers[i] = s
			}
			errs <- err
		}()
	}
	for range cfgs {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() {
		for _, s := range servers {
			if s != nil {
				s.Close()
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	testutil.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
		for _, s := range servers {
			if s.Stats().NotServing {
				return false
			}
		}
		return true
	}, "not every member serves")
	return recs
}
