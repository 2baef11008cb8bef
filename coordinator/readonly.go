package coordinator

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// maxConnectFrame bounds the first frame ReadOnlyDialer rewrites: go-zookeeper's connect
// request is 44 bytes of body (a 16-byte password). A longer first frame is not one, and
// passes unchanged.
const maxConnectFrame = 1024

// ReadOnlyDialer returns a zk.Dialer, over base (plain TCP if nil), whose connections ask
// for a read-only session: they add the readOnly flag that go-zookeeper/zk's connect
// request leaves out (Java's canBeReadOnly, kazoo's read_only=True). A member of an
// ensemble cut off from its quorum in read-only mode (readonlymode.enabled) then takes the
// client and answers its reads from its own copy of the tree, possibly stale, while
// refusing its writes (IsNotReadOnly); a member that serves takes it as any client.
// go-zookeeper does not know that the session it got is read-only: the client learns it
// from the first write refused.
func ReadOnlyDialer(base zk.Dialer) zk.Dialer {
	if base == nil {
		base = defaultDialer
	}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := base(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &readOnlyConn{Conn: c}, nil
	}
}

// IsNotReadOnly reports whether err is a server's NotReadOnly (-119): a write, or a
// sync, sent on a read-only session. go-zookeeper/zk has no error of its own for it.
func IsNotReadOnly(err error) bool {
	return err != nil && strings.HasSuffix(err.Error(), "unknown error: -119")
}

// readOnlyConn sets the readOnly flag on the first frame written, the connect request:
// it holds the frame's bytes until the frame is whole, then writes it one byte longer.
type readOnlyConn struct {
	net.Conn
	mu    sync.Mutex
	first []byte // the first frame's bytes so far; guarded by mu
	done  bool   // the first frame has gone; guarded by mu
}

var errConnectFrame = errors.New("coordinator: read-only dialer: the connect request is too large")

func (c *readOnlyConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.Conn.Write(p)
	}
	c.first = append(c.first, p...)
	if len(c.first) < 4 {
		return len(p), nil
	}
	size := int(binary.BigEndian.Uint32(c.first))
	if size > maxConnectFrame {
		return 0, errConnectFrame
	}
	if len(c.first) < 4+size {
		return len(p), nil
	}
	rest := c.first[4+size:]
	frame := make([]byte, 0, 5+size+len(rest))
	frame = binary.BigEndian.AppendUint32(frame, uint32(size+1))
	frame = append(frame, c.first[4:4+size]...)
	frame = append(frame, 1) // readOnly
	frame = append(frame, rest...)
	c.done, c.first = true, nil
	if _, err := c.Conn.Write(frame); err != nil {
		return 0, err
	}
	return len(p), nil
}
