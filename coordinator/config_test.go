package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// TestConfigSetNeverMixed: one writer writes version i to all five keys, i = 1..N, while
// readers loop on Read; no read ever returns keys of different versions, each reader's
// versions only go up, and the readers keep up (the writer waits for one of them to see
// each version before writing the next, so a reader that never gets through fails it).
func TestConfigSetNeverMixed(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		const (
			keys    = 5
			readers = 3
			n       = 25
		)
		ws := connect(t, addr)
		dir := testRoot(t, ws) + "/cfg"
		writer := NewConfigSet(ws, dir)
		ctx := ctxT(t)

		if err := writer.Write(ctx, map[string][]byte{ConfigReadyKey: nil}); err == nil {
			t.Error("Write accepted the reserved key")
		}
		if err := writer.Write(ctx, map[string][]byte{"a/b": nil}); err == nil {
			t.Error("Write accepted a key with a slash")
		}

		write := func(i int) {
			values := make(map[string][]byte, keys)
			for k := range keys {
				values["k"+strconv.Itoa(k)] = []byte(strconv.Itoa(i))
			}
			if err := writer.Write(ctx, values); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		write(0)

		var (
			seen  atomic.Int64 // highest version any reader returned
			reads [readers]atomic.Int64
			stop  = make(chan struct{})
			wg    sync.WaitGroup
			errs  = make(chan error, readers)
		)
		for r := range readers {
			cs := NewConfigSet(connect(t, addr), dir)
			wg.Add(1)
			go func() {
				defer wg.Done()
				last := -1
				for {
					select {
					case <-stop:
						return
					default:
					}
					values, err := cs.Read(ctx)
					if err != nil {
						errs <- fmt.Errorf("reader %d: %w", r, err)
						return
					}
					v, err := sameVersion(values, keys)
					if err != nil {
						errs <- fmt.Errorf("reader %d, read %d: %w", r, reads[r].Load(), err)
						return
					}
					if v < last {
						errs <- fmt.Errorf("reader %d: version %d after %d", r, v, last)
						return
					}
					last = v
					reads[r].Add(1)
					for cur := seen.Load(); int64(v) > cur; cur = seen.Load() {
						if seen.CompareAndSwap(cur, int64(v)) {
							break
						}
					}
				}
			}()
		}
		for i := 1; i <= n; i++ {
			write(i)
			if !testutil.WaitFor(5*time.Second, time.Millisecond, func() bool { return seen.Load() >= int64(i) || len(errs) > 0 }) {
				t.Fatalf("no reader returned version %d within 5s", i)
			}
			if len(errs) > 0 {
				break
			}
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for r := range readers {
			if reads[r].Load() == 0 {
				t.Errorf("reader %d never completed a read", r)
			}
		}
		t.Logf("reads per reader: %d %d %d", reads[0].Load(), reads[1].Load(), reads[2].Load())
	})
}

// sameVersion checks a read holds want keys with one value, and returns it.
func sameVersion(values map[string][]byte, want int) (int, error) {
	if len(values) != want {
		return 0, fmt.Errorf("%d keys, want %d: %q", len(values), want, values)
	}
	v := -1
	for k, data := range values {
		n, err := strconv.Atoi(string(data))
		if err != nil {
			return 0, fmt.Errorf("key %s = %q", k, data)
		}
		if v >= 0 && n != v {
			return 0, fmt.Errorf("mixed versions: %q", values)
		}
		v = n
	}
	return v, nil
}

// TestConfigSetReadWaitsForReady: a Read before any Write waits for the first complete
// write, and a Read never sees keys written without the flag.
func TestConfigSetReadWaitsForReady(t *testing.T) {
	addr := paddockBackend.addr(t)
	s := connect(t, addr)
	dir := testRoot(t, s) + "/cfg"
	cs := NewConfigSet(s, dir)
	done := make(chan map[string][]byte, 1)
	reader := NewConfigSet(connect(t, addr), dir)
	ctx := ctxT(t)
	go func() {
		values, err := reader.Read(ctx)
		if err != nil {
			t.Errorf("Read: %v", err)
		}
		done <- values
	}()
	// A key written by hand, without the flag, must not be returned on its own.
	if err := s.MakeDirs(ctxT(t), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conn().Create(dir+"/half", []byte("x"), 0, s.ACL()); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-done:
		t.Fatalf("Read returned %q before the ready flag existed", v)
	case <-time.After(200 * time.Millisecond):
	}
	if err := cs.Write(ctxT(t), map[string][]byte{"a": []byte("1"), "b": []byte("2")}); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-done:
		if string(v["a"]) != "1" || string(v["b"]) != "2" || string(v["half"]) != "x" || len(v) != 3 {
			t.Errorf("Read = %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read still waiting after the write")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewConfigSet(s, dir+"-none").Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a cancelled ctx = %v", err)
	}
}

// recvValue returns the next value from a watch, failing after 10 s.
func recvValue[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no value within 10s")
	}
	var zero T
	return zero
}

// waitValue reads values from a watch until one satisfies ok, failing after 10 s.
func waitValue[T any](t *testing.T, ch <-chan T, ok func(T) bool, what string) T {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var last T
	for {
		select {
		case v, open := <-ch:
			if !open {
				t.Fatalf("watch channel closed waiting for %s (last %v)", what, last)
			}
			if ok(v) {
				return v
			}
			last = v
		case <-deadline:
			t.Fatalf("no %s within 10s (last %v)", what, last)
		}
	}
}

// TestConfigNodeWatch: the watch sends nil for a missing node, then values; after a burst
// of sets it ends on the last one; it survives a forced expiry and reports the change
// made while its session was cut off; it closes when ctx ends.
func TestConfigNodeWatch(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		cut := testutil.NewCutter()
		s := connect(t, addr, cuttable(cut))
		other := connect(t, addr)
		p := testRoot(t, s) + "/app/config"
		cn := NewConfigNode(s, p)
		writer := NewConfigNode(other, p)
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()

		if v, err := cn.Get(ctx); err != nil || v != nil {
			t.Fatalf("Get of a missing node = %q, %v; want nil, nil", v, err)
		}
		w := cn.Watch(ctx)
		if v := recvValue(t, w); v != nil {
			t.Fatalf("first value %q, want nil (no node)", v)
		}
		if err := writer.Set(ctx, []byte("v0")); err != nil {
			t.Fatal(err)
		}
		if v := recvValue(t, w); string(v) != "v0" {
			t.Fatalf("after the first set: %q, want v0", v)
		}
		for i := 1; i <= 30; i++ {
			if err := writer.Set(ctx, []byte(fmt.Sprintf("v%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		waitValue(t, w, func(v []byte) bool { return string(v) == "v30" }, "the last value of the burst")
		if v, err := cn.Get(ctx); err != nil || string(v) != "v30" {
			t.Errorf("Get = %q, %v", v, err)
		}

		// Cut off, the value changes, then the session expires.
		cut.Cut()
		if err := writer.Set(ctx, []byte("while-cut")); err != nil {
			t.Fatal(err)
		}
		expire(t, s, cut)
		waitValue(t, w, func(v []byte) bool { return string(v) == "while-cut" }, "the value set while cut off")
		// And it keeps watching under the new session.
		if err := other.Conn().Delete(p, -1); err != nil {
			t.Fatal(err)
		}
		if v := recvValue(t, w); v != nil {
			t.Fatalf("after the delete: %q, want nil", v)
		}
		if err := writer.Set(ctx, []byte("after")); err != nil {
			t.Fatal(err)
		}
		if v := recvValue(t, w); string(v) != "after" {
			t.Fatalf("after the expiry: %q, want after", v)
		}

		cancel()
		testutil.Eventually(t, 5*time.Second, 5*time.Millisecond, func() bool {
			select {
			case _, ok := <-w:
				return !ok
			default:
				return false
			}
		}, "watch channel not closed after ctx ended")
	})
}

// TestConfigNodeWatchClosesWithSession: closing the Session closes the watch.
func TestConfigNodeWatchClosesWithSession(t *testing.T) {
	s := connect(t, paddockBackend.addr(t))
	w := NewConfigNode(s, testRoot(t, s)+"/c").Watch(ctxT(t))
	recvValue(t, w)
	s.Close()
	select {
	case _, ok := <-w:
		if ok {
			t.Error("a value after the Session closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch not closed after the Session closed")
	}
}
