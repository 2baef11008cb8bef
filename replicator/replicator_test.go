package replicator

import (
	"strings"
	"testing"
	"time"
)

func TestRedactDSN(t *testing.T) {
	for _, dsn := range []string{"repl:s3cret@tcp(10.0.0.1:3306)/", "repl:s3cret@tcp(db:3306)/shop?tls=true"} {
		got := RedactDSN(dsn)
		if strings.Contains(got, "s3cret") || !strings.Contains(got, "repl:****@") {
			t.Errorf("RedactDSN(%q) = %q", dsn, got)
		}
	}
	d := TaskDef{Source: "a:pw1@tcp(h:1)/", Target: "b:pw2@tcp(h:2)/"}.Redacted()
	if strings.Contains(d.Source+d.Target, "pw") {
		t.Errorf("Redacted: %+v", d)
	}
}

func TestTaskDefValidate(t *testing.T) {
	good := TaskDef{Source: "root@tcp(127.0.0.1:3306)/", Target: "root@tcp(127.0.0.1:3307)/", ServerID: 7}
	if err := good.Validate("t1"); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	bad := TaskDef{Source: "not a dsn", Target: "x:secretpw@tcp(h:1)/", ServerID: 0, Include: []string{"["}}
	err := bad.Validate("bad/name")
	if err == nil {
		t.Fatal("Validate accepted a bad definition")
	}
	for _, want := range []string{"bad/name", "source", "server"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %q, want it to name %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "secretpw") {
		t.Errorf("Validate shows a password: %q", err)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "tasks") {
		t.Errorf("hot mode without tasks: %v", err)
	}
	c.Mode, c.ScanInterval = "warm", 0
	err := c.Validate()
	for _, want := range []string{"mode = warm", "scan_interval"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
	c = DefaultConfig()
	c.Mode, c.LagThreshold = "cold", time.Second
	if err := c.Validate(); err != nil {
		t.Errorf("cold mode: %v", err)
	}
}

func TestSortInstances(t *testing.T) {
	got := sortInstances([]string{"b_0000000003", "_c_1234-a_0000000001", "a_b_0000000002"})
	if got[0] != "_c_1234-a_0000000001" || got[2] != "b_0000000003" {
		t.Errorf("%v", got)
	}
	if DefaultServerID("x") == DefaultServerID("y") || DefaultServerID("x") < 1<<20 {
		t.Errorf("DefaultServerID: %d %d", DefaultServerID("x"), DefaultServerID("y"))
	}
}
