package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"software.sslmate.com/src/go-pkcs12"
)

// The store types, as ZooKeeper's ssl.*.keyStore.type and trustStore.type name them.
const (
	PEM    = "PEM"
	PKCS12 = "PKCS12"
)

// ErrPassword is wrapped by the errors of a store or key the password does not open.
var ErrPassword = errors.New("certs: wrong password")

// convertJava is what to do with a Java key store (JKS, BCFKS).
const convertJava = "convert it to PKCS12 with keytool -importkeystore -srckeystore FILE " +
	"-destkeystore FILE.p12 -deststoretype PKCS12, or to PEM"

// StoreType returns the type of the key or trust store at path: typ when it is set (PEM
// or PKCS12, in any case), else the type its file name says, as ZooKeeper's
// KeyStoreFileType.fromPropertyValueOrFileName does (.pem, .crt, .cer and .key are PEM;
// .p12 and .pfx are PKCS12). Java's JKS and BCFKS are refused with how to convert them;
// LoadKeyStore and LoadTrustStore, which read the file, accept one called JKS that is
// a PKCS12 file, as Java does. The error says what is allowed, for the caller to prefix
// with the setting it checks.
func StoreType(path, typ string) (string, error) {
	if typ != "" {
		switch t := strings.ToUpper(typ); t {
		case PEM, PKCS12:
			return t, nil
		case "JKS", "BCFKS":
			return "", fmt.Errorf("store type %s is not supported: %s", t, convertJava)
		}
		return "", fmt.Errorf("unknown store type %q: want PEM or PKCS12", typ)
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".pem", ".crt", ".cer", ".key":
		return PEM, nil
	case ".p12", ".pfx":
		return PKCS12, nil
	case ".jks", ".bcfks":
		return "", fmt.Errorf("%s: a Java %s store is not supported: %s",
			path, strings.ToUpper(ext[1:]), convertJava)
	}
	return "", fmt.Errorf("%s: cannot tell the store type from the file name: "+
		"set it to PEM or PKCS12, or name the file .pem (.crt, .cer, .key) or .p12 (.pfx)", path)
}

// LoadKeyStore reads the private key and certificate chain at path, a store of type typ
// (see StoreType; empty to tell by the file name), opened with password where it is
// encrypted. The first certificate is the leaf, whose public key must be the private
// key's; the result's Leaf is set.
func LoadKeyStore(path, typ, password string) (tls.Certificate, error) {
	typ, data, err := readStore(path, typ)
	if err != nil {
		return tls.Certificate{}, err
	}
	var key crypto.PrivateKey
	var chain []*x509.Certificate
	if typ == PEM {
		key, chain, err = parsePEMKeyStore(data, password)
	} else {
		key, chain, err = parsePKCS12KeyStore(data, password)
	}
	if err == nil {
		err = keyMatches(key, chain[0])
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: key store %s: %w", path, err)
	}
	cert := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// LoadTrustStore reads the CA certificates at path, a store of type typ (see StoreType;
// empty to tell by the file name), opened with password where it is encrypted. A PEM
// trust store must hold at least one CERTIFICATE block; a PKCS12 one is a Java trust
// store, whose certificates are marked as trusted.
func LoadTrustStore(path, typ, password string) (*x509.CertPool, error) {
	typ, data, err := readStore(path, typ)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	if typ == PEM {
		certs, err = parsePEMCertificates(data)
	} else {
		certs, err = pkcs12.DecodeTrustStore(data, password)
		err = pkcs12Error(err)
	}
	if err == nil && len(certs) == 0 {
		err = errors.New("no certificates")
	}
	if err != nil {
		return nil, fmt.Errorf("certs: trust store %s: %w", path, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// KeyStorePEM returns a PEM key store, as LoadKeyStore reads it and as ZooKeeper's PEM
// key stores are: keyPEM (the private key), then certPEM (the leaf certificate), then
// chainPEM (the certificates that sign it, the CA's last; may be empty).
func KeyStorePEM(certPEM, keyPEM, chainPEM []byte) []byte {
	var b bytes.Buffer
	for _, part := range [][]byte{keyPEM, certPEM, chainPEM} {
		b.Write(part)
		if len(part) > 0 && part[len(part)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// readStore returns the type of the store at path and its contents. A store called JKS,
// by typ or by a .jks name, that is a PKCS#12 file is read as one: keytool has written
// PKCS12 by default since Java 9, whatever the name, and Java's JKS loader reads such a
// file too (keystore.type.compat), so ZooKeeper does. Only a true JKS file is refused.
func readStore(path, typ string) (string, []byte, error) {
	t, typErr := StoreType(path, typ)
	calledJKS := strings.EqualFold(typ, "JKS") || typ == "" && strings.EqualFold(filepath.Ext(path), ".jks")
	if typErr != nil && !calledJKS {
		return "", nil, fmt.Errorf("certs: %w", typErr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("certs: %w", err) // *PathError names the file
	}
	if typErr != nil {
		if len(data) == 0 || data[0] != 0x30 { // a DER SEQUENCE; JKS files start 0xFEEDFEED
			return "", nil, fmt.Errorf("certs: %w", typErr)
		}
		t = PKCS12
	}
	return t, data, nil
}

// parsePEMKeyStore reads a PEM key store: one private key, and certificates leaf first.
func parsePEMKeyStore(data []byte, password string) (crypto.PrivateKey, []*x509.Certificate, error) {
	var key crypto.PrivateKey
	var chain []*x509.Certificate
	blocks, err := pemBlocks(data)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range blocks {
		switch {
		case b.Type == "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("certificate %d: %w", len(chain)+1, err)
			}
			chain = append(chain, c)
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			if key != nil {
				return nil, nil, errors.New("more than one private key: want the leaf's only")
			}
			if key, err = parsePrivateKey(b, password); err != nil {
				return nil, nil, err
			}
		}
	}
	switch {
	case key == nil:
		return nil, nil, errors.New("no private key: want a PRIVATE KEY block (or RSA, EC or ENCRYPTED PRIVATE KEY) and the certificate chain")
	case len(chain) == 0:
		return nil, nil, errors.New("no certificate: want the private key's certificate chain, leaf first, after the key")
	}
	return key, chain, nil
}

// parsePEMCertificates reads the CERTIFICATE blocks of a PEM file; others are skipped.
func parsePEMCertificates(data []byte) ([]*x509.Certificate, error) {
	blocks, err := pemBlocks(data)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, b := range blocks {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no CERTIFICATE block: want the PEM certificates of the trusted CAs")
	}
	return certs, nil
}

// pemBlocks returns the PEM blocks of data; text between them is skipped, as
// ZooKeeper's PemReader skips it.
func pemBlocks(data []byte) ([]*pem.Block, error) {
	var blocks []*pem.Block
	for {
		b, rest := pem.Decode(data)
		if b == nil {
			break
		}
		blocks = append(blocks, b)
		data = rest
	}
	if len(blocks) == 0 {
		return nil, errors.New("no PEM block: not a PEM file (a PKCS12 store needs type PKCS12; " +
			"convert DER with openssl x509 -inform der or openssl pkey -inform der)")
	}
	return blocks, nil
}

// parsePrivateKey reads a PRIVATE KEY block of any of the kinds doc.go lists.
func parsePrivateKey(b *pem.Block, password string) (crypto.PrivateKey, error) {
	if b.Headers["Proc-Type"] != "" {
		// OpenSSL's legacy encryption (openssl rsa -aes256 -traditional): an MD5 key
		// derivation Go's x509.DecryptPEMBlock deprecates as insecure.
		return nil, fmt.Errorf("%s is encrypted the legacy OpenSSL way (Proc-Type: %s), which is insecure: "+
			"convert it with openssl pkcs8 -topk8 -v2 aes-256-cbc", b.Type, b.Headers["Proc-Type"])
	}
	var key any
	var err error
	switch b.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	case "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, errors.New("the private key is encrypted (ENCRYPTED PRIVATE KEY) and no password is set")
		}
		key, err = decryptPKCS8(b.Bytes, password)
	default:
		return nil, fmt.Errorf("unsupported private key block %q: want PRIVATE KEY, RSA PRIVATE KEY, "+
			"EC PRIVATE KEY or ENCRYPTED PRIVATE KEY", b.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Type, err)
	}
	return key, nil
}

// parsePKCS12KeyStore reads a PKCS#12 key store: one key, its certificate and the chain.
func parsePKCS12KeyStore(data []byte, password string) (crypto.PrivateKey, []*x509.Certificate, error) {
	key, leaf, cas, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		return nil, nil, pkcs12Error(err)
	}
	return key, append([]*x509.Certificate{leaf}, cas...), nil
}

// pkcs12Error makes go-pkcs12's wrong password ErrPassword.
func pkcs12Error(err error) error {
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return fmt.Errorf("%w (or a damaged PKCS12 file)", ErrPassword)
	}
	return err
}

// keyMatches checks that leaf's public key is key's.
func keyMatches(key crypto.PrivateKey, leaf *x509.Certificate) error {
	var pub crypto.PublicKey
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		pub = k.Public()
	case *rsa.PrivateKey:
		pub = k.Public()
	case ed25519.PrivateKey:
		pub = k.Public()
	default:
		return fmt.Errorf("unsupported private key type %T: want ECDSA, RSA or Ed25519", key)
	}
	if eq, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(pub) {
		return fmt.Errorf("the private key does not match the first certificate (subject %q): "+
			"want the key's certificate first, then the chain", leaf.Subject.String())
	}
	return nil
}
