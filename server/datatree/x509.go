package datatree

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidX509ID reports whether id reads as the x509 scheme's ids do: a distinguished name
// in RFC 2253's syntax (CN=alice,OU=dev,O=acme), attribute=value pairs separated by
// unescaped commas (or semicolons) and pluses, each type a keyword or a dotted OID, each
// value plain with backslash escapes, quoted, or #hex. ZooKeeper checks them by parsing
// with Java's X500Principal, which, like this, accepts the empty name. An x509 id
// matches a connection's identity exactly, character for character.
func ValidX509ID(id string) bool {
	if strings.TrimSpace(id) == "" {
		return id == ""
	}
	for rest := id; ; {
		var sep byte
		var ok bool
		if rest, sep, ok = dnPair(rest); !ok {
			return false
		}
		if sep == 0 {
			return true
		}
	}
}

// dnPair reads one type=value pair from the front of s and returns what follows its
// separator, the separator (0 at the end of s), and whether the pair is well formed.
func dnPair(s string) (string, byte, bool) {
	s = strings.TrimLeft(s, " ")
	typ, val, found := strings.Cut(s, "=")
	if !found || !dnType(strings.TrimSpace(typ)) {
		return "", 0, false
	}
	val = strings.TrimLeft(val, " ")
	i, ok := dnValueEnd(val)
	if !ok {
		return "", 0, false
	}
	rest := strings.TrimLeft(val[i:], " ")
	if rest == "" {
		return "", 0, true
	}
	switch rest[0] {
	case ',', ';', '+':
		return rest[1:], rest[0], true
	}
	return "", 0, false
}

// dnType accepts a keyword (CN, OU, emailAddress) or an OID, with or without OID.
func dnType(t string) bool {
	if t == "" {
		return false
	}
	if oid, ok := strings.CutPrefix(strings.ToUpper(t), "OID."); ok {
		t = oid
	}
	if t[0] >= '0' && t[0] <= '9' {
		for part := range strings.SplitSeq(t, ".") {
			if part == "" || strings.Trim(part, "0123456789") != "" {
				return false
			}
		}
		return true
	}
	for i, r := range t {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '-')) {
			return false
		}
	}
	return true
}

// dnValueEnd returns where the value at the front of v ends: at an unescaped separator,
// after its closing quote, or after its hex digits.
func dnValueEnd(v string) (int, bool) {
	switch {
	case strings.HasPrefix(v, "#"):
		i := 1
		for i < len(v) && strings.IndexByte("0123456789abcdefABCDEF", v[i]) >= 0 {
			i++
		}
		return i, i > 1 && (i-1)%2 == 0
	case strings.HasPrefix(v, `"`):
		for i := 1; i < len(v); i++ {
			switch v[i] {
			case '\\':
				i++
			case '"':
				return i + 1, true
			}
		}
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			if i+1 >= len(v) {
				return 0, false
			}
			i++
		case ',', ';', '+':
			return i, true
		case '=', '"', '<', '>':
			return 0, false
		}
	}
	return len(v), true
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
