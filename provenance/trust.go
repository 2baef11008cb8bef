package provenance

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/paddock/paddock/server/datatree"
)

// Why a signature does not make data trusted. Verify's errors wrap one of them.
var (
	// ErrUnsigned says there is no signature.
	ErrUnsigned = errors.New("provenance: not signed")
	// ErrMalformed says the signature record cannot be read.
	ErrMalformed = errors.New("provenance: unreadable signature")
	// ErrUntrusted says the signer is not trusted for any role asked for.
	ErrUntrusted = errors.New("provenance: signer not trusted")
	// ErrBadSignature says the signature does not verify: the data, the znode or the
	// signature is not the one signed.
	ErrBadSignature = errors.New("provenance: signature does not verify")
)

// Trust is who may sign for which role: keys from a signers file, and certificates that
// chain to the trusted roots whose subjects hold roles. It is immutable and safe for
// concurrent use; the zero Trust trusts no one.
type Trust struct {
	keys     map[string][]string // "ed25519:<base64>" -> roles
	roots    *x509.CertPool      // nil: no certificate is trusted
	subjects map[string][]string // x509 subject -> roles
}

// NewTrust returns the trust of keys (ParseSigners' map) and of certificates chaining
// to roots (nil for none) whose subjects, as the server prints an x509 identity, hold
// roles in subjects.
func NewTrust(keys map[string][]string, roots *x509.CertPool, subjects map[string][]string) *Trust {
	return &Trust{keys: keys, roots: roots, subjects: subjects}
}

// Empty says the trust holds no key and no root: nothing can verify.
func (t *Trust) Empty() bool { return t == nil || len(t.keys) == 0 && t.roots == nil }

// Signed says who signed verified data, and under which of the accepted roles.
type Signed struct {
	By   string `json:"by"`   // "ed25519:<base64>" or "x509:<subject>"
	Role string `json:"role"` // the first role asked for that the signer holds
}

// Verify checks rec, a signature record, against data held by the znode of czxid under
// domain, and returns who signed it if the signer holds one of accept. Whatever rec,
// data or czxid, it returns an error wrapping ErrUnsigned, ErrMalformed, ErrUntrusted
// or ErrBadSignature, never a panic, unless rec is a signature by a trusted signer of
// exactly those bytes at exactly that czxid under that domain.
func (t *Trust) Verify(domain string, czxid int64, data, rec []byte, accept ...string) (Signed, error) {
	if len(rec) == 0 {
		return Signed{}, ErrUnsigned
	}
	r, err := parseRecord(rec)
	if err != nil {
		return Signed{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	msg := Message(domain, czxid, data)
	if r.Key != "" {
		return t.verifyKey(r, msg, accept)
	}
	return t.verifyCert(r, msg, accept)
}

func (t *Trust) verifyKey(r record, msg []byte, accept []string) (Signed, error) {
	s := Signed{By: r.Key}
	var roles []string
	if t != nil {
		roles = t.keys[r.Key]
	}
	if len(roles) == 0 {
		return s, fmt.Errorf("%w: key %s is not in the signers file", ErrUntrusted, r.Key)
	}
	if s.Role = firstOf(accept, roles); s.Role == "" {
		return s, untrustedRole(r.Key, roles, accept)
	}
	raw, _ := decodeKey(r.Key) // listed, so well formed
	if !ed25519.Verify(raw, msg, r.Sig) {
		return s, ErrBadSignature
	}
	return s, nil
}

func (t *Trust) verifyCert(r record, msg []byte, accept []string) (Signed, error) {
	if t == nil || t.roots == nil {
		return Signed{}, fmt.Errorf("%w: signed with a certificate, and no CA is trusted (tls_ca)", ErrUntrusted)
	}
	certs := make([]*x509.Certificate, len(r.Cert))
	for i, der := range r.Cert {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return Signed{}, fmt.Errorf("%w: certificate %d: %v", ErrMalformed, i, err)
		}
		certs[i] = c
	}
	leaf := certs[0]
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: t.roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := leaf.Verify(opts); err != nil {
		return Signed{}, fmt.Errorf("%w: certificate: %v", ErrUntrusted, err)
	}
	dn, err := datatree.SubjectDN(leaf.RawSubject)
	if err != nil {
		return Signed{}, fmt.Errorf("%w: certificate subject: %v", ErrMalformed, err)
	}
	s := Signed{By: "x509:" + dn}
	roles := t.subjects[dn]
	if s.Role = firstOf(accept, roles); s.Role == "" {
		return s, untrustedRole(s.By, roles, accept)
	}
	alg, _, err := certAlgorithm(leaf)
	if err != nil {
		return s, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if leaf.CheckSignature(alg, msg, r.Sig) != nil {
		return s, ErrBadSignature
	}
	return s, nil
}

// firstOf returns the first of accept that roles holds, "" if none.
func firstOf(accept, roles []string) string {
	for _, a := range accept {
		if slices.Contains(roles, a) {
			return a
		}
	}
	return ""
}

func untrustedRole(by string, roles, accept []string) error {
	held := "no role"
	if len(roles) > 0 {
		held = "roles " + strings.Join(roles, ", ")
	}
	return fmt.Errorf("%w: %s holds %s, and only %s may sign this", ErrUntrusted, by, held, strings.Join(accept, ", "))
}

// decodeKey returns the public key of "ed25519:<base64>".
func decodeKey(id string) (ed25519.PublicKey, bool) {
	b64, ok := strings.CutPrefix(id, keyPrefix)
	raw, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, false
	}
	return raw, true
}
