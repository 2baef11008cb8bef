package digestmd5

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func users(m map[string]string) func(string) (string, bool) {
	return func(u string) (string, bool) { pw, ok := m[u]; return pw, ok }
}

// TestRFC2831Example runs the example exchange of RFC 2831 section 4 with its nonce:
// the response it gives must verify and the rspauth must be the RFC's.
func TestRFC2831Example(t *testing.T) {
	s := NewServer(Config{Realm: "elwood.innosoft.com", Service: "imap", Host: "elwood.innosoft.com",
		Password: users(map[string]string{"chris": "secret"})})
	if _, err := s.Next(nil); err != nil {
		t.Fatal(err)
	}
	s.nonce = "OA6MG9tEQGm2hh"
	resp := `charset=utf-8,username="chris",realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",nc=00000001,` +
		`cnonce="OA6MHXh6VqTrRk",digest-uri="imap/elwood.innosoft.com",response=d388dad90d4bbd760a152321f2143af7,qop=auth`
	out, err := s.Next([]byte(resp))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "rspauth=ea40f60335c427b5527b84dbabcdfffd"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !s.Done() || s.User() != "chris" {
		t.Fatalf("done %v user %q", s.Done(), s.User())
	}
	if _, err := s.Next(nil); !errors.Is(err, ErrState) {
		t.Fatalf("a token after success: %v, want ErrState", err)
	}
}

// client computes a digest-response as a client does, independently of the server's
// code: the hashes written out as RFC 2831 2.1.2.1 gives them.
type client struct {
	user, password, realm, uri, cnonce, authzid string
}

func (c client) respond(t *testing.T, challenge []byte, extra string) []byte {
	t.Helper()
	d, err := parse(challenge)
	if err != nil {
		t.Fatalf("challenge %q: %v", challenge, err)
	}
	if d["realm"] != DefaultRealm || d["qop"] != "auth" || d["algorithm"] != "md5-sess" || d["charset"] != "utf-8" {
		t.Fatalf("challenge %q", challenge)
	}
	h := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	inner := md5.Sum([]byte(c.user + ":" + c.realm + ":" + c.password))
	a1 := string(inner[:]) + ":" + d["nonce"] + ":" + c.cnonce
	if c.authzid != "" {
		a1 += ":" + c.authzid
	}
	resp := h(h(a1) + ":" + d["nonce"] + ":00000001:" + c.cnonce + ":auth:" + h("AUTHENTICATE:"+c.uri))
	tok := fmt.Sprintf(`charset=utf-8,username="%s",realm="%s",nonce="%s",nc=00000001,cnonce="%s",`+
		`digest-uri="%s",maxbuf=65536,response=%s,qop=auth`, c.user, c.realm, d["nonce"], c.cnonce, c.uri, resp)
	if c.authzid != "" {
		tok += `,authzid="` + c.authzid + `"`
	}
	return []byte(tok + extra)
}

var alice = client{user: "alice", password: "pw", realm: DefaultRealm, uri: "zookeeper/zk-sasl-md5", cnonce: "c1"}

func exchange(t *testing.T, c client, extra string) (*Server, []byte, error) {
	t.Helper()
	s := NewServer(Config{Password: users(map[string]string{"alice": "pw", "bob": "bpw"})})
	ch, err := s.Next([]byte{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Next(c.respond(t, ch, extra))
	return s, out, err
}

func TestExchange(t *testing.T) {
	s, out, err := exchange(t, alice, "")
	if err != nil || !strings.HasPrefix(string(out), "rspauth=") || s.User() != "alice" {
		t.Fatalf("out %q err %v user %q", out, err, s.User())
	}
	authz := alice
	authz.authzid = "bob"
	if s, _, err := exchange(t, authz, ""); err != nil || s.User() != "alice" {
		t.Fatalf("with authzid bob: err %v user %q, want alice (the authentication id, as ZooKeeper)", err, s.User())
	}
}

func TestExchangeRefused(t *testing.T) {
	wrongPW, unknown, badURI, badRealm := alice, alice, alice, alice
	wrongPW.password = "nope"
	unknown.user = "mallory"
	badURI.uri = "imap/zk-sasl-md5"
	badRealm.realm = "other"
	for _, tc := range []struct {
		name  string
		c     client
		extra string
		want  error
	}{
		{"wrong password", wrongPW, "", ErrAuthFailed},
		{"unknown user", unknown, "", ErrAuthFailed},
		{"other service", badURI, "", ErrMalformed},
		{"other realm", badRealm, "", ErrMalformed},
		{"repeated username", alice, `,username="bob"`, ErrMalformed},
		{"repeated response", alice, `,RESPONSE=00000000000000000000000000000000`, ErrMalformed},
		{"qop auth-int", alice, `,qop=auth-int`, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, out, err := exchange(t, tc.c, tc.extra)
			if !errors.Is(err, tc.want) || out != nil || s.Done() || s.User() != "" {
				t.Fatalf("err %v out %q done %v, want %v", err, out, s.Done(), tc.want)
			}
			if _, err := s.Next(nil); !errors.Is(err, ErrState) {
				t.Fatalf("a token after a failure: %v, want ErrState", err)
			}
		})
	}
}

// TestResponseFieldsChecked drops or spoils each directive of a good response in turn.
func TestResponseFieldsChecked(t *testing.T) {
	good := func(s *Server) string {
		ch, err := s.Next(nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(alice.respond(t, ch, ""))
	}
	for _, tc := range []struct{ name, from, to string }{
		{"no username", `username="alice",`, ``},
		{"no nonce", `nonce="`, `xnonce="`},
		{"no cnonce", `cnonce="c1",`, ``},
		{"no nc", `nc=00000001,`, ``},
		{"no digest-uri", `digest-uri="zookeeper/zk-sasl-md5",`, ``},
		{"no response", `response=`, `xresponse=`},
		{"nc 2", `nc=00000001`, `nc=00000002`},
		{"empty cnonce", `cnonce="c1"`, `cnonce=""`},
		{"charset latin1", `charset=utf-8`, `charset=iso-8859-1`},
		{"short response", `,qop=auth`, `0,qop=auth`},
		{"maxbuf not a number", `maxbuf=65536`, `maxbuf=lots`},
		{"unterminated quote", `cnonce="c1"`, `cnonce="c1`},
		{"no comma", `nc=00000001,`, `nc=00000001 `},
		{"name without value", `nc=00000001`, `nc=`},
		{"invalid utf-8 user", `username="alice"`, "username=\"\xff\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(Config{Password: users(map[string]string{"alice": "pw"})})
			tok := good(s)
			if !strings.Contains(tok, tc.from) {
				t.Fatalf("%q not in %q", tc.from, tok)
			}
			_, err := s.Next([]byte(strings.Replace(tok, tc.from, tc.to, 1)))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err %v, want ErrMalformed", err)
			}
		})
	}
	t.Run("other nonce", func(t *testing.T) {
		s := NewServer(Config{Password: users(map[string]string{"alice": "pw"})})
		tok := good(s)
		s.nonce = "replayed"
		if _, err := s.Next([]byte(tok)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("err %v, want ErrMalformed", err)
		}
	})
}

func TestHostileTokens(t *testing.T) {
	s := NewServer(Config{Password: users(nil)})
	if ch, err := s.Next([]byte("x")); err != nil || !strings.Contains(string(ch), "nonce=") {
		t.Fatalf("initial response: %q %v, want it ignored and the challenge, as ZooKeeper", ch, err)
	}
	s = NewServer(Config{Password: users(nil)})
	if _, err := s.Next(make([]byte, MaxToken+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge first token: %v, want ErrTooLarge", err)
	}
	s = NewServer(Config{Password: users(nil)})
	s.Next(nil)
	huge := []byte(`username="` + strings.Repeat("a", 1<<20) + `"`)
	if _, err := s.Next(huge); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge response: %v, want ErrTooLarge", err)
	}
	var many strings.Builder
	for i := range maxDirectives + 1 {
		fmt.Fprintf(&many, "x%d=1,", i)
	}
	if _, err := parse([]byte(many.String())); !errors.Is(err, ErrMalformed) {
		t.Fatalf("%d directives: %v, want ErrMalformed", maxDirectives+1, err)
	}
}

func TestParse(t *testing.T) {
	d, err := parse([]byte(` ,a = "x\"y\\z" , B=tok,, c="" ,`))
	if err != nil {
		t.Fatal(err)
	}
	if d["a"] != `x"y\z` || d["b"] != "tok" || d["c"] != "" || len(d) != 3 {
		t.Fatalf("%q", d)
	}
}

func TestLatin1Username(t *testing.T) {
	// Without charset=utf-8 the user name is ISO 8859-1: byte 0xe9 is é.
	s := NewServer(Config{Password: users(map[string]string{"ren\u00e9": "pw"})})
	ch, _ := s.Next(nil)
	c := client{user: "ren\xe9", password: "pw", realm: DefaultRealm, uri: "zookeeper/zk-sasl-md5", cnonce: "c"}
	tok := strings.Replace(string(c.respond(t, ch, "")), "charset=utf-8,", "", 1)
	if _, err := s.Next([]byte(tok)); err != nil || s.User() != "ren\u00e9" {
		t.Fatalf("err %v user %q", err, s.User())
	}
}
