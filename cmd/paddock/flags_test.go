package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestServerListFlagIsZK: every command that connects to the coordination servers
// names their list --zk, and no command shows another name for it.
func TestServerListFlagIsZK(t *testing.T) {
	want := map[string]bool{
		"paddock master": true, "paddock worker": true, "paddock replicator": true,
		"paddock replicator task": true, "paddock logcollector": true,
		"paddock logcollector source": true, "paddock web": true, "paddock task": true,
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
