package configs

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/paddock/paddock/internal/testutil"
)

// plainPeerHost is a host of this member's server line and whether the member may
// listen there in plain TCP without quorum_plaintext.
type plainPeerHost struct {
	host     string // as a server line writes it: IPv6 in brackets
	loopback bool
}

// plainPeerHosts are the boundaries of loopback, then seeded random addresses of
// either family.
func plainPeerHosts(t *testing.T) []plainPeerHost {
	hosts := []plainPeerHost{
		{"127.0.0.1", true}, {"127.0.0.0", true}, {"127.255.255.255", true}, {"[::1]", true},
		{"[::ffff:127.0.0.1]", true}, {"localhost", true},
		{"126.255.255.255", false}, {"128.0.0.0", false}, {"0.0.0.0", false}, {"[::]", false},
		{"[::2]", false}, {"[fe80::1]", false}, {"10.0.0.1", false}, {"zk1.example.com", false},
		{"localhost.example.com", false}, {"127.0.0.1.nip.io", false},
	}
	rng := rand.New(rand.NewPCG(testutil.Seed(t, "PADDOCK_PEERPORT_SEED"), 0))
	for range 40 {
		var a netip.Addr
		if rng.IntN(2) == 0 {
			b := [4]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))}
			if rng.IntN(3) == 0 {
				b[0] = 127
			}
			a = netip.AddrFrom4(b)
		} else {
			var b [16]byte
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			if rng.IntN(3) == 0 {
				b = netip.IPv6Loopback().As16()
			}
			a = netip.AddrFrom16(b)
		}
		host := a.String()
		if a.Is6() {
			host = "[" + host + "]"
		}
		hosts = append(hosts, plainPeerHost{host, a.IsLoopback()})
	}
	return hosts
}

// TestPlainPeerPort: a member without quorum_tls whose own server line is not on a
// loopback address does not load unless quorum_plaintext (zoo.cfg quorum.plaintext)
// says so, and the error names both keys; loopback needs no key; the key with
// quorum_tls is a contradiction; the other members' lines and a standalone server do
// not matter.
func TestPlainPeerPort(t *testing.T) {
	for _, h := range plainPeerHosts(t) {
		for _, key := range []string{"", "false", "true"} {
			t.Run(fmt.Sprintf("%s/key=%q", h.host, key), func(t *testing.T) {
				zoo := "dataDir=DIR\nclientPort=2181\n" +
					fmt.Sprintf("server.1=%s:2888:3888\nserver.2=zk2.example.com:2888:3888\n", h.host)
				yaml := fmt.Sprintf("server:\n  data_dir: /tmp/x\n  ensemble: [\"1=%s:2888:3888\", 2=zk2.example.com:2888:3888]\n", h.host)
				if key != "" {
					zoo += "quorum.plaintext=" + key + "\n"
					yaml += "  quorum_plaintext: " + key + "\n"
				}
				_, _, zooErr := loadZooCfg(t, zoo, "1")
				clearPaddockEnv(t)
				_, yamlErr := LoadServer(Options{File: writeFile(t, "paddock.yaml", yaml)})
				for name, err := range map[string]error{"zoo.cfg": zooErr, "yaml": yamlErr} {
					if h.loopback || key == "true" {
						if err != nil {
							t.Errorf("%s: %v", name, err)
						}
						continue
					}
					wantErr(t, err, "server.quorum_plaintext = false", "the peer port of server.1", "not on a loopback address",
						"write as any identity", "quorum_plaintext: true", "quorum.plaintext=true")
				}
			})
		}
	}
}

// TestPlainPeerPortOther covers what the key does not depend on: with quorum_tls the
// key contradicts it; the variable PADDOCK_SERVER_QUORUM_PLAINTEXT sets it; a
// standalone server has no peer port.
func TestPlainPeerPortOther(t *testing.T) {
	const ensemble = "server:\n  ensemble: [1=10.0.0.1:2888:3888, 2=10.0.0.2:2888:3888]\n"
	tlsBoth := ensemble + "  quorum_tls: true\n  quorum_key_store: k.pem\n  quorum_trust_store: ca.pem\n  quorum_plaintext: true\n"
	clearPaddockEnv(t)
	_, err := LoadServer(Options{File: writeFile(t, "paddock.yaml", tlsBoth)})
	wantErr(t, err, "server.quorum_plaintext = true: contradicts quorum_tls", "(from ")

	t.Setenv("PADDOCK_SERVER_QUORUM_PLAINTEXT", "true")
	cfg, err := LoadServer(Options{File: writeFile(t, "paddock.yaml", ensemble)})
	if err != nil || !cfg.QuorumPlaintext {
		t.Errorf("PADDOCK_SERVER_QUORUM_PLAINTEXT=true: quorum_plaintext %v, err %v; want true, nil", cfg.QuorumPlaintext, err)
	}
	t.Setenv("PADDOCK_SERVER_QUORUM_PLAINTEXT", "false")
	_, err = LoadServer(Options{File: writeFile(t, "paddock.yaml", ensemble)})
	wantErr(t, err, "server.quorum_plaintext = false", "(from PADDOCK_SERVER_QUORUM_PLAINTEXT)")

	clearPaddockEnv(t)
	standalone := "server:\n  client_addr: 0.0.0.0:2181\n"
	if _, err := LoadServer(Options{File: writeFile(t, "paddock.yaml", standalone)}); err != nil {
		t.Errorf("a standalone server on 0.0.0.0: %v", err)
	}
}
