package clients

import (
	"strings"
	"testing"
	"time"
)

// systemPython is Debian's interpreter, which python3-kazoo installs into; the python3 on
// PATH may be another one (pyenv) without kazoo.
const systemPython = "/usr/bin/python3"

const kazooScript = "testdata/kazoo_recipes.py"

// kazooChecks are the checks kazoo_recipes.py runs, in order; each becomes a subtest. See
// the script for what each asserts.
var kazooChecks = []string{
	"server_version", // envi parsed by server_version() gives (3, 8, x); ruok
	"sequence",       // %010d suffixes from the parent's create counter, also inside a transaction
	"ephemeral",      // ephemeralOwner, NoChildrenForEphemerals, removal (and watch) when the client stops
	"lock",           // two clients contend; the second acquires only after the first releases
	"election",       // the winner leads; the loser takes over when the winner's client stops
	"counter",        // concurrent increments from two clients add up exactly
	"barrier",        // wait blocks while the barrier exists and returns when it is removed
	"locking_queue",  // put/put_all/get/consume/release, priority then FIFO order, blocked get
	"data_watch",     // create, set, set, delete, re-create seen in order
	"children_watch", // children added and removed (also by session end) seen in order
	"tree_cache",     // initial build, then add/update/remove events on a subtree
	"transaction",    // committing and failing client.transaction(): results and atomicity
}

// TestKazoo runs the kazoo recipe checks against paddock in one Python process (kazoo's
// import costs about half a second) and reports each check as a subtest.
func TestKazoo(t *testing.T) {
	requireFile(t, systemPython, "python3")
	requireFile(t, "/usr/lib/python3/dist-packages/kazoo/client.py", "python3-kazoo")
	addr := startServer(t)

	args := append([]string{kazooScript, addr}, kazooChecks...)
	start := time.Now()
	stdout, stderr, err := run(t, 90*time.Second, "", systemPython, args...)
	t.Logf("kazoo checks took %v", time.Since(start).Round(time.Millisecond))

	results := parseKazooResults(stdout)
	for _, name := range kazooChecks {
		t.Run(name, func(t *testing.T) {
			res, ok := results[name]
			switch {
			case !ok:
				t.Fatalf("the script reported nothing for this check (exit: %v)\nstdout:\n%s\nstderr:\n%s",
					err, tail(stdout, 20), tail(stderr, 40))
			case !res.passed:
				t.Fatalf("%s\nkazoo log:\n%s", res.detail, tail(stderr, 40))
			}
			t.Logf("passed in %s", res.detail)
		})
	}
	if err != nil && !t.Failed() {
		t.Fatalf("script failed although every check passed: %v\nstdout:\n%s\nstderr:\n%s",
			err, tail(stdout, 20), tail(stderr, 40))
	}
}

// kazooResult is one check's outcome: passed with its duration, or failed with a message.
type kazooResult struct {
	passed bool
	detail string
}

// parseKazooResults reads the script's "PASS name 1.23s" and "FAIL name: message" lines.
func parseKazooResults(stdout string) map[string]kazooResult {
	results := make(map[string]kazooResult)
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "PASS "); ok {
			name, took, _ := strings.Cut(rest, " ")
			results[name] = kazooResult{passed: true, detail: took}
		} else if rest, ok := strings.CutPrefix(line, "FAIL "); ok {
			name, msg, _ := strings.Cut(rest, ": ")
			if msg == "" {
				msg = "failed without a message"
			}
			results[name] = kazooResult{detail: msg}
		}
	}
	return results
}
