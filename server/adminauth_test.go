package server_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/configs"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/datatree"
)

// adminGet sends GET path to the admin port with header auth ("" for none).
func adminGet(t *testing.T, srv *server.Server, path, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+srv.AdminAddr().String()+path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The admin port listens on 127.0.0.1 unless configured otherwise: the YAML default, and
// a zoo.cfg without admin.serverAddress (ZooKeeper would listen on 0.0.0.0).
func TestAdminLoopbackByDefault(t *testing.T) {
	if host, _, _ := net.SplitHostPort(server.DefaultConfig().AdminAddr); host != "127.0.0.1" {
		t.Errorf("default admin_addr %s: want 127.0.0.1", server.DefaultConfig().AdminAddr)
	}
	dir := t.TempDir()
	zooCfg := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(zooCfg, []byte("tickTime=2000\ndataDir="+dir+"\nclientPort=2181\n"), 0o600)
	cfg, err := configs.LoadServer(configs.Options{ZooCfg: zooCfg})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AdminAddr != "127.0.0.1:8080" || cfg.AdminPprof || cfg.AdminAuth {
		t.Errorf("zoo.cfg without admin keys: admin_addr %q, pprof %v, auth %v; want 127.0.0.1:8080, false, false",
			cfg.AdminAddr, cfg.AdminPprof, cfg.AdminAuth)
	}
}

// Without admin.pprof the profiles are not served.
func TestAdminPprofOffByDefault(t *testing.T) {
	cfg := testutil.PaddockConfig(t)
	cfg.AdminAddr = "127.0.0.1:0"
	srv := testutil.StartServer(t, cfg)
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		if code, _ := adminGet(t, srv, p, ""); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}
	// Without admin.auth the commands stay open, as in ZooKeeper.
	if code, body := adminGet(t, srv, "/commands/cons", ""); code != http.StatusOK || !strings.Contains(body, "connections") {
		t.Errorf("cons without admin.auth: %d %s", code, body)
	}
}

// With admin.auth the sensitive commands and the profiles need the super user's or a
// root-admin digest identity's credentials; the others stay open.
func TestAdminAuth(t *testing.T) {
	cfg := testutil.PaddockConfig(t)
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.AdminAuth, cfg.AdminPprof = true, true
	cfg.SuperDigest = datatree.Digest("super:s3cret")
	srv := testutil.StartServer(t, cfg)

	// A root admin by ACL: ops has cdrwa on /, guest only r.
	c, _ := connect(t, srv.Addr().String())
	if err := c.AddAuth("digest", []byte("super:s3cret")); err != nil {
		t.Fatal(err)
	}
	acl := append(zk.DigestACL(zk.PermAll, "ops", "opspw"), zk.DigestACL(zk.PermRead, "guest", "guestpw")...)
	if _, err := c.SetACL("/", acl, -1); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"cons", "connections", "dump", "wchc", "wchp", "stat", "envi", "conf", "crst", "srst"} {
		code, body := adminGet(t, srv, "/commands/"+name, "")
		if code != http.StatusUnauthorized || !strings.Contains(body, "Auth info is missing") {
			t.Errorf("%s without credentials: %d %s, want 401", name, code, body)
		}
	}
	tests := []struct {
		auth string
		want int
	}{
		{"digest super:s3cret", http.StatusOK},
		{"digest ops:opspw", http.StatusOK},
		{"digest super:wrong", http.StatusForbidden},
		{"digest guest:guestpw", http.StatusForbidden}, // read only on the root
		{"digest nobody:x", http.StatusForbidden},
		{"ip", http.StatusUnauthorized},
		{"Basic b3BzOm9wc3B3", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		code, body := adminGet(t, srv, "/commands/dump", tt.auth)
		if code != tt.want {
			t.Errorf("dump with %q: %d %s, want %d", tt.auth, code, body, tt.want)
		}
		if tt.want != http.StatusOK {
			var resp map[string]any
			if json.Unmarshal([]byte(body), &resp) != nil || resp["command"] != "dump" || resp["error"] == nil {
				t.Errorf("refusal %s: want ZooKeeper's {command, error}", body)
			}
		}
	}
	if code, _ := adminGet(t, srv, "/debug/pprof/cmdline", ""); code != http.StatusUnauthorized {
		t.Errorf("pprof without credentials: %d, want 401", code)
	}
	if code, _ := adminGet(t, srv, "/debug/pprof/cmdline", "digest ops:opspw"); code != http.StatusOK {
		t.Errorf("pprof as ops: %d, want 200", code)
	}
	for _, p := range []string{"/commands/srvr", "/commands/mntr", "/commands/ruok", "/commands", "/metrics"} {
		if code, _ := adminGet(t, srv, p, ""); code != http.StatusOK {
			t.Errorf("GET %s without credentials: %d, want 200 (not sensitive)", p, code)
		}
	}
}
