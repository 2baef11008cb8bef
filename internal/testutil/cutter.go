package testutil

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Cutter is a dialer for ZooKeeper clients (github.com/go-zookeeper/zk's Dialer) whose
// connections a test can cut: Cut closes every open connection and refuses new ones
// until Restore. Cutting a client off for longer than its session timeout is how tests
// make the servers expire its session, with the real servers and the real client.
type Cutter struct {
	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// ErrCut is what a dial returns while the Cutter is cut.
var ErrCut = errors.New("testutil: connection cut by the test")

// NewCutter returns a Cutter that lets connections through.
func NewCutter() *Cutter { return &Cutter{conns: make(map[net.Conn]struct{})} }

// Dial connects like net.DialTimeout unless the Cutter is cut.
func (c *Cutter) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c.mu.Lock()
	cut := c.cut
	c.mu.Unlock()
	if cut {
		return nil, ErrCut
	}
	nc, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		nc.Close()
		return nil, ErrCut
	}
	c.conns[nc] = struct{}{}
	return &cutterConn{Conn: nc, c: c}, nil
}

// Cut closes every connection made through c and refuses new ones.
func (c *Cutter) Cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	for nc := range c.conns {
		nc.Close()
	}
	clear(c.conns)
}

// Restore lets connections through again.
func (c *Cutter) Restore() {
	c.mu.Lock()
	c.cut = false
	c.mu.Unlock()
}

type cutterConn struct {
	net.Conn
	c *Cutter
}

func (cc *cutterConn) Close() error {
	cc.c.mu.Lock()
	delete(cc.c.conns, cc.Conn)
	cc.c.mu.Unlock()
	return cc.Conn.Close()
}
