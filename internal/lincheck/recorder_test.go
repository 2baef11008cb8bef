package lincheck

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

// Workload of the live test: enough contention on few znodes for many bad versions.
const (
	liveClients  = 5
	liveDuration = 2 * time.Second
)

var livePaths = []string{"/lincheck-a", "/lincheck-b", "/lincheck-c"}

// TestLiveHistory records five clients racing CASes and sync-reads on three znodes of a
// real server, checks the history, and then shows that the check catches a stale read
// and a skipped version planted in that same history.
func TestLiveHistory(t *testing.T) {
	addr := testutil.StartPaddock(t, nil)
	init := createNodes(t, connect(t, addr))
	conns := make([]*zk.Conn, liveClients)
	for i := range conns {
		conns[i] = connect(t, addr)
	}
	rec := NewRecorder()
	runClients(t, rec, conns, time.Now().Add(liveDuration))
	ops := rec.Ops()
	if rec.Len() != len(ops) {
		t.Fatalf("Len %d, Ops %d", rec.Len(), len(ops))
	}

	res, err := rec.Check(init, checkTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if res.Verdict != Linearizable {
		res.KeepVisualization(t, testutil.ArtifactDir(t))
		t.Fatalf("live history: %s", res)
	}
	if res.CASApplied < 50 || res.CASBadVersion < 10 || res.Reads < 100 || res.Indefinite != 0 {
		t.Fatalf("workload too thin to mean much, or a healthy server left CASes indefinite: %s", res)
	}

	t.Run("stale read", func(t *testing.T) {
		i, stale := staleRead(t, init, ops)
		expectViolation(t, init, ops, i, func(op *Op) { op.Output.Value = stale })
	})
	t.Run("skipped version", func(t *testing.T) {
		i := lastOf(ops, func(op Op) bool { return op.Input.Kind == CAS && op.Output.Outcome == OK })
		expectViolation(t, init, ops, i, func(op *Op) { op.Output.Value.Version++ })
	})
	t.Run("lost write", func(t *testing.T) {
		// The last applied CAS on a znode claimed to have failed, though a later read saw it.
		i := lastOf(ops, func(op Op) bool {
			return op.Input.Kind == CAS && op.Output.Outcome == OK && readAfter(ops, op)
		})
		expectViolation(t, init, ops, i, func(op *Op) { op.Output = Output{Outcome: BadVersion} })
	})
}

// TestRecorderFailures shows what the Recorder keeps of failed operations: a CAS whose
// fate the client cannot know is Indefinite, a bad version is definite, and a failed read
// is left out.
func TestRecorderFailures(t *testing.T) {
	addr := testutil.StartPaddock(t, nil)
	init := createNodes(t, connect(t, addr))
	c := connect(t, addr)
	rec := NewRecorder()
	p := livePaths[0]
	if v, err := rec.CAS(0, c, p, []byte("first"), 0); err != nil || v != 1 {
		t.Fatalf("CAS at v0: version %d, %v", v, err)
	}
	if _, err := rec.CAS(0, c, p, []byte("second"), 0); OutcomeOf(err) != BadVersion || !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("CAS at a stale version: %v, want a bad version", err)
	}
	if data, v, err := rec.Read(0, c, p); err != nil || string(data) != "first" || v != 1 {
		t.Fatalf("read: %q@v%d, %v", data, v, err)
	}
	c.Close()
	if _, err := rec.CAS(0, c, p, []byte("third"), 1); OutcomeOf(err) != Indefinite {
		t.Fatalf("CAS on a closed connection: %v, want an indefinite outcome", err)
	}
	if _, _, err := rec.Read(0, c, p); err == nil {
		t.Fatal("read on a closed connection succeeded")
	}

	ops := rec.Ops()
	var kinds []string
	for _, op := range ops {
		kinds = append(kinds, describe(op.Input, op.Output))
	}
	want := []string{
		`cas /lincheck-a "first" if v0 -> ok v1`,
		`cas /lincheck-a "second" if v0 -> bad version`,
		`read /lincheck-a -> "first"@v1`,
		`cas /lincheck-a "third" if v1 -> ? (` + ops[len(ops)-1].Output.Err + ")",
	}
	if strings.Join(kinds, "\n") != strings.Join(want, "\n") {
		t.Fatalf("recorded:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	if ops[len(ops)-1].Output.Err == "" {
		t.Error("indefinite CAS recorded without its error")
	}
	res, err := rec.Check(init, checkTimeout)
	if err != nil || res.Verdict != Linearizable || res.Indefinite != 1 {
		t.Fatalf("%s, %v; want linearizable with one indefinite CAS", res, err)
	}
}

// connect opens a quiet session to addr and waits until it has one.
func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	testutil.Eventually(t, 10*time.Second, 2*time.Millisecond,
		func() bool { return c.State() == zk.StateHasSession }, "no session with %s", addr)
	return c
}

// quietLogger drops go-zookeeper/zk's connection chatter.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// createNodes creates livePaths and returns their initial values.
func createNodes(t *testing.T, c *zk.Conn) map[string]Value {
	t.Helper()
	init := make(map[string]Value)
	for _, p := range livePaths {
		if _, err := c.Create(p, []byte(p+"-initial"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
		init[p] = Value{Data: p + "-initial", Version: 0}
	}
	return init
}

// runClients has each connection, until deadline, pick a znode and either sync-read it
// or sync-read it and CAS it at the version read. A healthy server answers everything,
// so any error fails the test.
func runClients(t *testing.T, rec *Recorder, conns []*zk.Conn, deadline time.Time) {
	t.Helper()
	var wg sync.WaitGroup
	for client, c := range conns {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(client), uint64(time.Now().UnixNano())))
			for n := 0; time.Now().Before(deadline); n++ {
				p := livePaths[rng.IntN(len(livePaths))]
				_, version, err := rec.Read(client, c, p)
				if err == nil && rng.IntN(3) > 0 {
					_, err = rec.CAS(client, c, p, fmt.Appendf(nil, "c%d-%d", client, n), version)
				}
				if err != nil && !errors.Is(err, zk.ErrBadVersion) {
					t.Errorf("client %d: %v", client, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// staleRead finds a read of version v whose CAS to v returned before the read was
// called, and returns its index and the znode's value at v-1, which it overwrote.
func staleRead(t *testing.T, init map[string]Value, ops []Op) (int, Value) {
	t.Helper()
	type key struct {
		path    string
		version int32
	}
	wrote := make(map[key]Op) // the applied CAS that made each version
	for _, op := range ops {
		if op.Input.Kind == CAS && op.Output.Outcome == OK {
			wrote[key{op.Input.Path, op.Output.Value.Version}] = op
		}
	}
	for i, r := range ops {
		v := r.Output.Value.Version
		w, ok := wrote[key{r.Input.Path, v}]
		if r.Input.Kind != Read || !ok || w.Return >= r.Call {
			continue
		}
		if v-1 == init[r.Input.Path].Version {
			return i, init[r.Input.Path]
		}
		if prev, ok := wrote[key{r.Input.Path, v - 1}]; ok {
			return i, Value{Data: prev.Input.Data, Version: v - 1}
		}
	}
	t.Fatal("no read follows the CAS that wrote what it read")
	return 0, Value{}
}

// readAfter reports whether a read called after w returned saw w's version or a later one.
func readAfter(ops []Op, w Op) bool {
	for _, r := range ops {
		if r.Input.Kind == Read && r.Input.Path == w.Input.Path && r.Call > w.Return &&
			r.Output.Value.Version >= w.Output.Value.Version {
			return true
		}
	}
	return false
}

// lastOf returns the index of the last op that match accepts, and -1 if none does.
func lastOf(ops []Op, match func(Op) bool) int {
	for i := len(ops) - 1; i >= 0; i-- {
		if match(ops[i]) {
			return i
		}
	}
	return -1
}

// expectViolation checks a copy of ops with ops[i] changed by tamper and fails t unless
// the check finds a violation.
func expectViolation(t *testing.T, init map[string]Value, ops []Op, i int, tamper func(*Op)) {
	t.Helper()
	if i < 0 {
		t.Fatal("no operation to tamper with")
	}
	ops = append([]Op(nil), ops...)
	before := ops[i]
	tamper(&ops[i])
	res, err := Check(init, ops, checkTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Violation {
		res.KeepVisualization(t, testutil.ArtifactDir(t))
		t.Fatalf("%s after changing\n  %s\nto\n  %s", res, before, ops[i])
	}
}
