package provenance

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/paddock/paddock/server/datatree"
)

// MaxRecord bounds a signature record: a key's is about 150 bytes, a certificate
// chain's a few KiB.
const MaxRecord = 32 << 10

// maxChain bounds the certificates a record carries (the leaf and its intermediates).
const maxChain = 4

// keyPrefix names the scheme of a bare signing key in records and signers files.
const keyPrefix = "ed25519:"

// Message returns the bytes a signature covers: domain, a NUL, czxid as 8 bytes
// big-endian, and data. domain is a constant of the caller's, without a NUL.
func Message(domain string, czxid int64, data []byte) []byte {
	m := make([]byte, 0, len(domain)+9+len(data))
	m = append(m, domain...)
	m = append(m, 0)
	m = binary.BigEndian.AppendUint64(m, uint64(czxid))
	return append(m, data...)
}

// record is a signature record as stored (see the package doc).
type record struct {
	V    int      `json:"v"`
	Key  string   `json:"key,omitempty"`
	Cert [][]byte `json:"cert,omitempty"`
	Sig  []byte   `json:"sig"`
}

// parseRecord decodes a record, refusing what no Signer writes.
func parseRecord(b []byte) (record, error) {
	var r record
	if len(b) > MaxRecord {
		return r, fmt.Errorf("%d bytes: at most %d", len(b), MaxRecord)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return r, fmt.Errorf("not a signature record: %w", err)
	}
	if d.More() {
		return r, errors.New("not a signature record: data after it")
	}
	switch {
	case r.V != 1:
		return r, fmt.Errorf("version %d: want 1", r.V)
	case (r.Key == "") == (len(r.Cert) == 0):
		return r, errors.New("want a key or a certificate chain, one of them")
	case len(r.Cert) > maxChain:
		return r, fmt.Errorf("%d certificates: at most %d", len(r.Cert), maxChain)
	case len(r.Sig) == 0:
		return r, errors.New("no signature")
	}
	return r, nil
}

// Signer signs data as one identity: a bare Ed25519 key (trusted through a signers
// file) or a client certificate's key (trusted through its CA and the roles). It is
// immutable and safe for concurrent use.
type Signer struct {
	priv  crypto.Signer
	key   string   // "ed25519:<base64>" for a bare key
	chain [][]byte // DER, leaf first, for a certificate's key
	leaf  *x509.Certificate
	hash  crypto.Hash // what the message is hashed with before signing (0: Ed25519)
	id    string      // what Signed.By says of this signer
}

// NewKeySigner returns the signer of a bare Ed25519 key.
func NewKeySigner(priv ed25519.PrivateKey) *Signer {
	k := PublicID(priv.Public().(ed25519.PublicKey))
	return &Signer{priv: priv, key: k, id: k}
}

// PublicID is the name of an Ed25519 public key in records and signers files:
// "ed25519:<base64>".
func PublicID(pub ed25519.PublicKey) string {
	return keyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// LoadKey reads a signing key: an Ed25519 private key, PKCS#8 in PEM ("PRIVATE
// KEY"), in a file that only its owner may read or write (mode 0600 or less). Errors
// never show the key.
func LoadKey(path string) (*Signer, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return nil, fmt.Errorf("%s: mode %04o: a signing key must be its owner's only (chmod 600)", path, m)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: want a PEM PRIVATE KEY block (PKCS#8), as paddock up writes", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: not a PKCS#8 private key", path)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: a %T: want an Ed25519 key (a certificate's key signs through tls_cert and tls_key)", path, k)
	}
	return NewKeySigner(priv), nil
}

// GenerateKey makes a new Ed25519 key and writes it to path (PKCS#8 PEM, mode 0600),
// which must not exist; it returns the key's signer.
func GenerateKey(path string) (*Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(path)
		return nil, err
	}
	return NewKeySigner(priv), nil
}

// LoadCert returns the signer of a client certificate's key (the tls_cert and tls_key
// files a service connects with): its records carry the chain in certFile.
func LoadCert(certFile, keyFile string) (*Signer, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%s, %s: %w", certFile, keyFile, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFile, err)
	}
	priv, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: a key that cannot sign", keyFile)
	}
	_, hash, err := certAlgorithm(leaf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFile, err)
	}
	dn, err := datatree.SubjectDN(leaf.RawSubject)
	if err != nil {
		return nil, fmt.Errorf("%s: subject: %w", certFile, err)
	}
	chain := pair.Certificate
	if len(chain) > maxChain {
		chain = chain[:maxChain]
	}
	return &Signer{priv: priv, chain: chain, leaf: leaf, hash: hash, id: "x509:" + dn}, nil
}

// certAlgorithm returns how a certificate's key signs: the x509 algorithm that
// checks it, and the hash the message goes through first (0 for Ed25519).
func certAlgorithm(c *x509.Certificate) (x509.SignatureAlgorithm, crypto.Hash, error) {
	switch c.PublicKey.(type) {
	case ed25519.PublicKey:
		return x509.PureEd25519, 0, nil
	case *ecdsa.PublicKey:
		return x509.ECDSAWithSHA256, crypto.SHA256, nil
	case *rsa.PublicKey:
		return x509.SHA256WithRSA, crypto.SHA256, nil
	}
	return 0, 0, fmt.Errorf("a %T key: want Ed25519, ECDSA or RSA", c.PublicKey)
}

// ID says who signs: "ed25519:<base64>" or "x509:<subject>".
func (s *Signer) ID() string { return s.id }

// Sign returns the signature record of data, held by the znode of czxid, under domain.
func (s *Signer) Sign(domain string, czxid int64, data []byte) ([]byte, error) {
	msg := Message(domain, czxid, data)
	digest := msg
	if s.hash != 0 {
		sum := sha256.Sum256(msg)
		digest = sum[:]
	}
	sig, err := s.priv.Sign(rand.Reader, digest, s.hash)
	if err != nil {
		return nil, fmt.Errorf("provenance: sign: %w", err)
	}
	r := record{V: 1, Key: s.key, Sig: sig}
	if s.key == "" {
		r.Cert = s.chain
	}
	return json.Marshal(r)
}

// Made reports whether rec is a valid signature of this signer's over data at czxid
// under domain: a record an earlier try of its own left (a write whose answer was
// lost), which it need not write again.
func (s *Signer) Made(domain string, czxid int64, data, rec []byte) bool {
	r, err := parseRecord(rec)
	if err != nil {
		return false
	}
	msg := Message(domain, czxid, data)
	if s.key != "" {
		return r.Key == s.key && ed25519.Verify(s.priv.Public().(ed25519.PublicKey), msg, r.Sig)
	}
	if len(r.Cert) == 0 || !bytes.Equal(r.Cert[0], s.chain[0]) {
		return false
	}
	alg, _, _ := certAlgorithm(s.leaf)
	return s.leaf.CheckSignature(alg, msg, r.Sig) == nil
}

// ParseSigners parses a signers file's lines, "role=ed25519:<base64 public key>", and
// returns the roles of each key. Every role must be one of known.
func ParseSigners(lines []string, known []string) (map[string][]string, error) {
	keys := make(map[string][]string)
	var errs []error
	for i, l := range lines {
		role, key, _ := strings.Cut(l, "=")
		_, ok := decodeKey(key)
		switch {
		case !slices.Contains(known, role):
			errs = append(errs, fmt.Errorf("signers line %d (%s): role %q: want one of %s", i+1, l, role, strings.Join(known, ", ")))
		case !ok:
			errs = append(errs, fmt.Errorf("signers line %d (%s): want role=ed25519:<base64 of a %d-byte public key>", i+1, l, ed25519.PublicKeySize))
		case !slices.Contains(keys[key], role):
			keys[key] = append(keys[key], role)
		}
	}
	return keys, errors.Join(errs...)
}
