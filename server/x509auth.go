package server

import (
	"crypto/tls"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// addCertIdentity gives a connection whose client certificate the handshake verified
// the identity x509:<subject> (ZooKeeper's X509AuthenticationProvider), and super too
// when the subject is X509SuperUser: as ZooKeeper adds it, before x509 and with the
// subject as its id (super:<subject>, where a digest or SASL super user gets super with
// an empty id). A connection without one keeps its ip identity.
func (c *conn) addCertIdentity(st tls.ConnectionState) error {
	if len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return nil // no certificate asked for (client_tls_auth none), or none given (want)
	}
	dn, err := SubjectDN(st.PeerCertificates[0].RawSubject)
	if err != nil {
		return fmt.Errorf("client certificate subject: %w", err)
	}
	ids := []wire.Identity{{Scheme: datatree.SchemeX509, ID: dn}}
	if su := c.s.cfg.X509SuperUser; su != "" && dn == su {
		ids = []wire.Identity{{Scheme: datatree.SchemeSuper, ID: dn}, ids[0]}
	}
	if !c.addIdentity(ids...) {
		return fmt.Errorf("client certificate subject longer than %d bytes", maxIdentityLength)
	}
	c.x509 = true
	c.s.logger.Debug("client certificate verified", "remote", c.nc.RemoteAddr().String(), "x509", dn)
	return nil
}

// authenticateX509 answers addauth x509: the identity comes from the client certificate
// at the handshake, so the auth succeeds, adding nothing, on a connection that gave a
// verified one, and fails, closing the connection, on any other, as in ZooKeeper.
func (c *conn) authenticateX509() bool {
	if !c.x509 {
		c.s.logger.Info("auth failed: x509 without a verified client certificate",
			"session_id", hexID(c.sessionID.Load()), "remote", c.nc.RemoteAddr().String())
	}
	return c.x509
}

// attribute is one AttributeTypeAndValue of a distinguished name, its value kept raw
// for printing as Java does.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one relative distinguished name; encoding/asn1 reads a slice type whose
// name ends in SET as a SET OF.
type rdnSET []attribute

// dnKeywords are the attribute types Java's X500Principal.getName() (RFC 2253) prints
// by keyword; it prints any other as its dotted OID, with its value in hex (#...).
var dnKeywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// SubjectDN prints the DER distinguished name raw (a certificate's RawSubject) as Java's
// X500Principal.getName() does, which is the x509 identity ZooKeeper gives a client:
// RFC 2253, the most specific name first (CN=alice,OU=dev,O=acme), no spaces, the
// keywords above and OIDs for other types, ,=+<>#;"\ escaped with a backslash, as are
// leading and trailing spaces. A text value that is not UTF-8 is an error. Checked
// against Java 17's X500Principal, case by case.
func SubjectDN(raw []byte) (string, error) {
	var seq []rdnSET
	rest, err := asn1.Unmarshal(raw, &seq)
	if err != nil {
		return "", err
	}
	if len(rest) > 0 {
		return "", errors.New("trailing data after the name")
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if len(seq[i]) == 0 {
			// RFC 5280 wants one attribute at least; Java prints an empty part (",CN=a"):
			// refused rather than matched against names no CA should issue.
			return "", errors.New("an empty relative distinguished name")
		}
		if i < len(seq)-1 {
			b.WriteByte(',')
		}
		for j, a := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			if err := writeAttribute(&b, a); err != nil {
				return "", err
			}
		}
	}
	return b.String(), nil
}

func writeAttribute(b *strings.Builder, a attribute) error {
	kw, known := dnKeywords[a.Type.String()]
	if !known {
		kw = a.Type.String()
	}
	b.WriteString(kw)
	b.WriteByte('=')
	if !known || !javaStringTags[a.Value.Tag] || a.Value.Class != asn1.ClassUniversal {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(a.Value.FullBytes))
		return nil
	}
	if !utf8.Valid(a.Value.Bytes) {
		// Java would print U+FFFD for the bad bytes, by rules of its own: refused rather
		// than given an identity that may not be ZooKeeper's.
		return fmt.Errorf("%s: value is not UTF-8", kw)
	}
	writeEscaped(b, string(a.Value.Bytes))
	return nil
}

// javaStringTags are the value types Java's RFC 2253 printing shows as text: it reads
// their bytes as UTF-8, whatever the type says (a BMPString's too). It prints others,
// UniversalString, NumericString and VisibleString among them, in hex.
var javaStringTags = map[int]bool{
	asn1.TagUTF8String: true, asn1.TagPrintableString: true, asn1.TagT61String: true,
	asn1.TagIA5String: true, 27 /* GeneralString */ : true, asn1.TagBMPString: true,
}

// dnEscaped are the characters Java's RFC 2253 printing escapes wherever they are
// (RFC 2253's, and = too).
const dnEscaped = `,=+<>#;"\`

// writeEscaped writes a value as Java's AVA.toRFC2253String does: dnEscaped escaped,
// NUL as \00, and the spaces (and carriage returns) it starts or ends with.
func writeEscaped(b *strings.Builder, s string) {
	var esc []rune
	for _, r := range s {
		switch {
		case r == 0:
			esc = append(esc, '\\', '0', '0')
			continue
		case strings.ContainsRune(dnEscaped, r):
			esc = append(esc, '\\')
		}
		esc = append(esc, r)
	}
	blank := func(r rune) bool { return r == ' ' || r == '\r' }
	lead := 0
	for lead < len(esc) && blank(esc[lead]) {
		lead++
	}
	trail := len(esc) - 1
	for trail >= 0 && blank(esc[trail]) {
		trail--
	}
	for i, r := range esc {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}

// validDN reports whether s reads as an RFC 2253 name: attribute=value pairs separated
// by unescaped commas (or semicolons) and pluses, each type a keyword or a dotted OID.
// It is what an x509 ACL and X509SuperUser must be; like Java's X500Principal, which
// ZooKeeper checks them with, it accepts the empty name.
func validDN(s string) bool {
	return datatree.ValidX509ID(s)
}
