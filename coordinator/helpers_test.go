package coordinator

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// Tests run against paddock started in-process and, for the core recipes, against Apache
// ZooKeeper 3.8 (one process shared by the package, started on first use). Both tick
// every 100 ms, so sessions may time out in under a second.
const testTick = 100 * time.Millisecond

// testSessionTimeout is what test sessions ask for: short, so expiry tests are quick,
// and well above both servers' minimum of two ticks.
const testSessionTimeout = time.Second

var apache struct {
	once sync.Once
	zk   *testutil.ZooKeeper
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if apache.zk != nil {
		apache.zk.Stop()
	}
	// No goroutine a test started may outlive the tests.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left after the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// backend is a server the tests run against.
type backend struct {
	name string
	addr func(t *testing.T) string
}

var (
	paddockBackend = backend{"paddock", func(t *testing.T) string {
		return testutil.StartPaddock(t, func(c *server.Config) { c.TickTime = testTick })
	}}
	zookeeperBackend = backend{"zookeeper", func(t *testing.T) string {
		apache.once.Do(func() {
			apache.zk, apache.err = testutil.StartZooKeeper(nil, testutil.ZooKeeperOptions{TickTime: testTick})
		})
		if apache.err != nil {
			t.Fatalf("start Apache ZooKeeper: %v", apache.err)
		}
		return apache.zk.Addr
	}}
	bothBackends = []backend{paddockBackend, zookeeperBackend}
)

// onEach runs fn as a subtest against each backend.
func onEach(t *testing.T, backends []backend, fn func(t *testing.T, addr string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.addr(t)) })
	}
}

// testRoot creates a fresh persistent root for one test (the ZooKeeper backend is
// shared) and returns its path.
func testRoot(t *testing.T, s *Session) string {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	root := fmt.Sprintf("/%s-%d", name, time.Now().UnixNano())
	if _, err := s.Conn().Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create test root %s: %v", root, err)
	}
	return root
}

// connect opens a Session to addr with the test timeout, closed when the test ends.
func connect(t *testing.T, addr string, configure ...func(*Config)) *Session {
	t.Helper()
	cfg := Config{Servers: []string{addr}, SessionTimeout: testSessionTimeout, Logger: testutil.TestLogger()}
	for _, f := range configure {
		f(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// cuttable returns a configure function giving the Session a dialer the test can cut.
func cuttable(c *testutil.Cutter) func(*Config) {
	return func(cfg *Config) { cfg.Dialer = c.Dial }
}

// expire cuts s off until its servers have expired its session, then lets it reconnect,
// and waits for the new session.
func expire(t *testing.T, s *Session, c *testutil.Cutter) {
	t.Helper()
	old := s.SessionID()
	c.Cut()
	time.Sleep(s.Timeout() + 4*testTick) // the servers expire it at the tick after its timeout
	c.Restore()
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		return s.State() == StateConnected && s.SessionID() != old
	}, "no new session after the old one (0x%x) expired; state %v", old, s.State())
}

// nextEvent returns the next event, failing the test after a while.
func nextEvent(t *testing.T, events <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("event channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return Event{}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
