package ensemble

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/internal/testutil/faultproxy"
)

// clusterOptions say how newCluster builds an ensemble.
type clusterOptions struct {
	// proxies puts a faultproxy.Proxy on every directed peer link.
	proxies bool
	// tls secures the member link with mutual TLS: a CA of the test's, a certificate
	// for each member naming its id and 127.0.0.1, and zoo.cfg's ssl.quorum.* keys.
	tls bool
	// noHostnameVerification turns ssl.quorum.hostnameVerification off (with tls).
	noHostnameVerification bool
	// adminPort, if not 0, is every member's admin.serverPort (on 127.0.0.1), as
	// zoo.cfg files that leave it at 8080 on one machine; 0 turns the admin server off.
	adminPort int
	// env adds PADDOCK_SERVER_* settings to every member's.
	env []string
}

// cluster is an ensemble of member processes, and the proxies between them.
type cluster struct {
	t       *testing.T
	members []*member
	// proxies[i][j] carries what member i sends member j (nil when i == j, and nil
	// altogether without clusterOptions.proxies).
	proxies [][]*faultproxy.Proxy
	// ca made the members' certificates (nil without clusterOptions.tls); certDir holds
	// its ca.pem and each member's member-N.pem.
	ca      *certs.CA
	certDir string
	// expectErrors are substrings of the ERROR records a test provokes on purpose;
	// checkLogs lets them pass.
	expectErrors []string
	// adminPort is clusterOptions.adminPort.
	adminPort int
	// noHostnameVerification is clusterOptions.noHostnameVerification.
	noHostnameVerification bool
}

// newCluster starts an ensemble of n members and waits until every member serves. The
// processes are killed, the proxies closed and the logs checked when the test ends.
func newCluster(t *testing.T, n int, opts clusterOptions) *cluster {
	t.Helper()
	c := &cluster{t: t, adminPort: opts.adminPort, noHostnameVerification: opts.noHostnameVerification}
	binary := paddock.Path(t)
	root := t.TempDir()
	// Registered first, so it runs last: once every process has been killed.
	t.Cleanup(c.checkLogs)
	var ports portPicker
	for i := range n {
		m := &member{id: i + 1, dir: filepath.Join(root, fmt.Sprintf("data-%d", i+1)), logDir: root,
			cfgPath: filepath.Join(root, fmt.Sprintf("zoo-%d.cfg", i+1)), binary: binary, tb: t,
			env: append([]string{"PADDOCK_SERVER_ELECTION_TIMEOUT=" + electionTimeout.String()}, opts.env...)}
		m.client, m.peer = ports.take(t), ports.take(t)
		c.members = append(c.members, m)
	}
	if opts.proxies {
		c.proxies = make([][]*faultproxy.Proxy, n)
		for i := range n {
			c.proxies[i] = make([]*faultproxy.Proxy, n)
			for j, to := range c.members {
				if i == j {
					continue
				}
				p, err := faultproxy.New(to.peerAddr())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Close() })
				c.proxies[i][j] = p
			}
		}
	}
	if opts.tls {
		c.makeCerts(filepath.Join(root, "certs"))
	}
	for i, m := range c.members {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(m.dir, "myid"), fmt.Appendf(nil, "%d\n", m.id), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(m.cfgPath, []byte(c.zooCfg(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.members {
		c.start(i)
	}
	c.waitServing(recoverBound)
	return c
}

// portPicker picks the members' ports below the kernel's ephemeral port range, where
// neither the proxies' listeners (on port 0) nor outgoing connections are given ports:
// a member killed and started again finds its ports free, however many connections
// the clients and the other members opened meanwhile.
type portPicker struct {
	taken map[int]bool
}

// take returns a port that was free a moment ago and that it has not returned before.
func (pp *portPicker) take(t *testing.T) int {
	t.Helper()
	if pp.taken == nil {
		pp.taken = make(map[int]bool)
	}
	const low = 10000
	high := ephemeralLow()
	for range 1000 {
		p := low + rand.IntN(high-low)
		if pp.taken[p] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		ln.Close()
		pp.taken[p] = true
		return p
	}
	t.Fatalf("no free port in [%d, %d)", low, high)
	return 0
}

// ephemeralLow returns the lowest port the kernel gives out for port 0 and outgoing
// connections (Linux's ip_local_port_range; 32768, its default, elsewhere).
func ephemeralLow() int {
	const def = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return def
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return def
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n <= 10000+100 {
		return def
	}
	return n
}

// zooCfg is member i's zoo.cfg: its own server line has its real peer port, where it
// listens; every other member's has the port of the proxy on the link from i to it.
func (c *cluster) zooCfg(i int) string {
	m := c.members[i]
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n",
		tickTime.Milliseconds(), m.dir, m.client)
	if c.adminPort != 0 {
		fmt.Fprintf(&b, "admin.serverAddress=127.0.0.1\nadmin.serverPort=%d\n", c.adminPort)
	} else {
		b.WriteString("admin.enableServer=false\n")
	}
	b.WriteString("4lw.commands.whitelist=*\n")
	if c.ca != nil {
		fmt.Fprintf(&b, "sslQuorum=true\nssl.quorum.keyStore.location=%s\nssl.quorum.trustStore.location=%s\n",
			filepath.Join(c.certDir, fmt.Sprintf("member-%d.pem", m.id)), filepath.Join(c.certDir, "ca.pem"))
		if c.noHostnameVerification {
			b.WriteString("ssl.quorum.hostnameVerification=false\n")
		}
	}
	for j, o := range c.members {
		peer := o.peerAddr()
		if c.proxies != nil && j != i {
			peer = c.proxies[i][j].Addr()
		}
		// Nothing listens on the election port (Raft elects over the peer port): the
		// peer port stands in for it.
		fmt.Fprintf(&b, "server.%d=%s:%s;%s\n", o.id, peer, peer[strings.LastIndex(peer, ":")+1:], o.addr())
	}
	return b.String()
}

// makeCerts makes the ensemble's CA (ca.pem, ca-key.pem) and each member's key store in
// dir, as `paddock certs` does.
func (c *cluster) makeCerts(dir string) {
	c.t.Helper()
	ca, err := certs.NewCA("paddock ensemble test CA", time.Hour)
	if err != nil {
		c.t.Fatal(err)
	}
	c.ca, c.certDir = ca, dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca.CertPEM(), 0o644); err != nil {
		c.t.Fatal(err)
	}
	keyPEM, err := ca.KeyPEM()
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "ca-key.pem"), keyPEM, 0o600)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	for _, m := range c.members {
		certPEM, keyPEM := c.issue(uint64(m.id))
		store := certs.KeyStorePEM(certPEM, keyPEM, ca.CertPEM())
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("member-%d.pem", m.id)), store, 0o600); err != nil {
			c.t.Fatal(err)
		}
	}
}

// issue makes a certificate of the ensemble's CA for member id on 127.0.0.1.
func (c *cluster) issue(id uint64) (certPEM, keyPEM []byte) {
	c.t.Helper()
	certPEM, keyPEM, err := c.ca.Issue(certs.IssueOptions{CommonName: fmt.Sprintf("member %d", id),
		Hosts: []string{"127.0.0.1"}, MemberID: id, Validity: time.Hour})
	if err != nil {
		c.t.Fatal(err)
	}
	return certPEM, keyPEM
}

// in returns c for subtest t: the same members and proxies, failing t.
func (c *cluster) in(t *testing.T) *cluster {
	sub := *c
	sub.t = t
	return &sub
}

// start starts member i, failing the test if it does not come up.
func (c *cluster) start(i int) {
	c.t.Helper()
	if err := c.members[i].start(); err != nil {
		c.t.Fatal(err)
	}
}

// kill kills member i with SIGKILL.
func (c *cluster) kill(i int) { c.members[i].kill() }

// addrs returns the client addresses of the members at the given indexes, or of every
// member if none are given: a connect string.
func (c *cluster) addrs(idx ...int) []string {
	if len(idx) == 0 {
		for i := range c.members {
			idx = append(idx, i)
		}
	}
	var out []string
	for _, i := range idx {
		out = append(out, c.members[i].addr())
	}
	return out
}

// others returns the indexes of every member but i.
func (c *cluster) others(i int) []int {
	var out []int
	for j := range c.members {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}

// modes returns what srvr says of each member.
func (c *cluster) modes() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.mode()
	}
	return out
}

// diagnose describes each member for a failure: its srvr answer's mode and zxid (the
// zxid's high half is the Raft term it last applied in) and the end of its log.
func (c *cluster) diagnose() string {
	var b strings.Builder
	for _, m := range c.members {
		out, err := testutil.FourLetterWord(m.addr(), "srvr", time.Second)
		fmt.Fprintf(&b, "--- %s: srvr %v", m, err)
		for line := range strings.SplitSeq(out, "\n") {
			if strings.HasPrefix(line, "Mode:") || strings.HasPrefix(line, "Zxid:") {
				b.WriteString("; " + line)
			}
		}
		b.WriteString("\n")
		if m.child != nil {
			b.WriteString(m.child.LogTail(25) + "\n")
		}
	}
	return b.String()
}

// leaderAmong returns the index of the only member among idx that says it leads, or
// -1 if none or several do (a leader cut off from the others goes on saying so until
// CheckQuorum makes it step down).
func (c *cluster) leaderAmong(idx []int) int {
	leader := -1
	for _, i := range idx {
		if c.members[i].mode() != "leader" {
			continue
		}
		if leader >= 0 {
			return -1
		}
		leader = i
	}
	return leader
}

// waitLeader waits up to timeout until exactly one member among idx (every member if
// idx is empty) leads, and returns it.
func (c *cluster) waitLeader(timeout time.Duration, idx ...int) int {
	c.t.Helper()
	if len(idx) == 0 {
		idx = c.others(-1)
	}
	leader := -1
	testutil.Eventually(c.t, timeout, 20*time.Millisecond, func() bool {
		leader = c.leaderAmong(idx)
		return leader >= 0
	}, "no single leader among members %v; modes %v", plusOne(idx), c.modes())
	return leader
}

// allServing reports whether every member serves and one of them leads.
func (c *cluster) allServing() bool {
	leaders := 0
	for _, mode := range c.modes() {
		switch mode {
		case "leader":
			leaders++
		case "follower":
		default:
			return false
		}
	}
	return leaders == 1
}

// waitServing waits up to timeout until every member serves and one leads.
func (c *cluster) waitServing(timeout time.Duration) {
	c.t.Helper()
	testutil.Eventually(c.t, timeout, 20*time.Millisecond, c.allServing,
		"not every member serves; modes %v", c.modes())
}

// waitMode waits up to timeout until member i's srvr says mode, and returns how long
// that took.
func (c *cluster) waitMode(i int, mode string, timeout time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	testutil.Eventually(c.t, timeout, 20*time.Millisecond, func() bool { return c.members[i].mode() == mode },
		"member %d is not %q; modes %v", i+1, mode, c.modes())
	return time.Since(start)
}

// isolate partitions every link to and from member i.
func (c *cluster) isolate(i int) {
	for j := range c.members {
		if j != i {
			c.proxies[i][j].Partition()
			c.proxies[j][i].Partition()
		}
	}
}

// eachProxy calls f on every proxy.
func (c *cluster) eachProxy(f func(*faultproxy.Proxy)) {
	for _, row := range c.proxies {
		for _, p := range row {
			if p != nil {
				f(p)
			}
		}
	}
}

// heal ends every network fault.
func (c *cluster) heal() { c.eachProxy((*faultproxy.Proxy).Heal) }

// checkLogs fails the test for each process that ended other than by SIGKILL and each
// problem in a member's log, and copies the logs to the test log if PADDOCK_TEST_LOG
// is set.
func (c *cluster) checkLogs() {
	for _, m := range c.members {
		for life, p := range m.lives {
			name := fmt.Sprintf("%s (process %d, %s)", m, life+1, p.LogPath)
			if os.Getenv("PADDOCK_TEST_LOG") != "" {
				c.t.Logf("%s log:\n%s", name, p.LogTail(100000))
			}
			if err := selfExit(p); err != nil {
				c.t.Errorf("%s %v; log tail:\n%s", name, err, p.LogTail(40))
			}
			problems, err := p.LogProblems()
			if err != nil {
				c.t.Errorf("%s: %v", name, err)
			}
			problems = slices.DeleteFunc(problems, func(line string) bool {
				return slices.ContainsFunc(c.expectErrors, func(s string) bool { return strings.Contains(line, s) })
			})
			if len(problems) > 0 {
				c.t.Errorf("%s logged problems:\n%s", name, strings.Join(problems, "\n"))
			}
		}
	}
}

// plusOne turns member indexes into member ids, for messages.
func plusOne(idx []int) []int {
	out := slices.Clone(idx)
	for i := range out {
		out[i]++
	}
	return out
}

// quietLogger drops go-zookeeper/zk's connection chatter, which failovers make loud.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// dial opens a session to one of addrs with timeout, without waiting for it, dialling
// with dialer (net.DialTimeout if nil).
func dial(addrs []string, timeout time.Duration, dialer zk.Dialer) (*zk.Conn, <-chan zk.Event, error) {
	if dialer == nil {
		dialer = net.DialTimeout
	}
	return zk.Connect(addrs, timeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false), zk.WithDialer(dialer))
}

// connect opens a session to one of addrs, waits until it has one and closes it when
// the test ends.
func connect(t *testing.T, addrs []string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	return connectVia(t, addrs, nil)
}

// connectVia is connect with a dialer.
func connectVia(t *testing.T, addrs []string, dialer zk.Dialer) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	conn, events, err := dial(addrs, sessionTimeout, dialer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	testutil.Eventually(t, recoverBound, 10*time.Millisecond, func() bool {
		return conn.State() == zk.StateHasSession
	}, "no session with %v", addrs)
	return conn, events
}

// memberConn opens a session to member i alone, which must serve.
func (c *cluster) memberConn(i int) *zk.Conn {
	c.t.Helper()
	conn, _ := connect(c.t, c.addrs(i))
	return conn
}

// syncedChildren returns the children of path as member i sees them after a sync.
func syncedChildren(conn *zk.Conn, path string) ([]string, error) {
	if _, err := conn.Sync(path); err != nil {
		return nil, fmt.Errorf("sync %s: %w", path, err)
	}
	children, _, err := conn.Children(path)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", path, err)
	}
	slices.Sort(children)
	return children, nil
}

// createRetry creates path, trying again through connection trouble until timeout
// passes. A create that failed with a connection error may have been applied, so
// ErrNodeExists after the first attempt counts as success.
func createRetry(conn *zk.Conn, path string, data []byte, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for attempt := 0; ; attempt++ {
		_, err := conn.Create(path, data, 0, zk.WorldACL(zk.PermAll))
		switch {
		case err == nil, attempt > 0 && errors.Is(err, zk.ErrNodeExists):
			return nil
		case !retryable(err) || time.Now().After(deadline):
			return fmt.Errorf("create %s: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond) // go-zk is reconnecting; don't spin
	}
}

// retryable reports whether err says the request did not get through (it may still
// have been applied) rather than that the server refused it.
func retryable(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved)
}
