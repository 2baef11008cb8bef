package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// barrierQuiet fails the test if anything arrives on ch within d: what is waited for
// must still be blocked.
func barrierQuiet[T any](t *testing.T, ch <-chan T, d time.Duration, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s returned early (%v)", what, v)
	case <-time.After(d):
	}
}

// barrierRecv returns the next value on ch, failing the test after 10 s.
func barrierRecv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing within 10s", what)
	}
	var zero T
	return zero
}

// TestBarrierReleasesWaiters: waiters on other Sessions block while the barrier is set
// and all return, without error, once it is removed; Set and Remove are idempotent and
// Set creates the parents.
func TestBarrierReleasesWaiters(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		s := connect(t, addr)
		root := testRoot(t, s)
		b := NewBarrier(s, root+"/jobs/nightly/hold")
		for range 2 {
			if err := b.Set(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		}
		const waiters = 3
		done := make(chan error, waiters)
		ctx := ctxT(t)
		for range waiters {
			w := NewBarrier(connect(t, addr), b.Path())
			go func() { done <- w.Wait(ctx) }()
		}
		barrierQuiet(t, done, 300*time.Millisecond, "Wait on a set barrier")
		start := time.Now()
		for range 2 {
			if err := b.Remove(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range waiters {
			if err := barrierRecv(t, done, fmt.Sprintf("waiter %d after Remove", i)); err != nil {
				t.Errorf("Wait = %v", err)
			}
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("waiters took %v to notice the removal", d)
		}
	})
}

// TestBarrierWaitAbsentAndTimeout: Wait on a barrier never set returns at once; on a
// set barrier it returns ctx's error, naming the barrier, when ctx ends.
func TestBarrierWaitAbsentAndTimeout(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		s := connect(t, addr)
		root := testRoot(t, s)
		b := NewBarrier(s, root+"/b")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Wait(ctx); err != nil {
			t.Fatalf("Wait on an absent barrier = %v", err)
		}
		if err := b.Set(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := b.Wait(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), b.Path()) {
			t.Fatalf("Wait past the deadline = %v, want DeadlineExceeded naming %s", err, b.Path())
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Wait took %v to notice its deadline", d)
		}
	})
}

// barrierCutWaiter returns the barrier at the test's root, set, and a waiter on it
// through a Session whose connection the test can cut.
func barrierCutWaiter(t *testing.T, addr string) (b, w *Barrier, ws *Session, cut *testutil.Cutter) {
	t.Helper()
	admin := connect(t, addr)
	b = NewBarrier(admin, testRoot(t, admin)+"/b")
	if err := b.Set(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	cut = testutil.NewCutter()
	ws = connect(t, addr, cuttable(cut))
	return b, NewBarrier(ws, b.Path()), ws, cut
}

// TestBarrierWaitSurvivesCut: a waiter whose connection is cut while the barrier is
// removed returns once it is reconnected.
func TestBarrierWaitSurvivesCut(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		b, w, _, cut := barrierCutWaiter(t, addr)
		done := make(chan error, 1)
		ctx := ctxT(t)
		go func() { done <- w.Wait(ctx) }()
		barrierQuiet(t, done, 200*time.Millisecond, "Wait on a set barrier")
		cut.Cut()
		if err := b.Remove(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		barrierQuiet(t, done, 100*time.Millisecond, "Wait while cut off")
		cut.Restore()
		if err := barrierRecv(t, done, "Wait after reconnecting"); err != nil {
			t.Fatalf("Wait = %v", err)
		}
	})
}

// TestBarrierWaitSurvivesExpiry: a waiter whose session expires re-arms its watch under
// the new session, keeps waiting, and returns when the barrier is removed.
func TestBarrierWaitSurvivesExpiry(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		b, w, ws, cut := barrierCutWaiter(t, addr)
		done := make(chan error, 1)
		ctx := ctxT(t)
		go func() { done <- w.Wait(ctx) }()
		barrierQuiet(t, done, 200*time.Millisecond, "Wait on a set barrier")
		expire(t, ws, cut)
		barrierQuiet(t, done, 200*time.Millisecond, "Wait after an expiry, barrier still set")
		if err := b.Remove(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if err := barrierRecv(t, done, "Wait after the expiry and the removal"); err != nil {
			t.Fatalf("Wait = %v", err)
		}
	})
}

// doubleBarrierResult is what a participant saw when Enter or Leave returned.
type doubleBarrierResult struct {
	who   int
	count int64 // how many had called Enter (or Leave) by then
	err   error
}

// TestDoubleBarrierRounds: N participants on their own Sessions, threshold N. No one
// returns from Enter before all N have called it, and no one from Leave before all N
// have called it, whatever the order (last in and last out: the highest, the lowest, a
// middle one); the barrier is reused for three rounds and left empty.
func TestDoubleBarrierRounds(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		const n = 4
		s := connect(t, addr)
		root := testRoot(t, s)
		dir := root + "/barrier"
		parts := make([]*DoubleBarrier, n)
		for i := range parts {
			parts[i] = NewDoubleBarrier(connect(t, addr), dir, fmt.Sprintf("p%d", i), n)
		}
		// run calls op (Enter or Leave) for every participant but last, checks that
		// none returns, then calls it for last and checks what each one saw.
		run := func(what string, last int, op func(*DoubleBarrier, context.Context) error) {
			t.Helper()
			var count atomic.Int64
			ctx := ctxT(t)
			results := make(chan doubleBarrierResult, n)
			start := func(i int) {
				count.Add(1)
				go func() {
					err := op(parts[i], ctx)
					results <- doubleBarrierResult{i, count.Load(), err}
				}()
			}
			for i := range n {
				if i != last {
					start(i)
				}
			}
			barrierQuiet(t, results, 300*time.Millisecond, fmt.Sprintf("%s with %d of %d", what, n-1, n))
			start(last)
			for range n {
				r := barrierRecv(t, results, what)
				if r.err != nil {
					t.Fatalf("p%d: %s = %v", r.who, what, r.err)
				}
				if r.count != n {
					t.Errorf("p%d returned from %s when %d of %d had called it", r.who, what, r.count, n)
				}
			}
		}
		for round, last := range [][2]int{{n - 1, 1}, {0, 0}, {2, n - 1}} {
			run(fmt.Sprintf("round %d Enter", round), last[0], (*DoubleBarrier).Enter)
			run(fmt.Sprintf("round %d Leave", round), last[1], (*DoubleBarrier).Leave)
		}
		children, _, err := s.Conn().Children(dir)
		if err != nil || len(children) != 0 {
			t.Errorf("after the last round %s holds %v (err %v), want nothing", dir, children, err)
		}
	})
}

// TestDoubleBarrierEnterTimeout: a participant alone with threshold 2 gets ctx's error
// and leaves no node behind; a barrier whose ready node outlived every participant
// (they all died inside) is reset by the next Enter instead of letting it through.
func TestDoubleBarrierEnterTimeout(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		s := connect(t, addr)
		root := testRoot(t, s)
		dir := root + "/barrier"
		b := NewDoubleBarrier(s, dir, "alone", 2)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err := b.Enter(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("Enter alone = %v, want DeadlineExceeded naming %s", err, dir)
		}
		children, _, err := s.Conn().Children(dir)
		if err != nil || len(children) != 0 {
			t.Fatalf("after the timeout %s holds %v (err %v), want nothing", dir, children, err)
		}

		// A stale ready node: Enter must still wait for a second participant.
		if _, err := s.Conn().Create(dir+"/ready", nil, 0, s.ACL()); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		ctx = ctxT(t)
		go func() { done <- b.Enter(ctx) }()
		barrierQuiet(t, done, 300*time.Millisecond, "Enter alone past a stale ready node")
		other := NewDoubleBarrier(connect(t, addr), dir, "other", 2)
		if err := other.Enter(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if err := barrierRecv(t, done, "Enter with the second participant in"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDoubleBarrierInvalid: bad arguments are reported by Enter and Leave, each named.
func TestDoubleBarrierInvalid(t *testing.T) {
	for _, c := range []struct {
		dir, name string
		threshold int
		want      string
	}{
		{"/b", "p1", 0, "threshold 0"},
		{"/b", "", 2, "empty node name"},
		{"/b", "a/b", 2, `"a/b"`},
		{"/b", "ready", 2, `"ready" is reserved`},
		{"/b", "x\x01", 2, "invalid character"},
		{"b", "p1", 2, `dir "b"`},
	} {
		d := NewDoubleBarrier(nil, c.dir, c.name, c.threshold)
		for op, f := range map[string]func(context.Context) error{"Enter": d.Enter, "Leave": d.Leave} {
			if err := f(context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s on (%q, %q, %d) = %v, want an error with %q", op, c.dir, c.name, c.threshold, err, c.want)
			}
		}
	}
}
