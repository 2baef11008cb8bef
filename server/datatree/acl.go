package datatree

import (
	"crypto/sha1"
	"encoding/base64"
	"net"
	"strconv"
	"strings"

	"github.com/paddock/paddock/server/wire"
)

// Identity schemes.
const (
	SchemeWorld  = "world"
	SchemeAuth   = "auth"
	SchemeDigest = "digest"
	SchemeIP     = "ip"
	SchemeSuper  = "super"
	SchemeSASL   = "sasl" // identities proven by a SASL exchange: sasl:<user>
	// SchemeX509 identifies a client by the subject of the certificate it gave at the
	// TLS handshake (ZooKeeper's X509AuthenticationProvider).
	SchemeX509 = "x509"
)

// Digest returns the digest identity for credentials "user:password":
// "user:" + base64(SHA-1("user:password")), as DigestAuthenticationProvider.generateDigest.
// Credentials without a colon are accepted as ZooKeeper does: the whole string is the user.
func Digest(credentials string) string {
	user, _, _ := strings.Cut(credentials, ":")
	sum := sha1.Sum([]byte(credentials))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// Allowed reports whether a requester with identities ids holds perm on a node with acl.
// An empty ACL allows everything; a "super" identity passes every check.
func Allowed(acl []wire.ACL, perm wire.Perm, ids []wire.Identity) bool {
	if len(acl) == 0 {
		return true
	}
	for _, id := range ids {
		if id.Scheme == SchemeSuper {
			return true
		}
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.Scheme == SchemeWorld && a.ID == "anyone" {
			return true
		}
		for _, id := range ids {
			if id.Scheme == a.Scheme && idMatches(a.Scheme, id.ID, a.ID) {
				return true
			}
		}
	}
	return false
}

func idMatches(scheme, id, aclID string) bool {
	if scheme == SchemeIP {
		return ipMatches(id, aclID)
	}
	return id == aclID
}

// FixupACL validates the ACL of a create or setACL and expands the "auth" scheme into one
// entry per authenticated (digest, sasl, x509) identity of the requester, as ZooKeeper's fixupACL.
// Duplicates are removed before expansion; an empty list, an unknown scheme, a malformed
// id, or "auth" without an authenticated identity is ErrInvalidACL.
func FixupACL(acl []wire.ACL, ids []wire.Identity) ([]wire.ACL, error) {
	acl = dedupACL(acl)
	if len(acl) == 0 {
		return nil, ErrInvalidACL
	}
	out := make([]wire.ACL, 0, len(acl))
	for _, a := range acl {
		switch {
		case a.Scheme == SchemeWorld && a.ID == "anyone":
			out = append(out, a)
		case a.Scheme == SchemeAuth:
			n := len(out)
			for _, id := range ids {
				if id.Scheme == SchemeDigest || id.Scheme == SchemeSASL || id.Scheme == SchemeX509 { // authenticated providers; ip is not
					out = append(out, wire.ACL{Perms: a.Perms, Scheme: id.Scheme, ID: id.ID})
				}
			}
			if len(out) == n {
				return nil, ErrInvalidACL
			}
		case a.Scheme == SchemeDigest && validDigestID(a.ID),
			a.Scheme == SchemeIP && validIPID(a.ID),
			a.Scheme == SchemeSASL && validSASLID(a.ID),
			a.Scheme == SchemeX509 && ValidX509ID(a.ID):
			out = append(out, a)
		default:
			return nil, ErrInvalidACL
		}
	}
	return out, nil
}

func dedupACL(acl []wire.ACL) []wire.ACL {
	out := acl[:0:0]
	for _, a := range acl {
		dup := false
		for _, b := range out {
			if a == b {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, a)
		}
	}
	return out
}

// validDigestID mirrors Java's id.split(":").length == 2 (trailing empty parts dropped).
func validDigestID(id string) bool {
	parts := strings.Split(id, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return len(parts) == 2
}

// validSASLID mirrors SASLAuthenticationProvider.isValid, which takes what Hadoop's
// KerberosName parses: any name without '@', or name[/host]@realm with one '@' and
// at most one '/' before it. ZooKeeper accepts sasl ACLs only with its SASL provider
// configured; paddock always does (the identities exist only with SASL users).
func validSASLID(id string) bool {
	before, realm, hasRealm := strings.Cut(id, "@")
	if !hasRealm {
		return true
	}
	return strings.Count(before, "/") <= 1 && !strings.ContainsAny(realm, "/@")
}

func validIPID(id string) bool {
	addr, bits, ok := parseIPACL(id)
	return ok && addr != nil && bits >= 0
}

// parseIPACL parses "addr[/bits]"; bits defaults to the address length.
func parseIPACL(s string) (addr []byte, bits int, ok bool) {
	a, b, hasBits := strings.Cut(s, "/")
	addr = ipBytes(a)
	if addr == nil {
		return nil, 0, false
	}
	bits = len(addr) * 8
	if hasBits {
		n, err := strconv.ParseInt(b, 10, 32)
		if err != nil || n < 0 || int(n) > len(addr)*8 {
			return nil, 0, false
		}
		bits = int(n)
	}
	return addr, bits, true
}

// ipBytes parses a dotted IPv4 address the way Java's Integer.parseInt does each part
// (leading zeros allowed), or an IPv6 address; nil if neither.
func ipBytes(s string) []byte {
	if strings.Contains(s, ":") {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil
		}
		return ip.To16()
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil
	}
	b := make([]byte, 4)
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 || n > 255 {
			return nil
		}
		b[i] = byte(n)
	}
	return b
}

func ipMatches(remote, aclID string) bool {
	want, bits, ok := parseIPACL(aclID)
	if !ok {
		return false
	}
	got := ipBytes(remote)
	if got == nil || len(got) != len(want) {
		return false
	}
	for i := range want {
		m := byte(0xff)
		switch {
		case bits >= (i+1)*8:
		case bits <= i*8:
			m = 0
		default:
			m = byte(0xff << (8 - (bits - i*8)))
		}
		if got[i]&m != want[i]&m {
			return false
		}
	}
	return true
}
