package testutil

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ProcTree is a shell script for a task whose first process starts three that a kill
// of it alone leaves running — one in a session of its own (setsid), one that ignores
// SIGTERM, one orphaned by a double fork — and writes into the directory $D their pids
// and its own (files ProcTreeNames) and its uid (file uid); then it runs end ("wait"
// to run until killed, "exit 0" to end and leave them).
func ProcTree(end string) string {
	return `put() { echo "$2" > "$D/$1.tmp" && mv "$D/$1.tmp" "$D/$1"; }
put uid "$(id -u)"
put leader $$
setsid sleep 300 & put setsid $!
sh -c 'trap "" TERM; echo $$ > "$D/deaf.tmp" && mv "$D/deaf.tmp" "$D/deaf"; exec sleep 300' &
(sleep 300 & put orphan $!)
while [ ! -e "$D/deaf" ]; do sleep 0.01; done
` + end
}

// ProcTreeNames are the processes ProcTree writes the pids of, first process first.
var ProcTreeNames = []string{"leader", "setsid", "deaf", "orphan"}

// ReadProcTree waits for what ProcTree writes in dir: the pids by name, and "uid".
func ReadProcTree(tb testing.TB, dir string) map[string]int {
	tb.Helper()
	got := map[string]int{}
	for _, name := range append(slices.Clone(ProcTreeNames), "uid") {
		path := filepath.Join(dir, name)
		Eventually(tb, 20*time.Second, 10*time.Millisecond, func() bool {
			data, err := os.ReadFile(path)
			n, err2 := strconv.Atoi(strings.TrimSpace(string(data)))
			got[name] = n
			return err == nil && err2 == nil
		}, "no %s in %s", name, dir)
	}
	return got
}

// OpenTempDir returns a directory any user may write (mode 0777), in the system's
// temporary directory, removed when the test ends: for a task run as another user
// (nobody), which cannot enter t.TempDir's, whose parent is the test user's alone.
func OpenTempDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "paddock-open-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// ProcessAlive reports whether pid is a process that has not ended: in /proc and not
// a zombie (an orphan whose init does not reap stays one).
func ProcessAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(data, ')') // the command name before it may hold anything
	if err != nil || i < 0 || i+2 >= len(data) {
		return false
	}
	return data[i+2] != 'Z' && data[i+2] != 'X'
}

// ProcessesWithEnv lists the live processes whose environment holds the entry
// NAME=value. Another user's environment is readable by root only.
func ProcessesWithEnv(entry string) []int {
	names, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, dir := range names {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || !ProcessAlive(pid) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join(dir, "environ"))
		if slices.ContainsFunc(bytes.Split(env, []byte{0}), func(kv []byte) bool { return string(kv) == entry }) {
			out = append(out, pid)
		}
	}
	return out
}
