package conformance

import (
	"bufio"
	"crypto/tls"
	"net"
	"time"
)

// DialTLS opens a TLS connection to addr (a secure client port), handshake included,
// without sending anything more.
func DialTLS(addr string, config *tls.Config, timeout time.Duration) (*Conn, error) {
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", addr, config)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, br: bufio.NewReader(nc)}, nil
}
