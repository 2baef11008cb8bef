package digestmd5

import (
	"fmt"
	"strings"
)

// parse reads a digest-response: directives `name=value` separated by commas, with
// optional blanks around each part and empty list elements allowed (RFC 2831's #rule);
// a value is a token or a quoted-string with backslash escapes. Names are compared
// case-insensitively and returned lower-case. A directive named twice, an unterminated
// quoted-string, or more than maxDirectives directives is malformed.
func parse(token []byte) (map[string]string, error) {
	p := parser{s: token}
	d := map[string]string{}
	for {
		p.skipBlanksAndCommas()
		if p.done() {
			return d, nil
		}
		name, value, err := p.directive()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if _, dup := d[name]; dup {
			return nil, fmt.Errorf("%w: %s given twice", ErrMalformed, name)
		}
		if len(d) == maxDirectives {
			return nil, fmt.Errorf("%w: more than %d directives", ErrMalformed, maxDirectives)
		}
		d[name] = value
		p.skipBlanks()
		if !p.done() && p.s[p.i] != ',' {
			return nil, fmt.Errorf("%w: want a comma after %s at byte %d", ErrMalformed, name, p.i)
		}
	}
}

type parser struct {
	s []byte
	i int
}

func (p *parser) done() bool { return p.i >= len(p.s) }

func (p *parser) skipBlanks() {
	for !p.done() && isBlank(p.s[p.i]) {
		p.i++
	}
}

func (p *parser) skipBlanksAndCommas() {
	for !p.done() && (isBlank(p.s[p.i]) || p.s[p.i] == ',') {
		p.i++
	}
}

func (p *parser) directive() (name, value string, err error) {
	name = p.token()
	if name == "" {
		return "", "", fmt.Errorf("want a directive name at byte %d", p.i)
	}
	p.skipBlanks()
	if p.done() || p.s[p.i] != '=' {
		return "", "", fmt.Errorf("want = after %s", name)
	}
	p.i++
	p.skipBlanks()
	if !p.done() && p.s[p.i] == '"' {
		value, err = p.quoted()
	} else if value = p.token(); value == "" {
		err = fmt.Errorf("%s has no value", name)
	}
	return strings.ToLower(name), value, err
}

// token reads the longest run of token characters: printable ASCII but blanks, comma,
// quote, backslash and '=' (a value with those must be a quoted-string).
func (p *parser) token() string {
	start := p.i
	for !p.done() && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return string(p.s[start:p.i])
}

// quoted reads a quoted-string, the opening quote at p.i.
func (p *parser) quoted() (string, error) {
	p.i++
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			if p.done() {
				return "", fmt.Errorf("unterminated quoted string")
			}
			c = p.s[p.i]
			p.i++
		}
		b.WriteByte(c)
	}
	return "", fmt.Errorf("unterminated quoted string")
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isTokenChar(c byte) bool {
	return c > ' ' && c < 0x7f && c != ',' && c != '"' && c != '=' && c != '\\'
}
