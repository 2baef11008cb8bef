package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// backdate is how long before its making a certificate is valid from, so that members
// whose clocks are a little behind accept it at once.
const backdate = 5 * time.Minute

// A CA is a small certificate authority: a self-signed certificate and its key, which
// sign member and client certificates for recipes, tests and small deployments. It keeps
// no record of what it issued and cannot revoke: to shut out a leaked key, make a new
// CA and new certificates. Its methods are safe for concurrent use.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// NewCA makes a CA with a new ECDSA P-256 key, named commonName, valid for validity
// from now. Its certificate signs certificates only (MaxPathLen 0: no intermediates).
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	if validity <= 0 {
		return nil, fmt.Errorf("certs: CA validity %v: want a duration > 0", validity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("certs: sign CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key}, nil
}

// LoadCA reads a CA from certPath, its PEM certificate (the first CERTIFICATE block),
// and keyPath, its unencrypted PEM private key, as CertPEM and KeyPEM write them. The
// certificate must be a CA's and match the key.
func LoadCA(certPath, keyPath string) (*CA, error) {
	data, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	certs, err := parsePEMCertificates(data)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate %s: %w", certPath, err)
	}
	cert := certs[0]
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, fmt.Errorf("certs: CA certificate %s: not a CA certificate (basic constraints CA:TRUE)", certPath)
	}
	key, err := loadCAKey(keyPath)
	if err == nil {
		err = keyMatches(key, cert)
	}
	if err != nil {
		return nil, fmt.Errorf("certs: CA key %s: %w", keyPath, err)
	}
	return &CA{cert: cert, key: key.(crypto.Signer)}, nil
}

func loadCAKey(path string) (crypto.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blocks, err := pemBlocks(data)
	if err != nil {
		return nil, err
	}
	for _, b := range blocks {
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			return parsePrivateKey(b, "")
		}
	}
	return nil, errors.New("no private key: want a PRIVATE KEY block")
}

// Certificate returns the CA's certificate. The caller must not change it.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// CertPEM returns the CA's certificate in PEM: a trust store for what it issues.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// KeyPEM returns the CA's private key in PEM (PKCS#8, unencrypted): keep it secret.
func (ca *CA) KeyPEM() ([]byte, error) { return keyPEMOf(ca.key) }

// IssueOptions says what certificate CA.Issue makes.
type IssueOptions struct {
	// CommonName is the subject's; empty means the first of Hosts, or "paddock member
	// <MemberID>". Go's TLS (and ZooKeeper's) checks host names against Hosts, not it.
	CommonName string
	// Hosts are the names and addresses the certificate is valid for: IP addresses
	// become IP subject alternative names, others DNS names (a leading *. is a wildcard).
	Hosts []string
	// MemberID, when not 0, names the ensemble member the certificate is for (MemberURI).
	MemberID uint64
	// ExtKeyUsage is which end of a TLS link the certificate may authenticate: empty
	// means both (server and client authentication), as a member, which accepts and
	// makes connections, needs. A client's certificate is best client authentication
	// only, and a server's server authentication only, so that neither can stand in
	// for the other.
	ExtKeyUsage []x509.ExtKeyUsage
	// Validity is how long the certificate is valid from now; it ends no later than the
	// CA's certificate does.
	Validity time.Duration
}

// Issue makes a new ECDSA P-256 key and a certificate for it signed by the CA, for the
// ends of a TLS link o.ExtKeyUsage says (both by default). It returns both in PEM; the
// key is PKCS#8, unencrypted, which ZooKeeper's PEM key stores read too.
func (ca *CA) Issue(o IssueOptions) (certPEM, keyPEM []byte, err error) {
	tmpl, err := ca.template(o)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: generate key: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: sign certificate: %w", err)
	}
	kp, err := keyPEMOf(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), kp, nil
}

// template checks o and returns the certificate it asks for, but for the key.
func (ca *CA) template(o IssueOptions) (*x509.Certificate, error) {
	if o.Validity <= 0 {
		return nil, fmt.Errorf("certs: validity %v: want a duration > 0", o.Validity)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if len(o.ExtKeyUsage) > 0 {
		usage = slices.Clone(o.ExtKeyUsage)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: o.CommonName},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(o.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		tmpl.NotAfter = ca.cert.NotAfter
	}
	for _, h := range o.Hosts {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			continue
		}
		if !validDNSName(h) {
			return nil, fmt.Errorf("certs: host %q: want a DNS name or an IP address, without a port", h)
		}
		tmpl.DNSNames = append(tmpl.DNSNames, h)
	}
	if o.MemberID != 0 {
		tmpl.URIs = append(tmpl.URIs, MemberURI(o.MemberID))
	}
	switch {
	case tmpl.Subject.CommonName != "":
	case len(o.Hosts) > 0:
		tmpl.Subject.CommonName = o.Hosts[0]
	case o.MemberID != 0:
		tmpl.Subject.CommonName = "paddock member " + strconv.FormatUint(o.MemberID, 10)
	default:
		return nil, errors.New("certs: a certificate needs a common name, a host or a member id")
	}
	return tmpl, nil
}

// validDNSName accepts letters, digits, hyphens and underscores in dot-separated labels,
// the first of which may be a * wildcard.
func validDNSName(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// newSerial returns a random 128-bit serial number, as the CA/Browser Forum's rules
// (at least 64 bits of randomness) and RFC 5280 (positive, at most 20 bytes) want.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil // positive, never 0
}

// keyPEMOf returns key in PEM, PKCS#8.
func keyPEMOf(key crypto.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
