package clients

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/sasl/digestmd5/digestmd5test"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/test/conformance"
)

// saslJaasServer is the Server section both servers of the differential test read.
const saslJaasServer = `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_alice="alice-secret"
    user_root="root-secret";
};`

// TestSASLWireMatchesZooKeeper runs the same raw-wire SASL and enforce.auth exchanges
// against Apache ZooKeeper 3.8 (JAAS Server section, SASLAuthenticationProvider,
// zookeeper.superUser, enforce.auth for sasl) and against paddock configured alike, and
// checks that every reply (error code, zxid, body kind) and every close is the same.
func TestSASLWireMatchesZooKeeper(t *testing.T) {
	requireFile(t, zkCliPath, "zookeeper")
	jaasFile := writeJaas(t, saslJaasServer)
	zkSrv, err := testutil.StartZooKeeper(t, testutil.ZooKeeperOptions{
		JVMFlags: []string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-Djava.security.auth.login.config=" + jaasFile},
		Config: []string{"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
			"superUser=root", "enforce.auth.enabled=true", "enforce.auth.schemes=sasl"},
	})
	if err != nil {
		t.Fatal(err)
	}
	paddock := testutil.StartPaddock(t, func(c *server.Config) {
		c.SASLJaasConfig, c.SASLSuperUser = jaasFile, "root"
		c.EnforceAuth, c.EnforceAuthSchemes = true, []string{"sasl"}
	})
	for _, sc := range saslScenarios {
		t.Run(sc.name, func(t *testing.T) {
			want := sc.run(t, zkSrv.Addr)
			got := sc.run(t, paddock)
			t.Logf("zookeeper: %s", strings.Join(want, " | "))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("paddock:\n  %s\nzookeeper:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

type saslScenario struct {
	name string
	run  func(t *testing.T, addr string) []string
}

var saslScenarios = []saslScenario{
	{"unauthenticated exists", func(t *testing.T, addr string) []string {
		c := wireSession(t, addr)
		return []string{describe(wireCall(t, c, wire.OpExists, &wire.PathWatchRequest{Path: "/"})), closed(c)}
	}},
	{"unauthenticated ping", func(t *testing.T, addr string) []string {
		c := wireSession(t, addr)
		return []string{describe(wireCall(t, c, wire.OpPing, nil)), closed(c)}
	}},
	{"digest auth then exists", func(t *testing.T, addr string) []string {
		c := wireSession(t, addr)
		a := describe(wireCall(t, c, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("alice:x")}))
		return []string{a, describe(wireCall(t, c, wire.OpExists, &wire.PathWatchRequest{Path: "/"})), closed(c)}
	}},
	{"wrong password", func(t *testing.T, addr string) []string {
		c := wireSession(t, addr)
		f, ch := wireSASL(t, c, []byte{})
		out := []string{describe(f)}
		f, _ = wireSASL(t, c, zkDigestResponse(t, ch, "alice", "guess"))
		return append(out, describe(f), closed(c))
	}},
	{"initial response", func(t *testing.T, addr string) []string {
		c := wireSession(t, addr)
		f, ch := wireSASL(t, c, []byte(`username="alice"`)) // ignored, as DIGEST-MD5 has none
		out := []string{describe(f)}
		f, _ = wireSASL(t, c, zkDigestResponse(t, ch, "alice", "alice-secret"))
		return append(out, describe(f))
	}},
	{"login", func(t *testing.T, addr string) []string {
		c := wireSession(t, addr)
		f, ch := wireSASL(t, c, []byte{})
		out := []string{describe(f)}
		f, rsp := wireSASL(t, c, zkDigestResponse(t, ch, "alice", "alice-secret"))
		out = append(out, describe(f), fmt.Sprintf("rspauth %v", strings.HasPrefix(string(rsp), "rspauth=")))
		f = wireCall(t, c, wire.OpWhoAmI, nil)
		out = append(out, whoAmIString(f))
		out = append(out, describe(wireCall(t, c, wire.OpPing, nil)))
		f = wireCall(t, c, wire.OpCreate, &wire.CreateRequest{Path: "/sasl-diff", ACL: []wire.ACL{{Perms: wire.PermAll, Scheme: "auth"}},
			Flags: 1}) // ephemeral: gone with the session
		out = append(out, fmt.Sprintf("create %v", f.Header.Err))
		f = wireCall(t, c, wire.OpGetACL, &wire.PathRecord{Path: "/sasl-diff"})
		var acl wire.GetACLResponse
		acl.Decode(wire.NewDecoder(f.Body))
		out = append(out, fmt.Sprintf("acl %v", acl.ACL))
		f, _ = wireSASL(t, c, []byte{})
		return append(out, "after success: "+describe(f), closed(c))
	}},
	{"super user", func(t *testing.T, addr string) []string {
		c := wireSession(t, addr)
		_, ch := wireSASL(t, c, []byte{})
		f, _ := wireSASL(t, c, zkDigestResponse(t, ch, "root", "root-secret"))
		return []string{describe(f), whoAmIString(wireCall(t, c, wire.OpWhoAmI, nil))}
	}},
}

// whoAmIString lists the identities of a whoAmI reply in the order received: ZooKeeper's,
// its identity set's iteration order, which paddock follows.
func whoAmIString(f *conformance.Frame) string {
	var who wire.WhoAmIResponse
	who.Decode(wire.NewDecoder(f.Body))
	ids := make([]string, len(who.Clients))
	for i, id := range who.Clients {
		ids[i] = id.Scheme + ":" + id.ID
	}
	return fmt.Sprintf("whoAmI %v", ids)
}

// describe reduces a reply to what both servers must agree on.
func describe(f *conformance.Frame) string {
	body := "no body"
	switch {
	case len(f.Body) == 4 && string(f.Body) == "\xff\xff\xff\xff":
		body = "null buffer"
	case len(f.Body) > 0:
		body = "body"
	}
	return fmt.Sprintf("%v zxid=%d %s", f.Header.Err, f.Header.Zxid, body)
}

func closed(c *conformance.Conn) string {
	for {
		_, err := c.ReadFrame(5 * time.Second)
		switch {
		case conformance.IsClosed(err):
			return "closed"
		case err != nil:
			return "open (" + err.Error() + ")"
		}
	}
}

func wireSession(t *testing.T, addr string) *conformance.Conn {
	t.Helper()
	c, err := conformance.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, 16)}); err != nil {
		t.Fatal(err)
	}
	if resp, _, err := c.ReadConnectResponse(5 * time.Second); err != nil || resp.SessionID == 0 {
		t.Fatalf("connect: %+v %v", resp, err)
	}
	return c
}

// wireCall sends one request, a ping with xid -2 as clients send them, and returns its
// reply, skipping notifications.
func wireCall(t *testing.T, c *conformance.Conn, op wire.Op, rec wire.Record) *conformance.Frame {
	t.Helper()
	xid := c.NextXid()
	if op == wire.OpPing {
		xid = wire.XidPing
	}
	if err := c.Send(xid, op, rec); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := c.ReadFrame(10 * time.Second)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if f.Header.Xid == xid {
			return f
		}
	}
}

func wireSASL(t *testing.T, c *conformance.Conn, token []byte) (*conformance.Frame, []byte) {
	t.Helper()
	f := wireCall(t, c, wire.OpSASL, &wire.SASLRequest{Token: token})
	var r wire.SASLRequest
	if f.Header.Err == wire.OK {
		r.Decode(wire.NewDecoder(f.Body))
	}
	return f, r.Token
}

// zkDigestResponse answers a challenge as ZooKeeper's Java client does (RFC 2831).
func zkDigestResponse(t *testing.T, challenge []byte, user, password string) []byte {
	t.Helper()
	resp, err := digestmd5test.Respond(challenge, user, password)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
