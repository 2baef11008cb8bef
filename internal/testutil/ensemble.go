package testutil

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/admin"
)

// Ensemble is a replicated ensemble of paddock servers in this process, on 127.0.0.1:
// members are stopped and started again by index, keeping their ports and data.
type Ensemble struct {
	tb      testing.TB
	Configs []server.Config
	servers []*server.Server // nil while stopped
}

// StartEnsemble starts voters participants and observers observers (ids 1..n, the
// observers last), each configured by PaddockConfig, a 500ms election timeout and
// configure (if not nil), and stops them when the test ends. It waits until every
// member serves.
func StartEnsemble(tb testing.TB, voters, observers int, configure func(i int, c *server.Config)) *Ensemble {
	tb.Helper()
	n := voters + observers
	var members []string
	clients := make([]string, n)
	for i := range n {
		peer, err1 := FreePort()
		client, err2 := FreePort()
		if err1 != nil || err2 != nil {
			tb.Fatalf("ports: %v %v", err1, err2)
		}
		role := ""
		if i >= voters {
			role = ":observer"
		}
		clients[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(client))
		members = append(members, fmt.Sprintf("%d=127.0.0.1:%d:%d%s;%s", i+1, peer, peer, role, clients[i]))
	}
	e := &Ensemble{tb: tb, servers: make([]*server.Server, n)}
	for i := range n {
		cfg := PaddockConfig(tb)
		cfg.ClientAddr = clients[i]
		cfg.ServerID = int64(i + 1)
		cfg.Ensemble = members
		cfg.ElectionTimeout = 500 * time.Millisecond
		cfg.FourLetterWords = []string{"*"}
		if configure != nil {
			configure(i, &cfg)
		}
		e.Configs = append(e.Configs, cfg)
	}
	tb.Cleanup(func() {
		for i := range e.servers {
			e.Stop(i)
		}
	})
	// Members start concurrently: each waits in Start to replay its own log only.
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- e.start(i) }()
	}
	var failed error
	for range n {
		if err := <-errs; err != nil && failed == nil {
			failed = err
		}
	}
	if failed != nil { // only once every start has returned: Cleanup reads e.servers
		tb.Fatal(failed)
	}
	e.WaitServing()
	return e
}

// AddMember configures one more member, id len(Configs)+1, to join the running
// ensemble (server.Config.Join): its configuration lists the ensemble and itself. It
// is not started. AddMember returns its index and the "server.N=..." entry a reconfig
// adds it with.
func (e *Ensemble) AddMember(observer bool) (int, string) {
	e.tb.Helper()
	peer, err1 := FreePort()
	client, err2 := FreePort()
	if err1 != nil || err2 != nil {
		e.tb.Fatalf("ports: %v %v", err1, err2)
	}
	role := ""
	if observer {
		role = ":observer"
	}
	i := len(e.Configs)
	spec := fmt.Sprintf("%d=127.0.0.1:%d:%d%s;127.0.0.1:%d", i+1, peer, peer, role, client)
	cfg := e.Configs[0]
	cfg.DataDir = e.tb.TempDir()
	cfg.ClientAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(client))
	cfg.ServerID = int64(i + 1)
	cfg.Ensemble = append(slices.Clone(cfg.Ensemble), spec)
	cfg.Join = true
	e.Configs = append(e.Configs, cfg)
	e.servers = append(e.servers, nil)
	return i, "server." + spec
}

func (e *Ensemble) start(i int) error {
	s, err := server.New(e.Configs[i], TestLogger())
	if err != nil {
		return fmt.Errorf("member %d config: %w", i+1, err)
	}
	if err := s.Start(); err != nil {
		return fmt.Errorf("start member %d: %w", i+1, err)
	}
	e.servers[i] = s
	return nil
}

// Start starts member i again after Stop.
func (e *Ensemble) Start(i int) {
	e.tb.Helper()
	if err := e.start(i); err != nil {
		e.tb.Fatal(err)
	}
}

// Stop closes member i, if running.
func (e *Ensemble) Stop(i int) {
	if s := e.servers[i]; s != nil {
		s.Close()
		e.servers[i] = nil
	}
}

// Server returns member i, nil while stopped.
func (e *Ensemble) Server(i int) *server.Server { return e.servers[i] }

// Addrs returns every member's client address, in member order.
func (e *Ensemble) Addrs() []string {
	out := make([]string, len(e.Configs))
	for i, c := range e.Configs {
		out[i] = c.ClientAddr
	}
	return out
}

// Leader returns the index of the member that says it leads, or -1.
func (e *Ensemble) Leader() int {
	for i, s := range e.servers {
		if s != nil {
			if st := s.Stats(); st.Mode == admin.ModeLeader && !st.NotServing {
				return i
			}
		}
	}
	return -1
}

// WaitServing waits until every running member serves clients and one leads. Members
// removed from the ensemble must be stopped first.
func (e *Ensemble) WaitServing() {
	e.tb.Helper()
	ok := WaitFor(30*time.Second, 20*time.Millisecond, func() bool {
		for _, s := range e.servers {
			if s != nil && s.Stats().NotServing {
				return false
			}
		}
		return e.Leader() >= 0
	})
	if !ok {
		e.tb.Fatalf("ensemble: not every member serves after 30s")
	}
}

// QuorumTLS makes a CA in a temporary directory and, for each member StartEnsemble
// configures, a key store naming its id and 127.0.0.1, and secures the member link with
// them: pass it, or call it from, StartEnsemble's configure.
func QuorumTLS(tb testing.TB) func(i int, c *server.Config) {
	tb.Helper()
	dir := tb.TempDir()
	ca, err := certs.NewCA("paddock test CA", time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	trust := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(trust, ca.CertPEM(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return func(_ int, c *server.Config) {
		certPEM, keyPEM, err := ca.Issue(certs.IssueOptions{CommonName: fmt.Sprintf("member %d", c.ServerID),
			Hosts: []string{"127.0.0.1"}, MemberID: uint64(c.ServerID), Validity: time.Hour})
		if err != nil {
			tb.Fatal(err)
		}
		store := filepath.Join(dir, fmt.Sprintf("member-%d.pem", c.ServerID))
		if err := os.WriteFile(store, certs.KeyStorePEM(certPEM, keyPEM, ca.CertPEM()), 0o600); err != nil {
			tb.Fatal(err)
		}
		c.QuorumTLS, c.QuorumKeyStore, c.QuorumTrustStore = true, store, trust
	}
}
