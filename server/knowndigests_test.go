package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// The platform's identities in these tests: admin is the super digest, worker is in the
// known digests file (the roles file's format, with an x509 line it skips).
const (
	adminAuth  = "admin:admin-real-pw"
	workerAuth = "worker:worker-real-pw"
)

// knownDigestsFile writes a roles file naming worker, and returns its path.
func knownDigestsFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "roles")
	roles := "# the platform's roles\nadmin=digest:" + datatree.Digest(adminAuth) + "\nworker=digest:" +
		datatree.Digest(workerAuth) + "\nsubmitter=x509:CN=submitter,O=acme\n"
	if err := os.WriteFile(path, []byte(roles), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startLogged starts a server whose log goes to the returned buffer.
func startLogged(t *testing.T, configure func(*server.Config)) (*server.Server, *testutil.LogBuffer) {
	t.Helper()
	cfg := testutil.PaddockConfig(t)
	configure(&cfg)
	logger, logs := testutil.CapturedLogger()
	s, err := server.New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, logs
}

// TestEnforceAuthKnownDigestsOnly replays issue 31's attack on enforce.auth with digest:
// a client that makes up digest:admin, or any user, with a password it guesses is
// refused as an unauthenticated one (SessionClosedRequireSaslAuth, the connection
// closed) once enforce_auth_known_digests_only is on; the super digest and the known
// file's identities are served. Without the option, as in ZooKeeper, the made-up one
// is served, and the server says at start that digest proves nothing.
func TestEnforceAuthKnownDigestsOnly(t *testing.T) {
	file := knownDigestsFile(t)
	enforce := func(knownOnly bool) func(*server.Config) {
		return func(c *server.Config) {
			c.EnforceAuth, c.EnforceAuthSchemes = true, []string{"digest"}
			c.SuperDigest, c.KnownDigestsFile, c.EnforceAuthKnownDigestsOnly = datatree.Digest(adminAuth), file, knownOnly
		}
	}
	srv, logs := startLogged(t, enforce(true))
	if strings.Contains(logs.String(), "enforce.auth accepts any digest") {
		t.Errorf("warned that digest proves nothing with enforce_auth_known_digests_only:\n%s", logs)
	}
	for _, tc := range []struct {
		auth   string
		served bool
	}{
		{"admin:guess", false}, {"admin:", false}, {"worker:guess", false}, {"mallory:anything", false},
		{"submitter:x", false}, {adminAuth, true}, {workerAuth, true},
	} {
		c := rawSession(t, srv.Addr().String())
		if f := call(t, c, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte(tc.auth)}); f.Header.Err != wire.OK {
			t.Fatalf("auth digest %s: %v", tc.auth, f.Header.Err)
		}
		f := call(t, c, wire.OpGetData, &wire.PathWatchRequest{Path: "/"})
		user, _, _ := strings.Cut(tc.auth, ":")
		switch {
		case tc.served && f.Header.Err != wire.OK:
			t.Errorf("digest %s (known): getData %v, want served", user, f.Header.Err)
		case !tc.served && f.Header.Err != wire.ErrSessionClosedRequireSASL:
			t.Errorf("digest %s with a made-up password: getData %v, want SessionClosedRequireSaslAuth", user, f.Header.Err)
		case !tc.served:
			waitClosed(t, c)
		}
	}

	open, logs := startLogged(t, enforce(false))
	c := rawSession(t, open.Addr().String())
	call(t, c, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("admin:guess")})
	if f := call(t, c, wire.OpGetData, &wire.PathWatchRequest{Path: "/"}); f.Header.Err != wire.OK {
		t.Errorf("without the option a made-up digest is ZooKeeper's: getData %v, want served", f.Header.Err)
	}
	if !strings.Contains(logs.String(), "enforce.auth accepts any digest") {
		t.Errorf("no start-up warning that digest proves nothing:\n%s", logs)
	}
	for _, secret := range []string{"admin-real-pw", "worker-real-pw", strings.SplitN(datatree.Digest(workerAuth), ":", 2)[1]} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

// The option is refused at start where it cannot work, with the key named; so is a
// known digests file that does not read, by its line and never its value.
func TestKnownDigestsConfigErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "roles")
	if err := os.WriteFile(bad, []byte("admin=digest:admin:"+strings.Repeat("S", 27)+"=\nworker=digest:worker:SECRETHASH\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		configure func(*server.Config)
		want      string
	}{
		{"no enforce.auth", func(c *server.Config) {
			c.EnforceAuthKnownDigestsOnly, c.SuperDigest = true, datatree.Digest(adminAuth)
		},
			"enforce_auth_known_digests_only = true: needs enforce_auth with digest"},
		{"no digest among the schemes", func(c *server.Config) {
			c.EnforceAuth, c.EnforceAuthSchemes, c.EnforceAuthKnownDigestsOnly = true, []string{"ip"}, true
			c.SuperDigest = datatree.Digest(adminAuth)
		}, "enforce_auth_known_digests_only = true: needs enforce_auth with digest"},
		{"no digest known", func(c *server.Config) {
			c.EnforceAuth, c.EnforceAuthSchemes, c.EnforceAuthKnownDigestsOnly = true, []string{"digest"}, true
		}, "no digest is known: set super_digest or known_digests_file"},
		{"a malformed line", func(c *server.Config) { c.KnownDigestsFile = bad }, "known_digests_file " + bad + ": line 2: want digest:<user>:<base64 SHA-1> (value hidden)"},
		{"no file", func(c *server.Config) { c.KnownDigestsFile = bad + ".missing" }, "known_digests_file: open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testutil.PaddockConfig(t)
			tc.configure(&cfg)
			_, err := server.New(cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRETHASH") {
				t.Fatalf("the error shows the line's value: %v", err)
			}
		})
	}
}

// TestAuditTellsMadeUpDigests replays issue 31's audit attack: a client that made up
// digest:admin creates a node, and so does the real admin. ZooKeeper's user= reads
// "admin" for both; the identities field marks the real one super, a known file's
// identity known and the made-up ones claimed, and no line holds a hash or a password.
func TestAuditTellsMadeUpDigests(t *testing.T) {
	cfg := testutil.PaddockConfig(t)
	cfg.AuditEnable, cfg.AuditLogFile = true, filepath.Join(t.TempDir(), "audit.log")
	cfg.SuperDigest, cfg.KnownDigestsFile = datatree.Digest(adminAuth), knownDigestsFile(t)
	srv := testutil.StartServer(t, cfg)
	want := map[string]string{
		"/by-fake-admin":  "digest:admin(claimed)",
		"/by-admin":       "digest:admin(super)",
		"/by-worker":      "digest:worker(known)",
		"/by-fake-worker": "digest:worker(claimed)",
		"/by-odd":         "digest:x%3Bip%28super%29%25(claimed)",
	}
	auths := map[string]string{"/by-fake-admin": "admin:guess", "/by-admin": adminAuth, "/by-worker": workerAuth,
		"/by-fake-worker": "worker:guess", "/by-odd": "x;ip(super)%:pw"}
	for path, auth := range auths {
		c := rawSession(t, srv.Addr().String())
		call(t, c, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte(auth)})
		mustCreate(t, c, path, nil, wire.FlagPersistent)
	}
	lines := map[string]map[string]string{}
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		log := readAudit(t, cfg.AuditLogFile)
		for line := range strings.SplitSeq(strings.TrimSuffix(log, "\n"), "\n") {
			if f := auditFields(t, line); f["operation"] == "create" {
				lines[f["znode"]] = f
			}
		}
		return len(lines) == len(want)
	}, "audit lines for %d creates, want %d", len(lines), len(want))
	for path, ids := range want {
		f := lines[path]
		if f["identities"] != "ip:127.0.0.1;"+ids {
			t.Errorf("%s: identities=%q, want %q", path, f["identities"], "ip:127.0.0.1;"+ids)
		}
	}
	if lines["/by-fake-admin"]["user"] != lines["/by-admin"]["user"] {
		t.Errorf("ZooKeeper's user= changed: %q and %q", lines["/by-fake-admin"]["user"], lines["/by-admin"]["user"])
	}
	log := readAudit(t, cfg.AuditLogFile)
	for _, auth := range []string{adminAuth, workerAuth} {
		_, hash, _ := strings.Cut(datatree.Digest(auth), ":")
		_, pw, _ := strings.Cut(auth, ":")
		if strings.Contains(log, hash) || strings.Contains(log, pw) {
			t.Errorf("the audit log holds a hash or a password:\n%s", log)
		}
	}
}
