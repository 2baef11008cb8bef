package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/paddock/paddock/task"
)

// The console never shows a password. maskSecrets is the one masking function every
// view of znode data goes through (the znode API and page, audit records, the audit
// page); the replication pages go through replicator.Admin, which masks its own way.
//
// A secret is recognised in a string value (a JSON string, or a blank-separated token
// of other text):
//   - the password of a DSN's or URL's user information: user:PASSWORD@tcp(h:p)/db,
//     mysql://user:PASSWORD@host/db (the user and the rest are kept);
//   - the value of a password=, passwd= or pwd= parameter: ...?password=PASSWORD&...;
//   - a whole value whose JSON key (or, in other text, the token before it ending in
//     ':' or '=') names a password or secret: {"password": "PASSWORD"}, password: PASSWORD.
//
// Each is replaced by secretMask.
const secretMask = "****"

// secretKey matches the keys whose values are secrets; secretKeyNot the ones that
// name where a secret is (a file, an environment variable) rather than hold it.
var (
	secretKey    = regexp.MustCompile(`(?i)(passw(or)?d|^pwd$|secret|token|credential)`)
	secretKeyNot = regexp.MustCompile(`(?i)(file|env|path)$`)
	secretParam  = regexp.MustCompile(`(?i)\b(password|passwd|pwd)=([^&;,\s]*)`)
	// dsnNet is what follows a go-sql-driver DSN's user information: tcp(…), unix(…),
	// or the database's slash.
	dsnNet = regexp.MustCompile(`^([A-Za-z0-9]*\(|/)`)
)

// span is a secret's place in a value, [lo, hi).
type span struct{ lo, hi int }

// secretSpans returns where the secrets are in value s, whose key (the JSON key, or the
// preceding token of text) is key.
func secretSpans(key, s string) []span {
	if k := strings.TrimRight(key, ":="); k != "" && secretKey.MatchString(k) && !secretKeyNot.MatchString(k) {
		return []span{{0, len(s)}}
	}
	var out []span
	for _, m := range secretParam.FindAllStringSubmatchIndex(s, -1) {
		if m[5] > m[4] {
			out = append(out, span{m[4], m[5]})
		}
	}
	if sp, ok := userinfoPassword(s); ok {
		out = append(out, sp)
	}
	return out
}

// userinfoPassword finds the password of a URL's (scheme://user:pw@host) or a
// go-sql-driver DSN's (user:pw@tcp(host)/db) user information. As the driver does, the
// last '@' ends it, so a password may hold '@' and ':'.
func userinfoPassword(s string) (span, bool) {
	start, end := 0, len(s)
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
		if j := strings.IndexAny(s[start:], "/?#"); j >= 0 {
			end = start + j
		}
	}
	at := strings.LastIndexByte(s[start:end], '@')
	if at < 0 {
		return span{}, false
	}
	at += start
	if start == 0 && !dsnNet.MatchString(s[at+1:]) {
		return span{}, false // an e-mail address, say
	}
	colon := strings.IndexByte(s[start:at], ':')
	if colon < 0 || strings.ContainsFunc(s[start:start+colon], unicode.IsSpace) {
		return span{}, false
	}
	return span{start + colon + 1, at}, at > start+colon+1
}

// maskValue returns s with its secrets replaced by secretMask. A value that is itself
// a JSON object or array (an audit record's data) is masked as JSON.
func maskValue(key, s string) string {
	if t := strings.TrimSpace(s); len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		out, err := rewriteJSON([]byte(s), maskValue)
		if err == nil {
			return string(out)
		}
	}
	spans := secretSpans(key, s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, sp := range sortSpans(spans) {
		if sp.lo < last {
			continue // overlapping: already masked
		}
		b.WriteString(s[last:sp.lo])
		b.WriteString(secretMask)
		last = sp.hi
	}
	b.WriteString(s[last:])
	return b.String()
}

func sortSpans(spans []span) []span {
	for i := 1; i < len(spans); i++ { // a handful at most
		for j := i; j > 0 && spans[j].lo < spans[j-1].lo; j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
	return spans
}

// hasMask reports whether a secret of s is the mask itself: s was read through the
// console and written back.
func hasMask(key, s string) bool {
	for _, sp := range secretSpans(key, s) {
		if s[sp.lo:sp.hi] == secretMask {
			return true
		}
	}
	return false
}

// maskSecrets returns data with every secret it recognises masked; data itself is not
// changed. JSON keeps its layout: only the strings holding a secret are rewritten.
func maskSecrets(data []byte) []byte {
	out, _ := rewriteValues(data, maskValue)
	return out
}

// rewriteValues calls f on every string value of data with its key, and returns data
// with each value replaced by what f returned. Data that is JSON is walked as JSON
// (keys are not values); other data is split into blank-separated tokens, each token's
// key being the token before it.
func rewriteValues(data []byte, f func(key, s string) string) ([]byte, error) {
	if json.Valid(data) {
		return rewriteJSON(data, f)
	}
	var out bytes.Buffer
	key, rest := "", data
	for len(rest) > 0 {
		i := bytes.IndexFunc(rest, func(r rune) bool { return !unicode.IsSpace(r) })
		if i < 0 {
			out.Write(rest)
			break
		}
		out.Write(rest[:i])
		rest = rest[i:]
		j := bytes.IndexFunc(rest, unicode.IsSpace)
		if j < 0 {
			j = len(rest)
		}
		tok := string(rest[:j])
		out.WriteString(f(key, tok))
		key, rest = "", rest[j:]
		if strings.HasSuffix(tok, ":") || strings.HasSuffix(tok, "=") {
			key = tok
		}
	}
	return out.Bytes(), nil
}

// rewriteJSON is rewriteValues for valid JSON.
func rewriteJSON(data []byte, f func(key, s string) string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct{ object, wantKey bool }
	var stack []frame
	var out bytes.Buffer
	copied, key := 0, ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return data, fmt.Errorf("web: walk JSON: %w", err)
		}
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, frame{object: t == '{', wantKey: t == '{'})
				continue
			}
			stack = stack[:top]
			top--
		case string:
			if top >= 0 && stack[top].object && stack[top].wantKey {
				key, stack[top].wantKey = t, false
				continue
			}
			if v := f(key, t); v != t {
				end := int(dec.InputOffset())
				out.Write(data[copied:stringStart(data, end)])
				out.Write(encodeString(v))
				copied = end
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].wantKey = true
		}
	}
	out.Write(data[copied:])
	return out.Bytes(), nil
}

// stringStart returns where the JSON string ending (after its closing quote) at end
// opens: the last quote before it that no backslash escapes.
func stringStart(data []byte, end int) int {
	for i := end - 2; i >= 0; i-- {
		if data[i] != '"' {
			continue
		}
		n := 0
		for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return i
		}
	}
	return 0
}

func encodeString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimRight(b.Bytes(), "\n")
}

// restoreSecrets makes data, about to replace old, keep old's secrets where data holds
// them masked, as it does when an operator saves a znode the console showed masked: a
// value equal to an old value masked (same key) becomes the old value. A mask left that
// no old value explains (the DSN's host was changed too, say) is refused: the console
// never writes the mask as a password.
func restoreSecrets(data, old []byte) ([]byte, error) {
	originals := map[string]string{} // key NUL masked value -> old value
	_, _ = rewriteValues(old, func(key, s string) string {
		if m := maskValue(key, s); m != s {
			k := key + "\x00" + m
			if o, dup := originals[k]; dup && o != s {
				originals[k] = "" // two secrets look alike masked: restore neither
			} else {
				originals[k] = s
			}
		}
		return s
	})
	var unexplained []string
	out, err := rewriteValues(data, func(key, s string) string {
		if o := originals[key+"\x00"+s]; o != "" {
			return o
		}
		if hasMask(key, s) {
			unexplained = append(unexplained, maskValue(key, s))
		}
		return s
	})
	if err != nil {
		return nil, err
	}
	if len(unexplained) > 0 {
		return nil, badRequest("data holds a masked password (%s) in %q that the console cannot restore: "+
			"leave masked values exactly as read, or type the password", secretMask, truncate(unexplained[0], 200))
	}
	return out, nil
}

// maskTask masks the secrets of t's spec in place (t is the caller's copy): maskSpec.
func maskTask(t *task.Task) *task.Task {
	if t == nil {
		return nil
	}
	maskSpec(&t.Spec)
	return t
}

// maskSpec masks the secrets of a task spec in place, with new maps and slices (the
// old ones are not changed): env values under secret-looking names, and arguments
// holding a DSN, a password= parameter, or following a --password-like flag; and a
// shard item's parameter, as a value of its own.
func maskSpec(s *task.Spec) {
	if len(s.Env) > 0 {
		env := make(map[string]string, len(s.Env))
		for k, v := range s.Env {
			env[k] = maskValue(k, v)
		}
		s.Env = env
	}
	args := slices.Clone(s.Args)
	for i, a := range args {
		args[i] = maskValue(argKey(s.Args, i), a)
	}
	s.Args = args
	if s.Shard != nil { // a shard parameter may be a DSN
		sh := *s.Shard
		sh.Param = maskValue("", sh.Param)
		s.Shard = &sh
	}
}

// argKey is the key of argument i: the flag before it, if that is a flag without a
// value of its own (--password, not --password=x).
func argKey(args []string, i int) string {
	if i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") {
		return strings.TrimLeft(args[i-1], "-")
	}
	return ""
}
