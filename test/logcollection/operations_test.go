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
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/logcollector"
)

// cli runs paddock logcollector SUBCOMMAND… against the rig's server: stdout, stderr
// and the exit status.
func (r *rig) cli(args ...string) (string, string, int) {
	r.t.Helper()
	args = append([]string{"logcollector", args[0], "--zk", r.addr}, args[1:]...)
	cmd := exec.Command(paddock.Path(r.t), args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errOut.String(), ee.ExitCode()
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

// sourceRow returns the line of paddock logcollector source ls about source id.
func (r *rig) sourceRow(id string) string {
	out, errOut, code := r.cli("source", "ls")
	if code != 0 {
		r.t.Fatalf("source ls: exit %d: %s", code, errOut)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == id {
			return line
		}
	}
	return ""
}

// collectorView reads collector id as paddock logcollector collector ls --json shows it.
func (r *rig) collectorView(id string) (logcollector.CollectorView, bool) {
	out, errOut, code := r.cli("collector", "ls", "--json")
	if code != 0 {
		r.t.Fatalf("collector ls: exit %d: %s", code, errOut)
	}
	var vs []logcollector.CollectorView
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		r.t.Fatalf("collector ls --json: %v: %s", err, out)
	}
	for _, v := range vs {
		if v.ID == id {
			return v, true
		}
	}
	return logcollector.CollectorView{}, false
}

// addSource adds source id of host, a *.log glob in dir/<host>/<id>, and returns the
// file the writer appends to.
func (r *rig) addSource(w *writer, id, host string) {
	r.t.Helper()
	p := filepath.Join(r.dir, host, id, "app.log")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	w.mu.Lock()
	w.paths[id] = p
	w.mu.Unlock()
	if err := r.admin.AddSource(context.Background(), id, host, filepath.Join(filepath.Dir(p), "*.log")); err != nil {
		r.t.Fatal(err)
	}
}

// sinkOf returns the collectors whose sink has lines of source id.
func (r *rig) sinkOf(id string) []string {
	var out []string
	files, _ := filepath.Glob(filepath.Join(r.dir, "sink-*", "*.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), `"source":"`+id+`"`) {
			c := strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "sink-")
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestSourcesStayOnTheirHost: two "hosts", each a collector process with its own host
// name and its own directory of sources. Each source is collected only by the
// collector of its host; a source of a host without a collector, and then host B's
// source once B's collector is killed, stay unplaced (never read from A's disk); a
// glob matching nothing is reported instead of a lag. collector ls shows the killed
// collector dead; rm refuses the live one and (without --force) the dead one holding
// B's last offsets, then removes it.
func TestSourcesStayOnTheirHost(t *testing.T) {
	r := newRig(t)
	w := &writer{paths: map[string]string{}, lines: map[string]int{}}
	r.addSource(w, "a-src", "host-a")
	r.addSource(w, "b-src", "host-b")
	r.addSource(w, "c-src", "host-c")
	if err := r.admin.AddSource(context.Background(), "a-empty", "host-a", filepath.Join(r.dir, "host-a", "nothing", "*.log")); err != nil {
		t.Fatal(err)
	}
	w.write(t, 5)
	r.collector("ca", "host-a")
	r.collector("cb", "host-b")
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		o := owners(r.assignments())
		return o["a-src"] == "ca" && o["a-empty"] == "ca" && o["b-src"] == "cb" && o["c-src"] == ""
	}, "sources on the collectors of their hosts: %v\n%s", r.assignments(), r.tails())
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		return slices.Equal(r.sinkOf("a-src"), []string{"ca"}) && slices.Equal(r.sinkOf("b-src"), []string{"cb"})
	}, "a-src shipped by ca only (%v), b-src by cb only (%v)", r.sinkOf("a-src"), r.sinkOf("b-src"))
	if got := r.sinkOf("c-src"); len(got) != 0 {
		t.Errorf("c-src, of a host without a collector, read by %v", got)
	}
	if row := r.sourceRow("c-src"); !strings.Contains(row, "unplaced: no collector on host host-c") {
		t.Errorf("source ls, c-src: %q, want it unplaced", row)
	}
	testutil.Eventually(t, 10*time.Second, 100*time.Millisecond, func() bool {
		row := r.sourceRow("a-empty")
		return strings.Contains(row, "no file matches") && !strings.Contains(row, " 0 ")
	}, "source ls, a-empty: %q, want no file matches instead of a lag", r.sourceRow("a-empty"))

	// Kill host B's collector: its source is not moved to A.
	r.procs["cb"].Kill()
	testutil.Eventually(t, grace+10*time.Second, 100*time.Millisecond, func() bool {
		v, ok := r.collectorView("cb")
		return ok && !v.Live && v.State == logcollector.StateDead
	}, "the killed collector shows dead: %+v", fmt.Sprint(r.collectorView("cb")))
	testutil.Eventually(t, grace+10*time.Second, 100*time.Millisecond, func() bool {
		return strings.Contains(r.sourceRow("b-src"), "unplaced: no collector on host host-b")
	}, "b-src unplaced after its collector died: %q", r.sourceRow("b-src"))
	w.write(t, 5)
	time.Sleep(2 * grace) // long enough for a wrong move to A to show
	if o := owners(r.assignments()); o["b-src"] != "" {
		t.Errorf("b-src assigned to %s after host B's collector died", o["b-src"])
	}
	if got := r.sinkOf("b-src"); !slices.Equal(got, []string{"cb"}) {
		t.Errorf("b-src shipped by %v, want cb only", got)
	}

	// rm: the live one refused, naming it; the dead one first refused, it holds B's
	// last offsets; with --force removed.
	if _, errOut, code := r.cli("collector", "rm", "ca"); code != 1 || !strings.Contains(errOut, "ca") || !strings.Contains(errOut, "live") {
		t.Errorf("rm of the live collector: exit %d, %q", code, errOut)
	}
	if _, errOut, code := r.cli("collector", "rm", "cb"); code != 1 || !strings.Contains(errOut, "b-src") {
		t.Errorf("rm of the dead collector holding b-src's offsets: exit %d, %q", code, errOut)
	}
	if _, errOut, code := r.cli("collector", "rm", "cb", "--force"); code != 0 {
		t.Errorf("rm --force of the dead collector: exit %d, %q", code, errOut)
	}
	if _, ok := r.collectorView("cb"); ok {
		t.Error("cb still listed after rm")
	}
	if _, errOut, code := r.cli("collector", "rm", "nosuch"); code != 1 || !strings.Contains(errOut, "nosuch") {
		t.Errorf("rm of an unknown collector: exit %d, %q", code, errOut)
	}
	// Host B gets a collector again: b-src is read there (from the start, --force).
	r.collector("cb2", "host-b")
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		return slices.Contains(r.sinkOf("b-src"), "cb2")
	}, "b-src read by host B's new collector: %v\n%s", r.assignments(), r.tails())
}

// TestDrain: two collectors on one host share four sources; drained from the CLI, one
// hands its sources over to the other (the two-step way: no line shipped twice, none
// lost), says drained and gets nothing new; undrained, it gets its share again.
func TestDrain(t *testing.T) {
	r := newRig(t)
	w := &writer{paths: map[string]string{}, lines: map[string]int{}}
	for i := range 4 {
		r.addSource(w, fmt.Sprintf("s%d", i), "h")
	}
	w.write(t, 10)
	r.collector("c1", "h")
	r.collector("c2", "h")
	live := []string{"c1", "c2"}
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool { return balanced(r.assignments(), live, 4) },
		"balanced: %v\n%s", r.assignments(), r.tails())
	w.write(t, 10)
	if out, errOut, code := r.cli("collector", "drain", "c1"); code != 0 || !strings.Contains(out, "c1 drained") {
		t.Fatalf("drain: exit %d, %q %q", code, out, errOut)
	}
	w.write(t, 10)
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		a := r.assignments()
		v, _ := r.collectorView("c1")
		return len(a["c1"]) == 0 && len(a["c2"]) == 4 && v.State == "drained" && v.Drained && v.Live
	}, "c1 drained, c2 holds every source: %v", r.assignments())
	r.addSource(w, "s4", "h")
	w.write(t, 10)
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool { return len(r.assignments()["c2"]) == 5 },
		"a new source goes to c2, not to the drained c1: %v", r.assignments())
	if _, errOut, code := r.cli("collector", "drain", "nosuch"); code != 1 || !strings.Contains(errOut, "nosuch") {
		t.Errorf("drain of an unknown collector: exit %d, %q", code, errOut)
	}

	if _, errOut, code := r.cli("collector", "undrain", "c1"); code != 0 {
		t.Fatalf("undrain: exit %d, %q", code, errOut)
	}
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool { return balanced(r.assignments(), live, 5) },
		"undrained, c1 gets its share: %v", r.assignments())
	w.write(t, 10)
	var missing, twice []string
	ok := testutil.WaitFor(20*time.Second, 100*time.Millisecond, func() bool {
		got := r.shipped()
		missing, twice = missing[:0], twice[:0]
		for src, n := range w.lines {
			for i := range n {
				line := fmt.Sprintf("%s line %06d", src, i)
				switch got[line] {
				case 0:
					missing = append(missing, line)
				case 1:
				default:
					twice = append(twice, line)
				}
			}
		}
		return len(missing) == 0
	})
	if !ok {
		t.Errorf("%d lines never shipped, such as %v\n%s", len(missing), missing[:min(5, len(missing))], r.tails())
	}
	if len(twice) > 0 {
		t.Errorf("%d lines shipped twice across clean handovers, such as %v", len(twice), twice[:min(5, len(twice))])
	}
}

// TestCollectorIDHeld: a second process with the id of a live collector is refused at
// once, naming the holder; after the holder is killed, a new one with its id waits for
// the dead session to expire (at most a session timeout) and runs.
func TestCollectorIDHeld(t *testing.T) {
	r := newRig(t)
	first := r.collector("c1", "h")
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool { v, _ := r.collectorView("c1"); return v.Live && v.State == "running" },
		"c1 live\n%s", r.tails())
	dup := r.collector("c1", "h")
	select {
	case <-dup.Exited():
	case <-time.After(20 * time.Second):
		t.Fatalf("the second c1 still runs\n%s", dup.LogTail(10))
	}
	if dup.ExitErr() == nil {
		t.Error("the second c1 exited 0")
	}
	log := dup.LogTail(10)
	if !strings.Contains(log, "c1 is held by the collector on host h, pid "+fmt.Sprint(first.PID())) || !strings.Contains(log, "alive") {
		t.Errorf("the refusal does not name the holder (pid %d):\n%s", first.PID(), log)
	}
	first.Kill()
	again := r.collector("c1", "h")
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		v, _ := r.collectorView("c1")
		return v.Live && strings.Contains(v.Holder, fmt.Sprintf("pid %d", again.PID()))
	}, "c1 restarted after the kill runs\n%s", again.LogTail(10))
}
