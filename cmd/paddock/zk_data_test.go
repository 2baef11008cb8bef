package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// runZKIn runs paddock zk against addr with stdin.
func runZKIn(t *testing.T, addr, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code = zkInvocation{stdout: &out, stderr: &errOut, stdin: strings.NewReader(stdin)}.run(ctx,
		append([]string{"--server", addr}, args...)...)
	return code, out.String(), errOut.String()
}

func writeData(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// create and set take the data from a file or stdin, bounded by --max-buffer.
func TestZKDataFromFileAndStdin(t *testing.T) {
	addr := startZKPaddock(t)
	conn := zkConn(t, addr)
	binary := []byte("\x00\xff\n raw \x01 and more\n")
	file := writeData(t, binary)
	check := func(what, path string, want []byte) {
		t.Helper()
		data, _, err := conn.Get(path)
		if err != nil || !bytes.Equal(data, want) {
			t.Errorf("%s: %s holds %q (%v), want %q", what, path, data, err, want)
		}
	}
	mustRun := func(stdin string, args ...string) {
		t.Helper()
		if code, _, stderr := runZKIn(t, addr, stdin, args...); code != 0 {
			t.Fatalf("paddock zk %q: exit %d: %s", args, code, stderr)
		}
	}
	mustRun("", "create", "/f", "--file", file)
	check("create --file", "/f", binary)
	mustRun("from stdin\n", "create", "/s", "-")
	check("create -", "/s", []byte("from stdin\n"))
	mustRun("via --stdin", "create", "/t", "--stdin")
	check("create --stdin", "/t", []byte("via --stdin"))
	mustRun("set from stdin", "set", "/f", "-")
	check("set -", "/f", []byte("set from stdin"))
	mustRun("", "set", "/s", "--file", file, "-v", "0")
	check("set --file", "/s", binary)
	mustRun("", "set", "/t", "--stdin") // empty stdin: empty data
	check("set --stdin, empty", "/t", []byte{})
	mb := bytes.Repeat([]byte("m"), 1000000)
	mustRun("", "create", "/mb", "--file", writeData(t, mb))
	check("create a 1 MB file", "/mb", mb)

	for _, tt := range []struct {
		stdin  string
		args   []string
		code   int
		stderr string
	}{
		{"", []string{"set", "/f"}, 2, "want the data: DATA, - (stdin), --file FILE or --stdin"},
		{"", []string{"set", "/f", "x", "--file", file}, 2, "give the data once"},
		{"", []string{"create", "/g", "--file", file, "--stdin"}, 2, "give the data once"},
		{"", []string{"create", "/g", "--file", filepath.Join(t.TempDir(), "none")}, 1, "--file: open"},
		{"", []string{"create", "/g", "--file", writeData(t, make([]byte, 1<<20))}, 1,
			"is larger than 1048575 bytes, the most one request carries (the servers' jute.maxbuffer"},
		{strings.Repeat("s", 1<<20), []string{"set", "/f", "-"}, 1, "the data from stdin is larger than 1048575 bytes"},
		// Within --max-buffer, but not with the path and header: go-zk refuses it
		// before sending, rather than the server dropping the connection.
		{strings.Repeat("h", 1048570), []string{"set", "/f", "--stdin"}, 1,
			"request larger than the servers' jute.maxbuffer (--max-buffer): /f"},
		{"", []string{"set", "/f", "x", "--max-buffer", "10"}, 2, "--max-buffer 10: want the servers' jute.maxbuffer"},
	} {
		code, _, stderr := runZKIn(t, addr, tt.stdin, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("paddock zk %q: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.stderr)
		}
	}
	if ok, _, _ := conn.Exists("/g"); ok {
		t.Errorf("a refused create made /g")
	}
	check("after the refused sets", "/f", []byte("set from stdin"))
}

// With the servers' max_buffer raised and --max-buffer to match, a 2 MB file is written:
// past go-zk's own 1.5 MiB send buffer.
func TestZKDataRaisedMaxBuffer(t *testing.T) {
	addr := testutil.StartPaddock(t, func(c *server.Config) { c.MaxBuffer = 4 << 20 })
	two := bytes.Repeat([]byte("2"), 2000000)
	file := writeData(t, two)
	if code, _, stderr := runZKIn(t, addr, "", "create", "/two", "--file", file, "--max-buffer", "4194304"); code != 0 {
		t.Fatalf("create a 2 MB file: exit %d: %s", code, stderr)
	}
	if data, _, err := zkConn(t, addr).Get("/two"); err != nil || !bytes.Equal(data, two) {
		t.Errorf("read back %d bytes, %v", len(data), err)
	}
}

// The binary reads stdin through a pipe.
func TestZKBinaryStdin(t *testing.T) {
	addr := startZKPaddock(t)
	cmd := command("zk", "--server", addr, "create", "/piped", "--stdin")
	cmd.Stdin = strings.NewReader("piped data")
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "/piped\n" {
		t.Fatalf("paddock zk create --stdin: %v: %s", err, out)
	}
	if code, stdout, stderr := run(t, "zk", "--server", addr, "get", "/piped"); code != 0 || stdout != "piped data" {
		t.Errorf("get /piped: exit %d, %q, %s", code, stdout, stderr)
	}
}
