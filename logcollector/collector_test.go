package logcollector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
)

// collectorEnv is a paddock server, a directory of log files, and a session through
// which the test plays the rebalancer and the admin.
type collectorEnv struct {
	t      *testing.T
	addr   string
	sess   *coordinator.Session
	layout Layout
	logs   string // the log files' directory
}

func newCollectorEnv(t *testing.T) *collectorEnv {
	t.Helper()
	addr := testutil.StartPaddock(t, nil)
	layout, _ := NewLayout("/")
	return &collectorEnv{t: t, addr: addr, sess: connectTest(t, addr), layout: layout, logs: t.TempDir()}
}

// connectTest opens a session to addr, closed when the test ends.
func connectTest(t *testing.T, addr string) *coordinator.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	sess, err := coordinator.Connect(ctx, coordinator.Config{
		Servers: []string{addr}, SessionTimeout: 2 * time.Second, Logger: testutil.TestLogger(),
	})
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// put sets path's data to v as JSON, creating it (and its parents) if missing.
func (e *collectorEnv) put(path string, v any) {
	e.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.sess.MakeDirs(context.Background(), filepath.Dir(path)); err != nil {
		e.t.Fatal(err)
	}
	for {
		_, err = e.sess.Conn().Set(path, data, -1)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = e.sess.Conn().Create(path, data, 0, e.sess.ACL())
		}
		if !errors.Is(err, zk.ErrNodeExists) { // created meanwhile: set it
			break
		}
	}
	if err != nil {
		e.t.Fatalf("put %s: %v", path, err)
	}
}

// addSource defines source id as the file <logs>/<id>.log on host "web-<id>".
func (e *collectorEnv) addSource(id string) string {
	e.t.Helper()
	path := filepath.Join(e.logs, id+".log")
	e.put(e.layout.Source(id), Source{Host: "web-" + id, Path: path})
	return path
}

func (e *collectorEnv) assign(host string, epoch int64, sources ...string) {
	e.t.Helper()
	if sources == nil {
		sources = []string{}
	}
	e.put(e.layout.Collector(host), Assignment{Epoch: epoch, Sources: sources})
}

// status reads host's status; ok is false if there is none.
func (e *collectorEnv) status(host string) (Status, bool) {
	e.t.Helper()
	data, _, err := e.sess.Conn().Get(e.layout.Status(host))
	if errors.Is(err, zk.ErrNoNode) {
		return Status{}, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	var st Status
	if err := json.Unmarshal(data, &st); err != nil {
		e.t.Fatalf("status of %s: %v", host, err)
	}
	return st, true
}

// waitEpoch waits until host's status shows it has taken in epoch.
func (e *collectorEnv) waitEpoch(host string, epoch int64) Status {
	e.t.Helper()
	var st Status
	testutil.Eventually(e.t, waitLong, tick, func() bool {
		var ok bool
		st, ok = e.status(host)
		return ok && st.Epoch == epoch
	}, "status of %s does not reach epoch %d", host, epoch)
	return st
}

// runningCollector is a collector under test.
type runningCollector struct {
	c      *Collector
	sink   string
	cancel context.CancelFunc
	done   chan error
}

// startCollector runs collector host, sinking into sinkDir, through its own session;
// it is stopped when the test ends if not before.
func (e *collectorEnv) startCollector(host, sinkDir string) *runningCollector {
	e.t.Helper()
	cfg := DefaultConfig()
	cfg.Servers, cfg.ID, cfg.Sink = []string{e.addr}, host, sinkDir
	cfg.StatusInterval, cfg.PollInterval = 50*time.Millisecond, testPoll
	c, err := NewCollector(cfg, connectTest(e.t, e.addr), testutil.TestLogger())
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := &runningCollector{c: c, sink: sinkDir, cancel: cancel, done: make(chan error, 1)}
	go func() { rc.done <- c.Run(ctx) }()
	e.t.Cleanup(func() { rc.stop(e.t) })
	return rc
}

// stop stops the collector and checks Run returned nil; a second stop does nothing.
func (rc *runningCollector) stop(t *testing.T) {
	t.Helper()
	if rc.cancel == nil {
		return
	}
	rc.cancel()
	rc.cancel = nil
	select {
	case err := <-rc.done:
		if err != nil {
			t.Errorf("collector %s: Run = %v, want nil after ctx ended", rc.c.ID(), err)
		}
	case <-time.After(waitLong):
		t.Fatalf("collector %s: Run did not return after ctx ended", rc.c.ID())
	}
}

// fileLines cuts a log file into the Lines its source should ship: every complete line
// at its offset.
func fileLines(t *testing.T, source, host, path string) []Line {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Line
	for off := 0; off < len(data); {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		out = append(out, Line{Source: source, File: path, Offset: int64(off), Host: host, Text: string(data[off : off+i])})
		off += i + 1
	}
	return out
}

// lineKey identifies a shipped line for comparison, leaving out its time.
func lineKey(l Line) string {
	return fmt.Sprintf("%s|%s|%d|%s|%s", l.Source, l.File, l.Offset, l.Host, l.Text)
}

func lineKeys(lines []Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = lineKey(l)
	}
	return out
}

// waitShipped waits until the sinks together hold exactly the lines of source's file,
// each once, in order within each sink.
func (e *collectorEnv) waitShipped(source string, sinks ...string) {
	e.t.Helper()
	path := filepath.Join(e.logs, source+".log")
	var got, want []string
	ok := testutil.WaitFor(waitLong, tick, func() bool {
		got = nil
		for _, dir := range sinks {
			got = append(got, lineKeys(readSinkFile(e.t, dir, source))...)
		}
		want = lineKeys(fileLines(e.t, source, "web-"+source, path))
		return slices.Equal(got, want)
	})
	if !ok {
		e.t.Fatalf("source %s: sinks hold\n%s\nwant\n%s", source, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// waitOffsetsAtSize waits until host's status shows source read to the end of its
// file under epoch.
func (e *collectorEnv) waitOffsetsAtSize(host, source string, epoch int64) {
	e.t.Helper()
	path := filepath.Join(e.logs, source+".log")
	var st Status
	testutil.Eventually(e.t, waitLong, tick, func() bool {
		st, _ = e.status(host)
		fi, err := os.Stat(path)
		if err != nil {
			e.t.Fatal(err)
		}
		ss := st.Sources[source]
		fo := ss.Files[path]
		return ss.Epoch == epoch && fo.Offset == fi.Size() && fo.Size == fi.Size() && fo.Inode == inodeOf(fi) && ss.LagBytes == 0
	}, "status of %s: %+v, want %s read to its size under epoch %d", host, st, source, epoch)
}

func TestCollectorFollowsAssignmentsAndHandsOff(t *testing.T) {
	e := newCollectorEnv(t)
	files := map[string]string{}
	for _, id := range []string{"s1", "s2", "s3"} {
		files[id] = e.addSource(id)
		appendFile(t, files[id], id+" existing line\n")
	}
	sink1, sink2 := t.TempDir(), t.TempDir()
	c1 := e.startCollector("c1", sink1)
	if c1.c.ID() != "c1" {
		t.Errorf("ID() = %s", c1.c.ID())
	}
	st := e.waitEpoch("c1", 0)
	if st.State != "running" || time.Since(st.Updated) > waitLong {
		t.Errorf("first status %+v, want running and fresh", st)
	}
	data, _, err := e.sess.Conn().Get(e.layout.Collector("c1"))
	if err != nil || string(data) != `{"epoch":0,"sources":[]}` {
		t.Errorf("registration %q, %v: want the empty assignment", data, err)
	}

	// Epoch 1: s1 and s2, existing lines and new ones.
	e.assign("c1", 1, "s1", "s2")
	appendFile(t, files["s1"], "s1 a\ns1 b\n")
	appendFile(t, files["s2"], "s2 a\n")
	e.waitShipped("s1", sink1)
	e.waitShipped("s2", sink1)
	e.waitOffsetsAtSize("c1", "s1", 1)
	e.waitOffsetsAtSize("c1", "s2", 1)
	if got := readSinkFile(t, sink1, "s3"); got != nil {
		t.Errorf("s3, not assigned, was shipped: %+v", got)
	}

	// Epoch 2: s1 goes; once the status says so, c1 reads it no more.
	e.assign("c1", 2, "s2", "s3")
	e.waitEpoch("c1", 2)
	appendFile(t, files["s1"], "s1 after c1 let go\n")
	appendFile(t, files["s2"], "s2 b\n")
	e.waitShipped("s3", sink1)
	e.waitShipped("s2", sink1)
	e.waitOffsetsAtSize("c1", "s3", 2)
	st, _ = e.status("c1")
	if ss := st.Sources["s1"]; ss.Epoch != 1 || ss.Files[files["s1"]].Offset != int64(len("s1 existing line\ns1 a\ns1 b\n")) {
		t.Errorf("c1's final entry for s1 = %+v, want epoch 1 at the offset it let go", ss)
	}

	// Epoch 3: c2 takes s1 over from where c1 left it: no line twice.
	c2 := e.startCollector("c2", sink2)
	e.assign("c2", 3, "s1")
	e.waitShipped("s1", sink1, sink2)
	e.waitOffsetsAtSize("c2", "s1", 3)
	if got := texts(readSinkFile(t, sink2, "s1")); !slices.Equal(got, []string{"s1 after c1 let go"}) {
		t.Errorf("c2 shipped %q of s1, want only the line after c1 let go", got)
	}

	// c1 stops and starts again: it resumes from its status.
	c1.stop(t)
	st, _ = e.status("c1")
	if st.State != "stopped" {
		t.Errorf("status after stop: state %q, want stopped", st.State)
	}
	appendFile(t, files["s2"], "s2 while c1 was down\n")
	appendFile(t, files["s3"], "s3 while c1 was down\n")
	e.startCollector("c1", sink1)
	e.waitShipped("s2", sink1)
	e.waitShipped("s3", sink1)
	e.waitOffsetsAtSize("c1", "s2", 2)
	if st, _ := e.status("c1"); st.State != "running" {
		t.Errorf("status after restart: state %q, want running", st.State)
	}
	e.waitShipped("s1", sink1, sink2) // and c1 did not take s1 up again
	c2.stop(t)
}

func TestCollectorSourceDefinedLate(t *testing.T) {
	e := newCollectorEnv(t)
	path := e.addSource("s1")
	appendFile(t, path, "one\n")
	sink := t.TempDir()
	e.startCollector("c1", sink)
	e.assign("c1", 1, "s1", "late", "bad/id")
	e.waitShipped("s1", sink)
	e.waitEpoch("c1", 1)
	late := e.addSource("late")
	appendFile(t, late, "late line\n")
	e.waitShipped("late", sink)
	e.waitOffsetsAtSize("c1", "late", 1)
}

func TestCollectorNodeRemovedIsRecreated(t *testing.T) {
	e := newCollectorEnv(t)
	sink := t.TempDir()
	e.startCollector("c1", sink)
	e.waitEpoch("c1", 0)
	conn := e.sess.Conn()
	if _, err := conn.Multi(&zk.DeleteRequest{Path: e.layout.Status("c1"), Version: -1},
		&zk.DeleteRequest{Path: e.layout.Session("c1"), Version: -1},
		&zk.DeleteRequest{Path: e.layout.Collector("c1"), Version: -1}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, waitLong, tick, func() bool {
		ok, _, err := conn.Exists(e.layout.Collector("c1"))
		return err == nil && ok
	}, "collector node not created again")
	path := e.addSource("s1")
	appendFile(t, path, "after\n")
	e.assign("c1", 5, "s1")
	e.waitShipped("s1", sink)
	e.waitOffsetsAtSize("c1", "s1", 5)
}

func TestCollectorResumeFromHighestEpoch(t *testing.T) {
	e := newCollectorEnv(t)
	path := e.addSource("s1")
	appendFile(t, path, "1\n2\n3\n")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(epoch, offset int64) SourceStatus {
		return SourceStatus{Epoch: epoch, Files: map[string]FileOffset{path: {Inode: inodeOf(fi), Offset: offset, Size: fi.Size()}}}
	}
	// Two dead collectors' statuses: the later epoch wins even with a smaller offset.
	e.put(e.layout.Status("old"), Status{State: "running", Epoch: 4, Sources: map[string]SourceStatus{"s1": entry(4, 6)}})
	e.put(e.layout.Status("newer"), Status{State: "running", Epoch: 7, Sources: map[string]SourceStatus{"s1": entry(7, 2)}})
	sink := t.TempDir()
	e.startCollector("c1", sink)
	e.assign("c1", 8, "s1")
	e.waitOffsetsAtSize("c1", "s1", 8)
	if got := texts(readSinkFile(t, sink, "s1")); !slices.Equal(got, []string{"2", "3"}) {
		t.Errorf("shipped %q, want the lines past the epoch-7 entry's offset", got)
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.Host = "c1"
	if err := good.Validate(); err != nil {
		t.Fatalf("defaults with a host: %v", err)
	}
	// The id defaults to the host, the host to the host name.
	if d := DefaultConfig().withDefaults(); d.Host == "" || d.ID != d.Host {
		t.Errorf("defaults: host %q, id %q: want the host name for both", d.Host, d.ID)
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no servers", func(c *Config) { c.Servers = nil }, "zk = "},
		{"bad server", func(c *Config) { c.Servers = []string{"nohost"} }, "zk = nohost"},
		{"short session", func(c *Config) { c.SessionTimeout = time.Millisecond }, "session_timeout = 1ms"},
		{"bad root", func(c *Config) { c.Root = "rel" }, "root = rel"},
		{"bad host", func(c *Config) { c.Host = "a/b" }, "host = a/b:"},
		{"bad id", func(c *Config) { c.ID = "-x" }, "id = -x:"},
		{"no sink", func(c *Config) { c.Sink = "" }, `sink = "":`},
		{"no status interval", func(c *Config) { c.StatusInterval = 0 }, "status_interval = 0s:"},
		{"no poll interval", func(c *Config) { c.PollInterval = -time.Second }, "poll_interval = -1s:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			tt.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestNewCollectorChecks(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Host = "a/b"
	if _, err := NewCollector(cfg, nil, nil); err == nil {
		t.Error("NewCollector with a bad host succeeded")
	}
	cfg.Host = "c1"
	if _, err := NewCollector(cfg, nil, nil); err == nil {
		t.Error("NewCollector without a session succeeded")
	}
}

func TestCollectorRunTwice(t *testing.T) {
	e := newCollectorEnv(t)
	rc := e.startCollector("c1", t.TempDir())
	e.waitEpoch("c1", 0)
	if err := rc.c.Run(context.Background()); err == nil {
		t.Error("second Run succeeded")
	}
}

func TestBestResume(t *testing.T) {
	f := func(off int64) map[string]FileOffset { return map[string]FileOffset{"/a": {Offset: off}} }
	statuses := map[string]Status{
		"x": {Sources: map[string]SourceStatus{"s": {Epoch: 2, Files: f(10)}}},
		"y": {Sources: map[string]SourceStatus{"s": {Epoch: 3, Files: f(5)}, "t": {Epoch: 1, Files: f(1)}}},
		"z": {Sources: map[string]SourceStatus{"s": {Epoch: 3, Files: f(7)}}},
	}
	if got, ok := bestResume(statuses, "s"); !ok || got.Epoch != 3 || got.Files["/a"].Offset != 7 {
		t.Errorf("bestResume(s) = %+v, %v: want epoch 3, the further of the two", got, ok)
	}
	if _, ok := bestResume(statuses, "none"); ok {
		t.Error("bestResume found a source no status has")
	}
}
