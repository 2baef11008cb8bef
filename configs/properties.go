package configs

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// property is one key/value pair of a Java properties file, with escapes resolved.
type property struct {
	key, value string
	line       int // 1-based line where the logical line starts
}

// parseProperties parses the syntax of java.util.Properties.load, which is how ZooKeeper
// reads zoo.cfg: natural lines end in \n, \r or \r\n; a line whose first non-blank
// character is # or ! is a comment; an odd number of backslashes at the end of a line
// joins the next line (its leading blanks dropped); the key ends at the first unescaped
// '=', ':' or blank, and one '=' or ':' with blanks around it separates it from the value;
// \t \n \r \f \uXXXX are escapes and a backslash before any other character stands for
// that character. Values keep their trailing blanks, as in Java; ZooKeeper trims them.
// Duplicate keys are all returned, in file order.
//
// Bytes are kept as they are (UTF-8), where Java would decode the file as ISO-8859-1.
func parseProperties(data []byte) ([]property, error) {
	lines := naturalLines(data)
	var props []property
	for i := 0; i < len(lines); i++ {
		start := i
		line := trimLeftBlank(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continued(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + trimLeftBlank(lines[i])
		}
		if continued(line) { // a backslash at the end of the file joins nothing
			line = line[:len(line)-1]
		}
		p, err := splitProperty(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start+1, err)
		}
		p.line = start + 1
		props = append(props, p)
	}
	return props, nil
}

// naturalLines splits data at \n, \r and \r\n.
func naturalLines(data []byte) []string {
	s := string(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")))
	return strings.Split(strings.ReplaceAll(s, "\r", "\n"), "\n")
}

// isBlank reports whether c is whitespace for the properties syntax.
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftBlank(s string) string {
	for s != "" && isBlank(s[0]) {
		s = s[1:]
	}
	return s
}

// continued reports whether line ends in an odd number of backslashes.
func continued(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line into its unescaped key and value.
func splitProperty(line string) (property, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || isBlank(c) {
			end = i
			break
		}
	}
	rest := trimLeftBlank(line[end:])
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = trimLeftBlank(rest[1:])
	}
	key, err := unescape(line[:end])
	if err != nil {
		return property{}, err
	}
	value, err := unescape(rest)
	if err != nil {
		return property{}, err
	}
	return property{key: key, value: value}, nil
}

// unescape resolves the backslash escapes of the properties syntax.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\uxxxx escape in %q", s)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uxxxx escape in %q", s)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
