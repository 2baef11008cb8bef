package server_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paddock/paddock/internal/sasl/digestmd5/digestmd5test"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/test/conformance"
)

// digestResponse answers a DIGEST-MD5 challenge as ZooKeeper's Java client does.
func digestResponse(t *testing.T, challenge []byte, user, password string) []byte {
	t.Helper()
	resp, err := digestmd5test.Respond(challenge, user, password)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// saslToken sends one sasl request and returns its reply and the token in it.
func saslToken(t *testing.T, c *conformance.Conn, token []byte) (*conformance.Frame, []byte) {
	t.Helper()
	f := call(t, c, wire.OpSASL, &wire.SASLRequest{Token: token})
	var r wire.SASLRequest
	d := wire.NewDecoder(f.Body)
	r.Decode(d)
	if d.Err() != nil {
		t.Fatalf("sasl reply body %x: %v", f.Body, d.Err())
	}
	return f, r.Token
}

// saslLogin runs the whole exchange and returns the last reply's error code.
func saslLogin(t *testing.T, c *conformance.Conn, user, password string) wire.Code {
	t.Helper()
	f, challenge := saslToken(t, c, []byte{})
	if f.Header.Err != wire.OK || f.Header.Zxid != 0 {
		t.Fatalf("first sasl step: %+v", f.Header)
	}
	f, rspauth := saslToken(t, c, digestResponse(t, challenge, user, password))
	if f.Header.Err == wire.OK && !strings.HasPrefix(string(rspauth), "rspauth=") {
		t.Fatalf("second step answered %q", rspauth)
	}
	if f.Header.Zxid != 0 {
		t.Fatalf("sasl answered with zxid %d, want 0 as ZooKeeper", f.Header.Zxid)
	}
	return f.Header.Err
}

func whoAmI(t *testing.T, c *conformance.Conn) []wire.Identity {
	t.Helper()
	f := call(t, c, wire.OpWhoAmI, nil)
	var r wire.WhoAmIResponse
	r.Decode(wire.NewDecoder(f.Body))
	return r.Clients
}

func startSASL(t *testing.T, configure func(*server.Config)) string {
	t.Helper()
	jaasFile := filepath.Join(t.TempDir(), "jaas.conf")
	os.WriteFile(jaasFile, []byte(`Server { org.apache.zookeeper.server.auth.DigestLoginModule required
		user_alice="alice-pw" user_admin="admin-pw"; };`), 0o600)
	return startBounded(t, func(c *server.Config) {
		c.SASLJaasConfig = jaasFile
		c.SASLPasswords = []string{"bob:bob-pw"}
		c.SASLSuperUser = "admin"
		if configure != nil {
			configure(c)
		}
	}).Addr().String()
}

func TestSASLDigestMD5(t *testing.T) {
	addr := startSASL(t, nil)
	alice := rawSession(t, addr)
	if code := saslLogin(t, alice, "alice", "alice-pw"); code != wire.OK {
		t.Fatalf("alice: %v", code)
	}
	if ids := whoAmI(t, alice); !slices.Contains(ids, wire.Identity{Scheme: "sasl", ID: "alice"}) {
		t.Fatalf("whoAmI %v, want sasl:alice", ids)
	}
	// A node only alice may read: the sasl scheme in an ACL, and the auth scheme expanded.
	for _, acl := range [][]wire.ACL{{{Perms: wire.PermAll, Scheme: "sasl", ID: "alice"}}, {{Perms: wire.PermAll, Scheme: "auth"}}} {
		path := "/secret-" + acl[0].Scheme
		f := call(t, alice, wire.OpCreate, &wire.CreateRequest{Path: path, Data: []byte("x"), ACL: acl})
		if f.Header.Err != wire.OK {
			t.Fatalf("create %s: %v", path, f.Header.Err)
		}
		f = call(t, alice, wire.OpGetACL, &wire.PathRecord{Path: path})
		var got wire.GetACLResponse
		got.Decode(wire.NewDecoder(f.Body))
		if want := []wire.ACL{{Perms: wire.PermAll, Scheme: "sasl", ID: "alice"}}; !slices.Equal(got.ACL, want) {
			t.Fatalf("%s ACL %v, want %v", path, got.ACL, want)
		}
		other := rawSession(t, addr)
		if f := call(t, other, wire.OpGetData, &wire.PathWatchRequest{Path: path}); f.Header.Err != wire.ErrNoAuth {
			t.Fatalf("unauthenticated read of %s: %v, want NoAuth", path, f.Header.Err)
		}
		bob := rawSession(t, addr)
		if code := saslLogin(t, bob, "bob", "bob-pw"); code != wire.OK {
			t.Fatalf("bob (sasl_passwords): %v", code)
		}
		if f := call(t, bob, wire.OpGetData, &wire.PathWatchRequest{Path: path}); f.Header.Err != wire.ErrNoAuth {
			t.Fatalf("bob's read of %s: %v, want NoAuth", path, f.Header.Err)
		}
		admin := rawSession(t, addr)
		if code := saslLogin(t, admin, "admin", "admin-pw"); code != wire.OK {
			t.Fatalf("admin: %v", code)
		}
		if f := call(t, admin, wire.OpGetData, &wire.PathWatchRequest{Path: path}); f.Header.Err != wire.OK {
			t.Fatalf("the super user's read of %s: %v", path, f.Header.Err)
		}
	}
	if f := call(t, alice, wire.OpCreate, &wire.CreateRequest{Path: "/bad", ACL: []wire.ACL{{Perms: 1, Scheme: "sasl", ID: "a@b@c"}}}); f.Header.Err != wire.ErrInvalidACL {
		t.Fatalf("sasl:a@b@c: %v, want InvalidACL (not a Kerberos name)", f.Header.Err)
	}
}

func TestSASLRefused(t *testing.T) {
	addr := startSASL(t, nil)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c *conformance.Conn) *conformance.Frame
	}{
		{"wrong password", func(t *testing.T, c *conformance.Conn) *conformance.Frame {
			_, ch := saslToken(t, c, []byte{})
			f, _ := saslToken(t, c, digestResponse(t, ch, "alice", "guess"))
			return f
		}},
		{"unknown user", func(t *testing.T, c *conformance.Conn) *conformance.Frame {
			_, ch := saslToken(t, c, []byte{})
			f, _ := saslToken(t, c, digestResponse(t, ch, "mallory", "alice-pw"))
			return f
		}},
		{"huge first token", func(t *testing.T, c *conformance.Conn) *conformance.Frame {
			f, _ := saslToken(t, c, []byte(strings.Repeat("x", 5<<10)))
			return f
		}},
		{"huge token", func(t *testing.T, c *conformance.Conn) *conformance.Frame {
			saslToken(t, c, []byte{})
			f, _ := saslToken(t, c, []byte(strings.Repeat("x", 64<<10)))
			return f
		}},
		{"token after success", func(t *testing.T, c *conformance.Conn) *conformance.Frame {
			if code := saslLogin(t, c, "alice", "alice-pw"); code != wire.OK {
				t.Fatalf("login: %v", code)
			}
			f, _ := saslToken(t, c, []byte{})
			return f
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rawSession(t, addr)
			f := tc.run(t, c)
			// ZooKeeper: AuthFailed, zxid 0, a null token, then the connection closes.
			if f.Header.Err != wire.ErrAuthFailed || f.Header.Zxid != 0 || string(f.Body) != "\xff\xff\xff\xff" {
				t.Fatalf("answered %+v body %x, want AuthFailed, zxid 0 and a null token", f.Header, f.Body)
			}
			waitClosed(t, c)
		})
	}
}

func TestSASLWithoutUsers(t *testing.T) {
	c := rawSession(t, startBounded(t, nil).Addr().String())
	f := call(t, c, wire.OpSASL, &wire.SASLRequest{Token: []byte{}})
	if f.Header.Err != wire.OK || string(f.Body) != "\xff\xff\xff\xff" {
		t.Fatalf("answered %+v body %x, want OK and a null token as ZooKeeper without a Server section", f.Header, f.Body)
	}
	if f := call(t, c, wire.OpExists, &wire.PathWatchRequest{Path: "/"}); f.Header.Err != wire.OK {
		t.Fatalf("the connection is unusable after: %v", f.Header.Err)
	}
}

func TestEnforceAuth(t *testing.T) {
	addr := startSASL(t, func(c *server.Config) {
		c.EnforceAuth, c.EnforceAuthSchemes = true, []string{"sasl"}
	})
	for _, op := range []struct {
		op  wire.Op
		rec wire.Record
	}{
		{wire.OpGetData, &wire.PathWatchRequest{Path: "/"}},
		{wire.OpCreate, &wire.CreateRequest{Path: "/x", ACL: []wire.ACL{{Perms: wire.PermAll, Scheme: "world", ID: "anyone"}}}},
		{wire.OpPing, nil},
		{wire.OpCloseSession, nil},
	} {
		t.Run("unauthenticated "+op.op.String(), func(t *testing.T) {
			c := rawSession(t, addr)
			f := call(t, c, op.op, op.rec)
			if f.Header.Err != wire.ErrSessionClosedRequireSASL || f.Header.Zxid != 0 || len(f.Body) != 0 {
				t.Fatalf("answered %+v body %x, want SessionClosedRequireSaslAuth with zxid 0", f.Header, f.Body)
			}
			waitClosed(t, c)
		})
	}
	t.Run("digest is not sasl", func(t *testing.T) {
		c := rawSession(t, addr)
		if f := call(t, c, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("alice:alice-pw")}); f.Header.Err != wire.OK {
			t.Fatalf("auth: %v", f.Header.Err)
		}
		if f := call(t, c, wire.OpExists, &wire.PathWatchRequest{Path: "/"}); f.Header.Err != wire.ErrSessionClosedRequireSASL {
			t.Fatalf("exists after digest auth: %v", f.Header.Err)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		c := rawSession(t, addr)
		if code := saslLogin(t, c, "alice", "guess"); code != wire.ErrSessionClosedRequireSASL {
			t.Fatalf("failed sasl under enforce.auth: %v, want SessionClosedRequireSaslAuth as ZooKeeper", code)
		}
		waitClosed(t, c)
	})
	t.Run("authenticated", func(t *testing.T) {
		c := rawSession(t, addr)
		if code := saslLogin(t, c, "alice", "alice-pw"); code != wire.OK {
			t.Fatalf("login: %v", code)
		}
		for _, op := range []wire.Op{wire.OpExists, wire.OpPing} {
			var rec wire.Record
			if op == wire.OpExists {
				rec = &wire.PathWatchRequest{Path: "/"}
			}
			if f := call(t, c, op, rec); f.Header.Err != wire.OK {
				t.Fatalf("%v after sasl: %v", op, f.Header.Err)
			}
		}
	})
}

func TestEnforceAuthDigest(t *testing.T) {
	addr := startBounded(t, func(c *server.Config) {
		c.EnforceAuth, c.EnforceAuthSchemes = true, []string{"digest"}
	}).Addr().String()
	c := rawSession(t, addr)
	if f := call(t, c, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}); f.Header.Err != wire.OK {
		t.Fatalf("auth: %v", f.Header.Err)
	}
	if f := call(t, c, wire.OpExists, &wire.PathWatchRequest{Path: "/"}); f.Header.Err != wire.OK {
		t.Fatalf("exists after digest auth: %v", f.Header.Err)
	}
}
