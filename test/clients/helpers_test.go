package clients

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// targetEnv, set to "zookeeper", points the tests at a throwaway Apache ZooKeeper 3.8
// instead of paddock. It exists to check the tests' expectations against the reference
// server after changing them (`PADDOCK_CLIENTS_TARGET=zookeeper go test ./test/clients/`);
// CI runs them against paddock only. All pass against ZooKeeper 3.8 except
// TestGoZKFourLetterWords: go-zk's FLWSrvr cannot parse the build date ZooKeeper 3.7+
// prints, which is why paddock prints the older form.
const targetEnv = "PADDOCK_CLIENTS_TARGET"

// startServer starts the server under test for one test, with every four-letter word
// allowed (kazoo's server_version reads envi; go-zk's helpers use srvr and ruok), and
// returns its client address: an in-process paddock, or Apache ZooKeeper (see targetEnv).
func startServer(t *testing.T) string {
	t.Helper()
	switch target := os.Getenv(targetEnv); target {
	case "", "paddock":
		return testutil.StartPaddock(t, func(c *server.Config) {
			c.FourLetterWords = []string{"*"}
		})
	case "zookeeper":
		z, err := testutil.StartZooKeeper(t, testutil.ZooKeeperOptions{FourLetterWords: "*"})
		if err != nil {
			t.Fatal(err)
		}
		return z.Addr
	default:
		t.Fatalf("%s=%q: want paddock or zookeeper", targetEnv, target)
		return ""
	}
}

// requireFile fails the test if path does not exist, naming the Debian package that
// provides it: these tests never skip, `make test` installs what they need.
func requireFile(t *testing.T, path, debianPackage string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing (%v): run `make test`, which installs the Debian package %s "+
			"(test/deps.sh; or apt-get install -y %s)", path, err, debianPackage, debianPackage)
	}
}

// run runs name with args and stdin under a deadline and returns stdout and stderr. The
// error is non-nil if the process failed to start, exited non-zero or overran the deadline.
func run(t *testing.T, timeout time.Duration, stdin string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 5 * time.Second // children holding the pipes open do not hang the test
	err = cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return out.String(), errOut.String(), err
}

// tail returns at most the last n lines of s, for failure messages.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
