// Package digestmd5 is the server side of the DIGEST-MD5 SASL mechanism (RFC 2831), as
// Apache ZooKeeper's server runs it for clients with a JAAS "Client" section (zkCli.sh,
// Curator, Kafka) and for kazoo's sasl_options.
//
// The exchange, one Server per connection:
//
//	client: (empty token)
//	server: realm="zk-sasl-md5",nonce="…",qop="auth",charset=utf-8,algorithm=md5-sess
//	client: username="alice",realm="zk-sasl-md5",nonce="…",nc=00000001,cnonce="…",
//	        digest-uri="zookeeper/zk-sasl-md5",qop=auth,response=<32 hex digits>[,charset=utf-8,…]
//	server: rspauth=<32 hex digits>                       (the client is now authenticated)
//
// Only the auth quality of protection is offered: no integrity (auth-int) or
// confidentiality (auth-conf) layer, which ZooKeeper's clients do not ask for; use TLS
// for those. Every token is bounded (MaxToken), every directive may appear once, the
// nonce comes from crypto/rand, and responses are compared in constant time. A Server
// is not safe for concurrent use: a connection's read loop owns it.
package digestmd5

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ZooKeeper's fixed names: its server creates the mechanism with protocol "zookeeper"
// and server name "zk-sasl-md5" (the realm offered), and its clients and kazoo send
// digest-uri "zookeeper/zk-sasl-md5" whatever host they connect to.
const (
	DefaultRealm   = "zk-sasl-md5"
	DefaultService = "zookeeper"
)

// MaxToken is the largest client token accepted, in bytes. A real digest-response is
// about 300 bytes; anything over a few KiB is refused before it is parsed.
const MaxToken = 4 << 10

// maxDirectives bounds the directives of one response (a real one has about eleven).
const maxDirectives = 32

// Errors of an exchange. Every error ends it: the Server refuses all later tokens.
var (
	// ErrTooLarge: a token longer than MaxToken.
	ErrTooLarge = errors.New("digestmd5: token too large")
	// ErrMalformed wraps what is wrong with a response's syntax or directives.
	ErrMalformed = errors.New("digestmd5: malformed response")
	// ErrAuthFailed: unknown user or wrong password; the two are not told apart.
	ErrAuthFailed = errors.New("digestmd5: authentication failed")
	// ErrState: a token once the exchange is over.
	ErrState = errors.New("digestmd5: token out of sequence")
)

// Config configures a Server.
type Config struct {
	// Realm is the realm offered and the only one accepted; "" means DefaultRealm.
	Realm string
	// Service and Host are what the client's digest-uri must name, "service/host"
	// (case-insensitive); "" means DefaultService and DefaultRealm, as ZooKeeper's.
	Service, Host string
	// Password returns the password of user, or false if there is no such user. It
	// must be safe to call from several Servers at once.
	Password func(user string) (password string, ok bool)
}

type state int

const (
	stateStart state = iota
	stateChallenged
	stateDone
	stateFailed
)

// Server runs one DIGEST-MD5 exchange.
type Server struct {
	cfg   Config
	state state
	nonce string
	user  string // the authenticated user, once stateDone
}

// NewServer returns a Server at the start of an exchange.
func NewServer(cfg Config) *Server {
	if cfg.Realm == "" {
		cfg.Realm = DefaultRealm
	}
	if cfg.Service == "" {
		cfg.Service = DefaultService
	}
	if cfg.Host == "" {
		cfg.Host = DefaultRealm
	}
	return &Server{cfg: cfg}
}

// Done reports whether the client has authenticated.
func (s *Server) Done() bool { return s.state == stateDone }

// User returns the authenticated user name, or "" before Done. ZooKeeper takes the
// connection's sasl identity from it (its callback sets the authorized id from the
// authentication id), not from the authzid the client may send.
func (s *Server) User() string {
	if s.state != stateDone {
		return ""
	}
	return s.user
}

// Next takes the client's next token and returns the server's answer. An error ends
// the exchange: every later call fails with ErrState.
func (s *Server) Next(token []byte) ([]byte, error) {
	out, err := s.next(token)
	if err != nil {
		s.state = stateFailed
		return nil, err
	}
	return out, nil
}

func (s *Server) next(token []byte) ([]byte, error) {
	if len(token) > MaxToken {
		return nil, ErrTooLarge
	}
	switch s.state {
	case stateStart:
		// DIGEST-MD5 has no initial response; what a client sends first is ignored, as
		// ZooKeeper's (Java's) server ignores it, and answered with the challenge.
		return s.challenge()
	case stateChallenged:
		return s.verify(token)
	}
	return nil, ErrState
}

// challenge makes the digest-challenge, with a fresh nonce.
func (s *Server) challenge() ([]byte, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("digestmd5: nonce: %w", err)
	}
	s.nonce = base64.RawStdEncoding.EncodeToString(b[:])
	s.state = stateChallenged
	return fmt.Appendf(nil, `realm=%s,nonce="%s",qop="auth",charset=utf-8,algorithm=md5-sess`,
		quote(s.cfg.Realm), s.nonce), nil
}

// verify checks a digest-response and returns the response-auth.
func (s *Server) verify(token []byte) ([]byte, error) {
	d, err := parse(token)
	if err != nil {
		return nil, err
	}
	r, err := s.check(d)
	if err != nil {
		return nil, err
	}
	pw, known := s.cfg.Password(r.user)
	if !known {
		pw = s.nonce // hash anyway, so that an unknown user takes as long as a wrong password
	}
	want := r.digest(pw, "AUTHENTICATE:"+r.uri)
	if subtle.ConstantTimeCompare(want, []byte(strings.ToLower(r.response))) != 1 || !known {
		return nil, ErrAuthFailed
	}
	s.user, s.state = r.user, stateDone
	return append([]byte("rspauth="), r.digest(pw, ":"+r.uri)...), nil
}

// response is a checked digest-response: what the hashes need.
type response struct {
	user, realm, nonce, cnonce, nc, qop, uri, authzid, response string
	utf8                                                        bool // charset=utf-8
}

// check validates the directives of a digest-response against this exchange.
func (s *Server) check(d map[string]string) (*response, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
	for _, k := range []string{"username", "nonce", "cnonce", "nc", "digest-uri", "response"} {
		if _, ok := d[k]; !ok {
			return nil, bad("no %s", k)
		}
	}
	r := &response{nonce: d["nonce"], cnonce: d["cnonce"], nc: d["nc"], uri: d["digest-uri"],
		response: d["response"], qop: "auth"}
	switch cs, ok := d["charset"]; {
	case !ok:
	case strings.EqualFold(cs, "utf-8"):
		r.utf8 = true
	default:
		return nil, bad("charset %q: only utf-8 is offered", cs)
	}
	var err error
	if r.user, err = r.text(d["username"]); err != nil || r.user == "" {
		return nil, bad("username is empty or not in its charset")
	}
	if realm, ok := d["realm"]; ok {
		if r.realm, err = r.text(realm); err != nil || r.realm != s.cfg.Realm {
			return nil, bad("realm is not %q", s.cfg.Realm)
		}
	}
	if authzid, ok := d["authzid"]; ok {
		if r.authzid, err = r.text(authzid); err != nil {
			return nil, bad("authzid is not in its charset")
		}
	}
	if q, ok := d["qop"]; ok && q != "auth" {
		return nil, bad("qop %q: only auth is offered", q)
	}
	if subtle.ConstantTimeCompare([]byte(r.nonce), []byte(s.nonce)) != 1 {
		return nil, bad("nonce is not the one offered")
	}
	if r.cnonce == "" {
		return nil, bad("cnonce is empty")
	}
	if r.nc != "00000001" {
		return nil, bad("nc %q: want 00000001 (no reauthentication)", r.nc)
	}
	if !s.uriMatches(r.uri) {
		return nil, bad("digest-uri %q: want %s/%s", r.uri, s.cfg.Service, s.cfg.Host)
	}
	if len(r.response) != 32 || !isHex(r.response) {
		return nil, bad("response is not 32 hex digits")
	}
	if mb, ok := d["maxbuf"]; ok && (mb == "" || len(mb) > 10 || strings.Trim(mb, "0123456789") != "") {
		return nil, bad("maxbuf is not a number")
	}
	return r, nil
}

// uriMatches reports whether digest-uri is "service/host" or "service/host/name".
func (s *Server) uriMatches(uri string) bool {
	serv, rest, ok := strings.Cut(uri, "/")
	host, _, _ := strings.Cut(rest, "/")
	return ok && strings.EqualFold(serv, s.cfg.Service) && strings.EqualFold(host, s.cfg.Host)
}

// text decodes a string value: UTF-8 with charset=utf-8, ISO 8859-1 without (RFC 2831 2.1.2).
func (r *response) text(v string) (string, error) {
	if r.utf8 {
		if !utf8.ValidString(v) {
			return "", errors.New("invalid utf-8")
		}
		return v, nil
	}
	b := make([]rune, 0, len(v))
	for i := 0; i < len(v); i++ {
		b = append(b, rune(v[i]))
	}
	return string(b), nil
}

// digest computes HEX(KD(HEX(H(A1)), nonce:nc:cnonce:qop:HEX(H(A2)))) for a2, with
// A1 = H(user:realm:password):nonce:cnonce[:authzid] (RFC 2831 2.1.2.1).
func (r *response) digest(password, a2 string) []byte {
	h := md5.New()
	h.Write(hashBytes(r.user))
	h.Write([]byte{':'})
	h.Write(hashBytes(r.realm))
	h.Write([]byte{':'})
	h.Write(hashBytes(password))
	secret := h.Sum(nil)
	a1 := append(secret, ":"+r.nonce+":"+r.cnonce...)
	if r.authzid != "" {
		a1 = append(a1, ":"+r.authzid...)
	}
	ha1, ha2 := md5.Sum(a1), md5.Sum([]byte(a2))
	kd := md5.Sum([]byte(hex.EncodeToString(ha1[:]) + ":" + r.nonce + ":" + r.nc + ":" + r.cnonce + ":" +
		r.qop + ":" + hex.EncodeToString(ha2[:])))
	return []byte(hex.EncodeToString(kd[:]))
}

// hashBytes encodes s as RFC 2831 hashes it: in ISO 8859-1 when every character of s
// is in it, else in UTF-8 (as Java's and Cyrus's implementations do).
func hashBytes(s string) []byte {
	b := make([]byte, 0, len(s))
	for _, c := range s {
		if c > 0xff {
			return []byte(s)
		}
		b = append(b, byte(c))
	}
	return b
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// quote makes s a quoted-string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
