package jaas

import (
	"fmt"
	"strings"
)

// Token kinds: the punctuation characters stand for themselves.
const (
	tokEOF    byte = 0
	tokWord   byte = 'w'
	tokString byte = 's'
)

type token struct {
	kind byte
	text string
	line int
}

// describe names a token for an error without showing a quoted string, which may be a
// password.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end of the file"
	case tokString:
		return "a quoted string"
	case tokWord:
		if len(t.text) > 40 {
			return "a word"
		}
		return fmt.Sprintf("%q", t.text)
	}
	return fmt.Sprintf("%q", string(t.kind))
}

type lexer struct {
	src  []byte
	i    int
	line int
}

func (l *lexer) next() (token, error) {
	if err := l.skip(); err != nil {
		return token{}, err
	}
	if l.i >= len(l.src) {
		return token{kind: tokEOF, line: l.line}, nil
	}
	c, line := l.src[l.i], l.line
	switch {
	case c == '{' || c == '}' || c == ';' || c == '=':
		l.i++
		return token{kind: c, line: line}, nil
	case c == '"':
		s, err := l.quoted()
		return token{kind: tokString, text: s, line: line}, err
	case isWordChar(c):
		start := l.i
		for l.i < len(l.src) && isWordChar(l.src[l.i]) {
			l.i++
		}
		return token{kind: tokWord, text: string(l.src[start:l.i]), line: line}, nil
	}
	return token{}, fmt.Errorf("%d: unexpected character %q", line, c)
}

// skip passes blanks and comments.
func (l *lexer) skip() error {
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c == '\n':
			l.line++
			l.i++
		case c <= ' ':
			l.i++
		case c == '#' || c == '/' && l.peek(1) == '/':
			for l.i < len(l.src) && l.src[l.i] != '\n' {
				l.i++
			}
		case c == '/' && l.peek(1) == '*':
			start := l.line
			end := strings.Index(string(l.src[l.i+2:]), "*/")
			if end < 0 {
				return fmt.Errorf("%d: unterminated /* comment", start)
			}
			l.line += strings.Count(string(l.src[l.i:l.i+2+end]), "\n")
			l.i += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

func (l *lexer) peek(k int) byte {
	if l.i+k < len(l.src) {
		return l.src[l.i+k]
	}
	return 0
}

// quoted reads a double-quoted string with Java's escapes (\" \\ \n \t \r; any other
// escaped character stands for itself). It may not span lines.
func (l *lexer) quoted() (string, error) {
	line := l.line
	l.i++
	var b strings.Builder
	for l.i < len(l.src) {
		c := l.src[l.i]
		l.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\n':
			return "", fmt.Errorf("%d: unterminated quoted string", line)
		case '\\':
			if l.i >= len(l.src) {
				return "", fmt.Errorf("%d: unterminated quoted string", line)
			}
			c = l.src[l.i]
			l.i++
			switch c {
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case 'r':
				c = '\r'
			}
		}
		b.WriteByte(c)
	}
	return "", fmt.Errorf("%d: unterminated quoted string", line)
}

func isWordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= 0x80 ||
		strings.IndexByte("._$-*/:@", c) >= 0
}
