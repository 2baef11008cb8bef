package durability

import (
	"errors"
	"fmt"
	"net"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

var worldACL = zk.WorldACL(zk.PermAll)

// quietLogger drops go-zookeeper/zk's log lines: every kill makes each client log its
// failed reconnects.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// gate lets clients dial until it is closed. A round's clients dial through one: once the
// server is killed the gate closes, so nothing they still hold (a queued request, the
// closeSession of Close) can ever reach the next server process on the same port.
type gate struct{ closed atomic.Bool }

var errGateClosed = errors.New("durability: this round's server is gone")

func (g *gate) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	if g.closed.Load() {
		return nil, errGateClosed
	}
	return net.DialTimeout(network, addr, timeout)
}

func (g *gate) close() { g.closed.Store(true) }

// connectTimeout bounds the wait for a new session.
const connectTimeout = 10 * time.Second

// connect opens a go-zookeeper/zk session to addr (through g unless it is nil, with
// events to cb unless it is nil) and waits until it has one, or until stop returns true
// (then it returns errStopped).
func connect(addr string, timeout time.Duration, g *gate, stop func() bool, cb zk.EventCallback) (*zk.Conn, error) {
	opts := options(zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if g != nil {
		opts = append(opts, zk.WithDialer(g.dial))
	}
	if cb != nil {
		opts = append(opts, zk.WithEventCallback(cb))
	}
	c, _, err := zk.Connect([]string{addr}, timeout, opts...)
	if err != nil {
		return nil, err
	}
	stopped := false
	ok := testutil.WaitFor(connectTimeout, 2*time.Millisecond, func() bool {
		stopped = stop != nil && stop()
		return stopped || c.State() == zk.StateHasSession
	})
	if ok && !stopped {
		return c, nil
	}
	c.Close()
	if stopped {
		return nil, errStopped
	}
	return nil, fmt.Errorf("no session with %s within %v", addr, connectTimeout)
}

// options makes a slice of go-zookeeper/zk's connection options, whose type it does not export.
func options[T any](o ...T) []T { return o }

var errStopped = errors.New("durability: stopped")

// isConnErr reports whether err says the request's fate is unknown (the connection went
// away) rather than giving the server's answer.
func isConnErr(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrClosing) ||
		errors.Is(err, zk.ErrNoServer) || errors.Is(err, errGateClosed)
}

// readDir reads a directory: its cversion and its children's data and stats, fetched
// through parallel requests on c.
func readDir(c *zk.Conn, dir string, parallel int) (observedDir, error) {
	names, stat, err := c.Children(dir)
	if err != nil {
		return observedDir{}, fmt.Errorf("getChildren %s: %w", dir, err)
	}
	nodes := make([]*znode, len(names))
	errs := make([]error, len(names))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(parallel, len(names)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(names); i = int(next.Add(1) - 1) {
				data, st, err := c.Get(path.Join(dir, names[i]))
				switch {
				case errors.Is(err, zk.ErrNoNode): // deleted since: its session expired
				case err != nil:
					errs[i] = fmt.Errorf("getData %s/%s: %w", dir, names[i], err)
				default:
					nodes[i] = &znode{Data: string(data), Version: st.Version, Owner: st.EphemeralOwner, Mzxid: st.Mzxid}
				}
			}
		})
	}
	wg.Wait()
	d := observedDir{Children: make(map[string]znode, len(names)), Cversion: stat.Cversion}
	for i, n := range nodes {
		if n != nil {
			d.Children[names[i]] = *n
		}
	}
	return d, errors.Join(errs...)
}
