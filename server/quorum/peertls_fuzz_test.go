package quorum

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/certs"
)

// FuzzProves makes certificates of the test CA from arbitrary names — URI SANs (one a
// line), DNS SANs (one a line), IP SANs (the bytes, 4 or 16 at a time), a common name
// and extended key usages — and asks whether they prove member id at host. Nothing may
// panic, and a certificate proves a member only if it serves both ends of a link and
// names it: a URI SAN that is the member's URI but for the case of its prefix, or,
// without any member URI, the host among its DNS SANs (no wildcard), its IP SANs or,
// without any SAN, its common name.
func FuzzProves(f *testing.F) {
	f.Add("urn:paddock:member:2", "", []byte{}, "member 2", "127.0.0.1", uint64(2), uint8(3), true)
	f.Add("urn:paddock:member:02\nURN:Paddock:Member:2", "zk2.example.com", []byte{127, 0, 0, 1}, "x", "zk2.example.com", uint64(2), uint8(3), false)
	f.Add("", "*.example.com\nZK1.example.com", []byte{}, "zk1.example.com", "zk1.example.com", uint64(1), uint8(0), true)
	f.Add("spiffe://x/y", "", []byte{}, "10.0.0.1", "10.0.0.1", uint64(7), uint8(3), false)
	f.Add("urn:paddock:member:18446744073709551615", "", []byte(net.IPv6loopback), "", "::1", uint64(1<<64-1), uint8(2), true)
	p := newTestPKI(f)
	f.Fuzz(func(t *testing.T, uris, dns string, ips []byte, cn, host string, id uint64, eku uint8, hv bool) {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
		for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageAny} {
			if eku&(1<<len(tmpl.ExtKeyUsage)) != 0 {
				tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, u)
			}
		}
		for s := range strings.SplitSeq(uris, "\n") {
			if u, err := url.Parse(s); err == nil && s != "" {
				tmpl.URIs = append(tmpl.URIs, u)
			}
		}
		for s := range strings.SplitSeq(dns, "\n") {
			if s != "" {
				tmpl.DNSNames = append(tmpl.DNSNames, s)
			}
		}
		for n := 16; len(ips) >= 4; ips = ips[n:] {
			if n = 4; len(ips) >= 16 && ips[0]&1 == 1 {
				n = 16
			}
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.IP(slices.Clone(ips[:n])))
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, p.root, &p.key.PublicKey, p.rootKey)
		if err != nil {
			return // names x509 will not write
		}
		leaf, err := x509.ParseCertificate(der)
		if err != nil {
			return
		}
		tc := &TLS{Roots: p.roots, HostnameVerification: hv}
		if tc.Proves([]*x509.Certificate{leaf}, id, net.JoinHostPort(host, "2888")) != nil {
			return
		}
		usages := leaf.ExtKeyUsage
		if len(usages) > 0 && !slices.Contains(usages, x509.ExtKeyUsageAny) &&
			!(slices.Contains(usages, x509.ExtKeyUsageServerAuth) && slices.Contains(usages, x509.ExtKeyUsageClientAuth)) {
			t.Fatalf("a certificate for %v proves member %d", usages, id)
		}
		want := certs.MemberURI(id).String()
		byURI := slices.ContainsFunc(leaf.URIs, func(u *url.URL) bool { return strings.EqualFold(u.String(), want) })
		if byURI {
			return
		}
		if len(certs.MemberIDs(leaf)) > 0 {
			t.Fatalf("URIs %v prove member %d", leaf.URIs, id)
		}
		ip := net.ParseIP(host)
		noSAN := len(leaf.URIs)+len(leaf.DNSNames)+len(leaf.IPAddresses)+len(leaf.EmailAddresses) == 0
		byHost := ip == nil && slices.ContainsFunc(leaf.DNSNames, func(d string) bool { return strings.EqualFold(d, host) && !strings.Contains(d, "*") }) ||
			ip != nil && slices.ContainsFunc(leaf.IPAddresses, ip.Equal) ||
			noSAN && (strings.EqualFold(leaf.Subject.CommonName, host) || ip != nil && ip.Equal(net.ParseIP(leaf.Subject.CommonName)))
		if !byHost || ip != nil && ip.IsUnspecified() || host == "" {
			t.Fatalf("a certificate (URIs %v, DNS %q, IPs %v, CN %q) proves member %d at %q", leaf.URIs, leaf.DNSNames,
				leaf.IPAddresses, leaf.Subject.CommonName, id, host)
		}
	})
}
