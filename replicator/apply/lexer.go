package apply

import (
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token of a SQL statement.
type tokKind uint8

const (
	tokWord   tokKind = iota + 1 // keyword, identifier or number; quoted if it was in backquotes
	tokString                    // '...' or "..." literal
	tokPunct                     // one punctuation character
)

type token struct {
	kind   tokKind
	text   string // a quoted identifier without its backquotes
	quoted bool
}

// tokenize splits a statement into tokens, dropping comments but keeping the contents of
// executable comments (/*!50100 ... */, /*M!100100 ... */), which the server runs.
func tokenize(s string) []token {
	var toks []token
	inExec := false // inside an executable comment: its closing */ is dropped
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(s[i:], "/*!") || strings.HasPrefix(s[i:], "/*M!"):
			i += strings.Index(s[i:], "!") + 1
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			inExec = true
		case inExec && strings.HasPrefix(s[i:], "*/"):
			i += 2
			inExec = false
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return toks
			}
			i += end + 4
		case c == '#' || strings.HasPrefix(s[i:], "-- ") || strings.HasPrefix(s[i:], "--\t") || s[i:] == "--" ||
			strings.HasPrefix(s[i:], "--\n"):
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				return toks
			}
			i += end + 1
		case c == '`':
			text, n := quoted(s[i:], '`')
			toks = append(toks, token{kind: tokWord, text: text, quoted: true})
			i += n
		case c == '\'' || c == '"':
			text, n := quoted(s[i:], c)
			toks = append(toks, token{kind: tokString, text: text})
			i += n
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			toks = append(toks, token{kind: tokWord, text: s[i:j]})
			i = j
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			toks = append(toks, token{kind: tokPunct, text: s[i : i+n]})
			i += n
		}
	}
	return toks
}

// isWordByte reports whether c may be part of an unquoted identifier, keyword or number
// (any byte of a multi-byte UTF-8 character counts).
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// quoted reads a literal or identifier quoted with q at the start of s, where q doubled
// (and, for strings, a backslash) escapes; it returns the unescaped text and the length
// consumed. An unterminated one runs to the end of s.
func quoted(s string, q byte) (string, int) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case s[i] == q && i+1 < len(s) && s[i+1] == q:
			i++
			b.WriteByte(q)
		case s[i] == q:
			return b.String(), i + 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), len(s)
}

// stmtParser walks the tokens of one statement.
type stmtParser struct {
	toks []token
	i    int
}

func (p *stmtParser) done() bool { return p.i >= len(p.toks) }

// peek returns the next token without consuming it (the zero token at the end).
func (p *stmtParser) peek() token {
	if p.done() {
		return token{}
	}
	return p.toks[p.i]
}

// next consumes and returns the next token (the zero token at the end).
func (p *stmtParser) next() token {
	t := p.peek()
	if !p.done() {
		p.i++
	}
	return t
}

// peekWord returns the next token upper-cased if it is an unquoted word, else "".
func (p *stmtParser) peekWord() string {
	if t := p.peek(); t.kind == tokWord && !t.quoted {
		return strings.ToUpper(t.text)
	}
	return ""
}

// word consumes the next token and returns it as peekWord would.
func (p *stmtParser) word() string {
	w := p.peekWord()
	p.next()
	return w
}

// skipWords consumes each of words in turn while the next token is that keyword, and
// reports whether it consumed any.
func (p *stmtParser) skipWords(words ...string) bool {
	skipped := false
	for _, w := range words {
		if p.peekWord() == w {
			p.next()
			skipped = true
		}
	}
	return skipped
}

// punct consumes the next token if it is the punctuation s.
func (p *stmtParser) punct(s string) bool {
	if t := p.peek(); t.kind == tokPunct && t.text == s {
		p.next()
		return true
	}
	return false
}

// ident consumes an identifier, or returns "" if the next token is not one.
func (p *stmtParser) ident() string {
	if t := p.peek(); t.kind == tokWord {
		p.next()
		return t.text
	}
	return ""
}

// tableName consumes name or db.name.
func (p *stmtParser) tableName() (tableRef, bool) {
	first := p.ident()
	if first == "" {
		return tableRef{}, false
	}
	if !p.punct(".") {
		return tableRef{name: first}, true
	}
	second := p.ident()
	if second == "" {
		return tableRef{}, false
	}
	return tableRef{db: first, name: second}, true
}

// isKeyword reports whether an unquoted word starts an ALTER DATABASE option rather than
// naming the database.
func isKeyword(w string) bool {
	switch strings.ToUpper(w) {
	case "DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT", "UPGRADE", "READ", "ENCRYPTION":
		return true
	}
	return false
}
