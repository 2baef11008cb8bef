package jaas

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `/* ZooKeeper server */
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="adminsecret"
    user_alice="a\"l\\ice" // a comment
    user_bob=bobword;
    # a second module: its users count too, as in ZooKeeper
    other.Module optional user_carol="c";
};
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="alice"
    password="x";
};
`

func TestParse(t *testing.T) {
	c, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	users, err := c.Users("Server")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"super": "adminsecret", "alice": `a"l\ice`, "bob": "bobword", "carol": "c"}
	if len(users) != len(want) {
		t.Fatalf("users %v", len(users))
	}
	for u, pw := range want {
		if users[u] != pw {
			t.Fatalf("user %s: password differs", u)
		}
	}
	if _, err := c.Users("Client"); err == nil || !strings.Contains(err.Error(), "no user") {
		t.Fatalf("Client section: %v", err)
	}
	if _, err := c.Users("Nope"); err == nil {
		t.Fatal("missing section accepted")
	}
	if m := c.Sections["Server"][0]; m.Class != "org.apache.zookeeper.server.auth.DigestLoginModule" || m.Flag != "required" || m.Line != 3 {
		t.Fatalf("module %+v", m)
	}
}

// TestParseErrors: each malformed file fails with its line, and never shows a value.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"no brace", `Server user_a="SECRETPW";`, "1: want {"},
		{"no flag", "Server {\n M user_a=\"SECRETPW\"; };", "2: want a flag"},
		{"bad flag", `Server { M mandatory user_a="SECRETPW"; };`, "want a flag"},
		{"no semicolon after brace", `Server { M required user_a="SECRETPW"; }`, "; after }"},
		{"unterminated string", "Server { M required user_a=\"SECRETPW; };", "unterminated quoted string"},
		{"no value", `Server { M required user_a=; };`, "want a value for option user_a"},
		{"repeated option", `Server { M required user_a="SECRETPW" user_a="SECRETPW"; };`, "option user_a given twice"},
		{"repeated section", `S { M required; }; S { M required; };`, "section S given twice"},
		{"string as section name", `"SECRETPW" { };`, "got a quoted string"},
		{"unterminated comment", `/* S { };`, "unterminated /* comment"},
		{"odd character", `S { M required a=b ! };`, "unexpected character"},
		{"eof in section", `Server { M required user_a="SECRETPW";`, "got the end of the file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRETPW") {
				t.Fatalf("error shows a value: %v", err)
			}
		})
	}
}

func TestReadFileBounds(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.conf")
	if err := os.WriteFile(big, []byte(strings.Repeat("#", MaxFile+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("big file: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
	ok := filepath.Join(dir, "jaas.conf")
	os.WriteFile(ok, []byte(sample), 0o600)
	if c, err := ReadFile(ok); err != nil || len(c.Sections) != 2 {
		t.Fatalf("%v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte(`S{M required a="\`))
	f.Add([]byte(`/*`))
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := Parse(src)
		if err == nil {
			for name := range c.Sections {
				c.Users(name)
			}
		}
	})
}
