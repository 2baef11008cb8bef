package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/paddock/paddock/configs"
	"github.com/paddock/paddock/web"
)

// TestServerListFlagIsZK: every command that connects to the coordination servers
// names their list --zk, and no command shows another name for it.
func TestServerListFlagIsZK(t *testing.T) {
	want := map[string]bool{
		"paddock master": true, "paddock worker": true, "paddock replicator": true,
		"paddock replicator task": true, "paddock logcollector": true,
		"paddock logcollector source": true, "paddock web": true, "paddock task": true, "paddock job": true,
		"paddock zk": true, "paddock bench": true,
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		has := false
		visit := func(f *pflag.Flag) {
			if f.Name == "zk" {
				has = true
			}
			if !f.Hidden && (f.Name == "server" || f.Name == "servers" || strings.Contains(f.Usage, "coordination servers") && f.Name != "zk") {
				t.Errorf("%s: --%s is a server list not named --zk", c.CommandPath(), f.Name)
			}
		}
		c.LocalFlags().VisitAll(visit)
		c.InheritedFlags().VisitAll(visit)
		if want[c.CommandPath()] && !has {
			t.Errorf("%s has no --zk", c.CommandPath())
		}
		delete(want, c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	for path := range want {
		t.Errorf("no command %s", path)
	}
}

// TestZKServerAlias: paddock zk takes --zk, and --server, its old name, still works
// without showing in --help.
func TestZKServerAlias(t *testing.T) {
	addr := startZKPaddock(t)
	if code, _, stderr := run(t, "zk", "--server", addr, "create", "/alias", "old"); code != 0 {
		t.Fatalf("zk --server create: exit %d, %s", code, stderr)
	}
	if code, stdout, stderr := run(t, "zk", "--zk", addr, "get", "/alias"); code != 0 || stdout != "old" {
		t.Fatalf("zk --zk get: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	_, help, _ := run(t, "zk", "--help")
	if !strings.Contains(help, "--zk host:port") || strings.Contains(help, "--server") {
		t.Errorf("zk --help shows --server or lacks --zk:\n%s", help)
	}
	// A bad list is named by the flag the user is told about.
	if code, _, stderr := run(t, "zk", "--zk", addr, "--session-timeout", "-1s", "get", "/"); code != 2 || !strings.Contains(stderr, "--zk ") {
		t.Errorf("bad session timeout: exit %d, stderr %q; want 2 and --zk named", code, stderr)
	}
}

// TestWebHTTPSFlags: --https-cert and --https-key set the console's HTTPS files and not
// the client certificate it connects to the servers with (--tls-cert, --tls-key).
func TestWebHTTPSFlags(t *testing.T) {
	hash, err := web.HashPassword("pw")
	if err != nil {
		t.Fatal(err)
	}
	cmd := newWebCmd()
	if err := cmd.ParseFlags([]string{"--https-cert", "console.pem", "--https-key", "console-key.pem"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PADDOCK_WEB_USERS", "admin:admin:"+hash)
	cfg, err := configs.LoadWeb(configs.Options{Flags: cmd.Flags()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLSCert != "console.pem" || cfg.TLSKey != "console-key.pem" || cfg.Access.TLSCert != "" || cfg.Access.TLSKey != "" {
		t.Errorf("https files %q %q, client certificate %q %q; want the flags' files for HTTPS only",
			cfg.TLSCert, cfg.TLSKey, cfg.Access.TLSCert, cfg.Access.TLSKey)
	}
}
