package coordinator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/go-zookeeper/zk"
)

// TLSFiles names the PEM files a client connects over TLS with: the CA certificates
// that sign the servers' certificates, and, where the servers ask for one (and for the
// x509 auth scheme), the client's own certificate and key.
type TLSFiles struct {
	CA   string
	Cert string
	Key  string
}

// Enabled reports whether any file is named: a client with none connects in plain TCP.
func (f TLSFiles) Enabled() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

// Config loads the files into a client TLS configuration: the servers' certificates
// are verified against CA (the system roots if CA is empty) and the host name dialed.
func (f TLSFiles) Config() (*tls.Config, error) {
	if (f.Cert == "") != (f.Key == "") {
		return nil, fmt.Errorf("coordinator: tls: cert %q and key %q: give both or neither", f.Cert, f.Key)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("coordinator: tls: ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("coordinator: tls: ca %s: no PEM certificate in it", f.CA)
		}
		c.RootCAs = pool
	}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("coordinator: tls: cert %s, key %s: %w", f.Cert, f.Key, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// TLSDialer returns a zk.Dialer that opens TCP connections with base (plain TCP if nil)
// and then does a TLS handshake with config, naming the dialed host as the server
// unless config.ServerName is set. The handshake counts against the dial timeout.
func TLSDialer(config *tls.Config, base zk.Dialer) zk.Dialer {
	if base == nil {
		base = defaultDialer
	}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		start := time.Now()
		raw, err := base(network, address, timeout)
		if err != nil {
			return nil, err
		}
		c := config.Clone()
		if c.ServerName == "" {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				raw.Close()
				return nil, err
			}
			c.ServerName = host
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(timeout-time.Since(start), time.Millisecond))
		defer cancel()
		conn := tls.Client(raw, c)
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			var verr *tls.CertificateVerificationError
			if errors.As(err, &verr) {
				return nil, fmt.Errorf("coordinator: tls handshake with %s: the server's certificate is not trusted: %w", address, err)
			}
			return nil, fmt.Errorf("coordinator: tls handshake with %s: %w", address, err)
		}
		return conn, nil
	}
}
