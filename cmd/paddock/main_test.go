package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// binary is the paddock binary TestMain builds for these tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "paddock-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "paddock")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build paddock:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// command returns the binary with args, to run without PADDOCK_ variables.
func command(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PADDOCK_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// run runs the binary with args and returns its exit code, stdout and stderr.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHelpListsServer(t *testing.T) {
	code, stdout, _ := run(t, "--help")
	if code != 0 {
		t.Fatalf("paddock --help exited %d", code)
	}
	for _, want := range []string{"server", "version"} {
		if !strings.Contains(stdout, "\n  "+want+" ") {
			t.Errorf("paddock --help does not list %q:\n%s", want, stdout)
		}
	}
}

func TestServerHelpListsFlags(t *testing.T) {
	code, stdout, _ := run(t, "server", "--help")
	if code != 0 {
		t.Fatalf("paddock server --help exited %d", code)
	}
	for _, flag := range []string{"--config", "--zoo-cfg", "--client-addr", "--data-dir", "--admin-addr", "--log-level"} {
		if !strings.Contains(stdout, flag) {
			t.Errorf("paddock server --help does not list %s:\n%s", flag, stdout)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := run(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "paddock ") {
		t.Errorf("paddock version: exit %d, output %q", code, stdout)
	}
}

func TestBadConfigExitsNonZero(t *testing.T) {
	yamlTypo := writeFile(t, "paddock.yaml", "server:\n  client_addr: 127.0.0.1:0\n  tick_tim: 2s\n")
	zooTypo := writeFile(t, "zoo.cfg", "tickTim=2000\ndataDir=/tmp/zk\nclientPort=2181\n")
	badValue := writeFile(t, "paddock.yaml", "server:\n  tick_time: 2 seconds\n")
	noMyid := writeFile(t, "zoo.cfg", "tickTime=2000\ndataDir="+t.TempDir()+"\nclientPort=2181\n"+
		"server.1=zk1:2888:3888\nserver.2=zk2:2888:3888\nserver.3=zk3:2888:3888\n")
	plainDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(plainDir, "myid"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plainPeer := writeFile(t, "zoo.cfg", "tickTime=2000\ndataDir="+plainDir+"\nclientPort=2181\n"+
		"server.1=10.0.0.1:2888:3888\nserver.2=10.0.0.2:2888:3888\nserver.3=10.0.0.3:2888:3888\n")
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"plain peer port beyond loopback", []string{"server", "--zoo-cfg", plainPeer},
			"the peer port of server.1, 10.0.0.1:2888, is not on a loopback address"},
		{"yaml typo", []string{"server", "--config", yamlTypo}, "unknown key server.tick_tim"},
		{"zoo.cfg typo", []string{"server", "--zoo-cfg", zooTypo}, `tickTim = "2000": unknown key`},
		{"bad value", []string{"server", "--config", badValue}, `server.tick_time = "2 seconds": want a duration like 2s`},
		{"ensemble member without myid", []string{"server", "--zoo-cfg", noMyid}, "myid: missing: an ensemble member needs its id"},
		{"bad flag value", []string{"server", "--client-addr", "nowhere"}, "server.client_addr = nowhere: want host:port"},
		{"missing file", []string{"server", "--config", "/nonexistent/paddock.yaml"}, "/nonexistent/paddock.yaml"},
		{"bad log level", []string{"server", "--log-level", "loud"}, `--log-level "loud"`},
		{"unknown flag", []string{"server", "--tick-time", "2s"}, "unknown flag: --tick-time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.args...)
			if code == 0 {
				t.Errorf("paddock %s exited 0, want non-zero", strings.Join(tt.args, " "))
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.want)
			}
		})
	}
}

// The server serves until SIGTERM or SIGINT, then stops cleanly and exits 0; with a
// go-zookeeper/zk-style zoo.cfg too.
func TestServerStopsOnSignal(t *testing.T) {
	tests := []struct {
		name string
		sig  syscall.Signal
		args func(t *testing.T, port int) []string
	}{
		{"flags, SIGTERM", syscall.SIGTERM, func(t *testing.T, port int) []string {
			return []string{"server", "--data-dir", t.TempDir(), "--admin-addr", "",
				"--client-addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		}},
		{"yaml, SIGINT", syscall.SIGINT, func(t *testing.T, port int) []string {
			yaml := fmt.Sprintf("server:\n  client_addr: 127.0.0.1:%d\n  data_dir: %s\n  admin_addr: \"\"\n",
				port, t.TempDir())
			return []string{"server", "--config", writeFile(t, "paddock.yaml", yaml)}
		}},
		{"zoo.cfg, SIGTERM", syscall.SIGTERM, func(t *testing.T, port int) []string {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "myid"), []byte("1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := fmt.Sprintf("admin.enableServer=false\ndataDir=%s\ntickTime=500\ninitLimit=10\n"+
				"syncLimit=5\nclientPort=%d\nclientPortAddress=127.0.0.1\nreconfigEnabled=true\n"+
				"4lw.commands.whitelist=*\n", dir, port)
			return []string{"server", "--zoo-cfg", writeFile(t, "zoo.cfg", cfg)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port, err := testutil.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			cmd := command(tt.args(t, port)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				cmd.Process.Kill() // if the test failed before it stopped
				<-exited
			})
			testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
				_, err := testutil.FourLetterWord(addr, "srvr", time.Second)
				return err == nil
			}, "paddock server never served on %s", addr)
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				exited <- err // for the cleanup
				if err != nil {
					t.Errorf("after %v: %v; stderr:\n%s", tt.sig, err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				exited <- <-exited // stderr is safe to read once the process is reaped
				t.Fatalf("still running 10s after %v; stderr:\n%s", tt.sig, stderr.String())
			}
		})
	}
}
