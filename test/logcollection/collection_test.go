// Package logcollection tests the log collection end to end: a paddock server and
// paddock logcollector processes tailing real files, killed with SIGKILL.
package logcollection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/logcollector"
	"github.com/paddock/paddock/server"
)

var paddock testutil.Binary

func TestMain(m *testing.M) { paddock.Main(m) }

const grace = 2 * time.Second

type rig struct {
	t      *testing.T
	addr   string
	dir    string
	s      *coordinator.Session
	admin  *logcollector.Admin
	layout logcollector.Layout
	procs  map[string]*testutil.Child
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, addr: testutil.StartPaddock(t, func(c *server.Config) { c.TickTime = 100 * time.Millisecond }),
		dir: t.TempDir(), procs: map[string]*testutil.Child{}}
	s, err := coordinator.Connect(context.Background(), coordinator.Config{Servers: []string{r.addr}, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.s, r.layout = s, mustLayout()
	r.admin = logcollector.NewAdmin(s, r.layout)
	return r
}

func mustLayout() logcollector.Layout { l, _ := logcollector.NewLayout("/"); return l }

// collector starts collector id on host (sources of that host only), sinking into
// sink-<id>.
func (r *rig) collector(id, host string) *testutil.Child {
	r.t.Helper()
	p, err := testutil.StartChild(r.t, filepath.Join(r.dir, id+"-"+fmt.Sprint(time.Now().UnixNano())+".log"), nil, paddock.Path(r.t),
		"logcollector", "--zk", r.addr, "--id", id, "--host", host, "--sink", filepath.Join(r.dir, "sink-"+id),
		"--grace", grace.String(), "--status-interval", "200ms", "--poll-interval", "50ms",
		"--session-timeout", "2s", "--log-level", "debug")
	if err != nil {
		r.t.Fatal(err)
	}
	r.procs[id] = p
	return p
}

// assignments reads every collector's assignment.
func (r *rig) assignments() map[string][]string {
	out := map[string][]string{}
	conn := r.s.Conn()
	cs, _, _ := conn.Children(r.layout.Collectors())
	for _, c := range cs {
		var a logcollector.Assignment
		if data, _, err := conn.Get(r.layout.Collector(c)); err == nil && json.Unmarshal(data, &a) == nil {
			out[c] = a.Sources
		}
	}
	return out
}

// balanced says the live collectors hold every source once, counts within one.
func balanced(a map[string][]string, live []string, sources int) bool {
	n, lo, hi := 0, sources, 0
	for _, c := range live {
		n += len(a[c])
		lo, hi = min(lo, len(a[c])), max(hi, len(a[c]))
	}
	for c, ss := range a {
		if !slices.Contains(live, c) && len(ss) > 0 {
			return false
		}
	}
	return n == sources && hi-lo <= 1
}

func owners(a map[string][]string) map[string]string {
	out := map[string]string{}
	for c, ss := range a {
		for _, s := range ss {
			out[s] = c
		}
	}
	return out
}

// writer appends numbered lines to each source's file; rotate renames a file away
// (the writer goes on in a new file at the same path).
type writer struct {
	mu    sync.Mutex
	paths map[string]string // source -> file
	lines map[string]int    // source -> lines written
}

func (w *writer) write(t *testing.T, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for src, p := range w.paths {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			fmt.Fprintf(f, "%s line %06d\n", src, w.lines[src])
			w.lines[src]++
		}
		f.Close()
	}
}

func (w *writer) rotate(t *testing.T, src string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := os.Rename(w.paths[src], w.paths[src]+".1"); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) tails() string {
	var b strings.Builder
	for h, p := range r.procs {
		fmt.Fprintf(&b, "--- %s:\n%s\n", h, p.LogTail(15))
	}
	return b.String()
}

// TestCollection: 20 sources over 3 collectors are balanced; a 4th joining moves
// only 5; a collector killed with SIGKILL loses its sources to the others within the
// grace period; the rebalancer's process killed, another takes over; every line
// written to every source, across the kills and a rotation, reaches a sink, and a
// line is shipped twice only from a source of the killed collector.
func TestCollection(t *testing.T) {
	r := newRig(t)
	w := &writer{paths: map[string]string{}, lines: map[string]int{}}
	var sources []string
	for i := range 20 {
		id := fmt.Sprintf("src%02d", i)
		p := filepath.Join(r.dir, "logs", id, "app.log")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		w.paths[id] = p
		if err := r.admin.AddSource(context.Background(), id, "localhost", filepath.Join(filepath.Dir(p), "*.log")); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, id)
	}
	w.write(t, 10)
	for _, h := range []string{"c1", "c2", "c3"} {
		r.collector(h, "localhost")
	}
	live := []string{"c1", "c2", "c3"}
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool { return balanced(r.assignments(), live, 20) },
		"20 sources balanced over 3 collectors: %v\n%s", r.assignments(), r.tails())
	before := owners(r.assignments())

	w.write(t, 10)
	r.collector("c4", "localhost")
	live = append(live, "c4")
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool { return balanced(r.assignments(), live, 20) },
		"rebalanced over 4: %v", r.assignments())
	after := owners(r.assignments())
	moved := 0
	for s, c := range after {
		if before[s] != c {
			moved++
		}
	}
	if moved != 5 {
		t.Errorf("the 4th collector made %d sources move, want 5 (20/4)", moved)
	}

	// Kill a collector that is not the rebalancer, mid-write, with a rotation.
	var rebal struct {
		ID string `json:"id"`
	}
	data, _, _ := r.s.Conn().Get(r.layout.Rebalancer())
	json.Unmarshal(data, &rebal)
	victim := "c2"
	if rebal.ID == victim {
		victim = "c3"
	}
	lostSources := r.assignments()[victim]
	w.write(t, 10)
	w.rotate(t, lostSources[0])
	w.write(t, 10)
	r.procs[victim].Kill()
	killed := time.Now()
	live = slices.DeleteFunc(slices.Clone(live), func(c string) bool { return c == victim })
	testutil.Eventually(t, grace+10*time.Second, 50*time.Millisecond, func() bool { return balanced(r.assignments(), live, 20) },
		"the killed collector's sources move: %v", r.assignments())
	if d := time.Since(killed); d > grace+3*time.Second {
		t.Errorf("sources moved %v after the kill, want within the grace period (%v) and a little", d, grace)
	}
	w.write(t, 10)

	// Kill the rebalancer; another takes over and assigns a new source.
	r.procs[rebal.ID].Kill()
	live = slices.DeleteFunc(slices.Clone(live), func(c string) bool { return c == rebal.ID })
	p := filepath.Join(r.dir, "logs", "src20", "app.log")
	os.MkdirAll(filepath.Dir(p), 0o755)
	w.mu.Lock()
	w.paths["src20"] = p
	w.mu.Unlock()
	if err := r.admin.AddSource(context.Background(), "src20", "localhost", filepath.Join(filepath.Dir(p), "*.log")); err != nil {
		t.Fatal(err)
	}
	w.write(t, 10)
	testutil.Eventually(t, grace+15*time.Second, 50*time.Millisecond, func() bool { return balanced(r.assignments(), live, 21) },
		"a new rebalancer spreads 21 sources over the survivors: %v\n%s", r.assignments(), r.tails())

	// Every line reaches a sink.
	var missing []string
	ok := testutil.WaitFor(20*time.Second, 100*time.Millisecond, func() bool {
		got := r.shipped()
		missing = missing[:0]
		for src, n := range w.lines {
			for i := range n {
				if line := fmt.Sprintf("%s line %06d", src, i); got[line] == 0 {
					missing = append(missing, line)
				}
			}
		}
		return len(missing) == 0
	})
	if !ok {
		t.Fatalf("%d lines never shipped, such as %v (killed: %s, rotated: %s)\n%s", len(missing),
			missing[:min(len(missing), 5)], victim, lostSources[0], r.tails())
	}
	// A line is shipped twice only by the owner after a killed collector, at or past
	// the offset the killed one had recorded for its file.
	recorded := map[string]map[uint64]int64{} // source -> inode -> offset, of the killed collectors
	for _, host := range []string{victim, rebal.ID} {
		var st logcollector.Status
		if data, _, err := r.s.Conn().Get(r.layout.Status(host)); err == nil && json.Unmarshal(data, &st) == nil {
			for src, ss := range st.Sources {
				for _, fo := range ss.Files {
					if recorded[src] == nil {
						recorded[src] = map[uint64]int64{}
					}
					recorded[src][fo.Inode] = max(recorded[src][fo.Inode], fo.Offset)
				}
			}
		}
	}
	for text, copies := range r.shippedLines() {
		if len(copies) < 2 {
			continue
		}
		l := copies[0]
		files, held := recorded[l.Source]
		if !held {
			t.Errorf("%q shipped %d times, from a source no killed collector held", text, len(copies))
			continue
		}
		if off, ok := files[l.Inode]; ok && l.Offset < off {
			t.Errorf("%q (offset %d in %s, inode %d) shipped %d times, before the killed collector's recorded offset %d",
				text, l.Offset, l.File, l.Inode, len(copies), off)
		}
	}
}

// shippedLines reads every sink: the records of each line text.
func (r *rig) shippedLines() map[string][]logcollector.Line {
	out := map[string][]logcollector.Line{}
	files, _ := filepath.Glob(filepath.Join(r.dir, "sink-*", "*.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			var l logcollector.Line
			if json.Unmarshal([]byte(line), &l) == nil {
				out[l.Text] = append(out[l.Text], l)
			}
		}
	}
	return out
}

// shipped counts each line text over every sink.
func (r *rig) shipped() map[string]int {
	out := map[string]int{}
	for text, copies := range r.shippedLines() {
		out[text] = len(copies)
	}
	return out
}

// TestSourceCLI: paddock logcollector source add, ls and rm; a bad source is refused.
func TestSourceCLI(t *testing.T) {
	r := newRig(t)
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(paddock.Path(t), append([]string{"logcollector", "source", "--zk", r.addr}, args...)...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}
	if _, errOut, code := run("add", "web", "--host", "h1", "--path", "relative/*.log"); code != 1 || !strings.Contains(errOut, "absolute") {
		t.Fatalf("relative path: exit %d, %q", code, errOut)
	}
	if _, errOut, code := run("add", "web", "--path", "/var/log/*.log"); code != 2 || !strings.Contains(errOut, "--host") {
		t.Fatalf("missing host: exit %d, %q", code, errOut)
	}
	if _, errOut, code := run("add", "web", "--host", "h1", "--path", "/var/log/web/*.log"); code != 0 {
		t.Fatalf("add: exit %d, %s", code, errOut)
	}
	if _, errOut, code := run("add", "web", "--host", "h1", "--path", "/x"); code != 1 || !strings.Contains(errOut, "exists") {
		t.Fatalf("add twice: exit %d, %q", code, errOut)
	}
	if out, _, code := run("ls"); code != 0 || !strings.Contains(out, "web") || !strings.Contains(out, "/var/log/web/*.log") {
		t.Fatalf("ls: exit %d:\n%s", code, out)
	}
	if _, errOut, code := run("rm", "web"); code != 0 {
		t.Fatalf("rm: exit %d, %s", code, errOut)
	}
	if out, _, _ := run("ls", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("ls after rm: %s", out)
	}
}
