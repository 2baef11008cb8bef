package datatree

import "strings"

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
