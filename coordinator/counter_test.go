package coordinator

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
)

// TestCounterConcurrentAdd: 8 Sessions add 1 fifty times each, concurrently, to a
// counter that does not exist yet: it ends at exactly 400, and every Add returned a
// different value (each saw its own write).
func TestCounterConcurrentAdd(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		const sessions, adds = 8, 50
		s := connect(t, addr)
		p := testRoot(t, s) + "/stats/done"
		ctx := ctxT(t)
		var mu sync.Mutex
		got := make(map[int64]bool)
		var wg sync.WaitGroup
		errs := make(chan error, sessions)
		for range sessions {
			c := NewCounter(connect(t, addr), p)
			wg.Go(func() {
				for range adds {
					n, err := c.Add(ctx, 1)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					if got[n] {
						errs <- fmt.Errorf("Add returned %d twice", n)
						mu.Unlock()
						return
					}
					got[n] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if n, err := NewCounter(s, p).Get(ctx); err != nil || n != sessions*adds {
			t.Fatalf("Get = %d, %v; want %d", n, err, sessions*adds)
		}
		for i := int64(1); i <= sessions*adds; i++ {
			if !got[i] {
				t.Fatalf("no Add returned %d", i)
			}
		}
	})
}

// TestCounterValues: a missing counter reads 0; Set and negative Adds work and are
// stored as decimal ASCII; an Add past int64 fails and changes nothing; a node holding
// something else makes Get and Add fail, naming the node and what it holds.
func TestCounterValues(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		s := connect(t, addr)
		root := testRoot(t, s)
		ctx := ctxT(t)
		c := NewCounter(s, root+"/a/b/n")
		if n, err := c.Get(ctx); n != 0 || err != nil {
			t.Fatalf("Get of a missing counter = %d, %v", n, err)
		}
		if err := c.Set(ctx, 40); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Add(ctx, -50); n != -10 || err != nil {
			t.Fatalf("Add(-50) = %d, %v; want -10", n, err)
		}
		if data, _, err := s.Conn().Get(c.Path()); err != nil || string(data) != "-10" {
			t.Fatalf("node holds %q (%v), want -10", data, err)
		}
		if err := c.Set(ctx, math.MaxInt64); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Add(ctx, 1); err == nil || !strings.Contains(err.Error(), "overflow") {
			t.Fatalf("Add past MaxInt64 = %v", err)
		}
		if n, err := c.Get(ctx); n != math.MaxInt64 || err != nil {
			t.Fatalf("Get after a failed Add = %d, %v", n, err)
		}

		bad := NewCounter(s, root+"/bad")
		if _, err := s.Conn().Create(bad.Path(), []byte("twelve"), 0, s.ACL()); err != nil {
			t.Fatal(err)
		}
		_, addErr := bad.Add(ctx, 1)
		_, getErr := bad.Get(ctx)
		for op, err := range map[string]error{"Add": addErr, "Get": getErr} {
			if err == nil || !strings.Contains(err.Error(), bad.Path()) || !strings.Contains(err.Error(), `"twelve"`) {
				t.Errorf("%s on a node holding \"twelve\" = %v, want an error naming %s and the value", op, err, bad.Path())
			}
			if errors.Is(err, ErrOutcomeUnknown) {
				t.Errorf("%s: %v is not an unknown outcome", op, err)
			}
		}
		if data, _, err := s.Conn().Get(bad.Path()); err != nil || string(data) != "twelve" {
			t.Errorf("the bad node now holds %q (%v)", data, err)
		}
	})
}
