package configs

import (
	"fmt"
	"net"
	"strconv"
)

// secureClientAddr sets secure_client_addr from secureClientPortAddress and
// secureClientPort. As with clientPort, a port without an address listens on every
// interface, which is ZooKeeper's meaning.
func (m *zooMapper) secureClientAddr(c *zooCfg) error {
	port, hasPort := m.got["secureClientPort"].(int)
	host, hasHost := m.got["secureClientPortAddress"].(string)
	switch {
	case !hasPort && hasHost:
		return fmt.Errorf("%s: secureClientPortAddress is set but secureClientPort is not set: want secureClientPort too", m.path)
	case !hasPort:
		return nil
	}
	from := "secureClientPort"
	if hasHost {
		from = "secureClientPortAddress and secureClientPort"
	}
	c.set("secure_client_addr", net.JoinHostPort(host, strconv.Itoa(port)), from)
	return nil
}
