package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogProblemsLeavesOutTheClientLibrarysRace: go-zookeeper's own race on lastZxid is
// left out of a child's problems; any other race, a panic and an ERROR record are kept.
func TestLogProblemsLeavesOutTheClientLibrarysRace(t *testing.T) {
	log := strings.Join([]string{
		`time=x level=INFO msg=start`,
		`==================`,
		`WARNING: DATA RACE`,
		`Read at 0x00c0000f6480 by goroutine 22:`,
		`  github.com/go-zookeeper/zk.(*Conn).sendSetWatches()`,
		`Previous write at 0x00c0000f6480 by goroutine 27:`,
		`  github.com/go-zookeeper/zk.(*Conn).recvLoop()`,
		`Goroutine 22 (running) created at:`,
		`  github.com/paddock/paddock/coordinator.Connect()`,
		`==================`,
		`==================`,
		`WARNING: DATA RACE`,
		`Write at 0x00c000100000 by goroutine 9:`,
		`  github.com/paddock/paddock/web.(*Console).Run()`,
		`==================`,
		`time=x level=ERROR msg=broken`,
	}, "\n")
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	problems, err := (&Child{LogPath: path}).LogProblems()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems, "\n")
	if strings.Contains(got, "sendSetWatches") {
		t.Errorf("the client library's known race is reported:\n%s", got)
	}
	for _, want := range []string{"web.(*Console).Run()", "level=ERROR msg=broken"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
}
