package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestQueueExactlyOnce: 3 producers put 50 items each while 3 consumers take, all on
// their own Sessions: every item is delivered once, none is lost, and each consumer
// gets each producer's items in the order they were put.
func TestQueueExactlyOnce(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		const producers, perProducer, consumers = 3, 50, 3
		const total = producers * perProducer
		s := connect(t, addr)
		dir := testRoot(t, s) + "/jobs/queue"

		var mu sync.Mutex
		seen := make(map[string]int) // item -> consumer that took it
		var dupes []string
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		var wg sync.WaitGroup
		errs := make(chan error, producers+consumers)
		report := func(err error) {
			select {
			case errs <- err:
			default: // one is enough to fail the test
			}
		}
		for c := range consumers {
			q := NewQueue(connect(t, addr), dir)
			wg.Go(func() {
				last := make(map[int]int) // producer -> last item number taken
				for {
					data, err := q.Take(ctx)
					if errors.Is(err, context.Canceled) {
						return
					}
					if err != nil {
						report(fmt.Errorf("consumer %d: %w", c, err))
						return
					}
					var p, i int
					if _, err := fmt.Sscanf(string(data), "p%d-%d", &p, &i); err != nil {
						report(fmt.Errorf("consumer %d: item %q: %w", c, data, err))
						return
					}
					if prev, ok := last[p]; ok && i <= prev {
						report(fmt.Errorf("consumer %d took %s after p%d-%d", c, data, p, prev))
					}
					last[p] = i
					mu.Lock()
					if _, dup := seen[string(data)]; dup {
						dupes = append(dupes, string(data))
					}
					seen[string(data)] = c
					if len(seen) == total {
						cancel()
					}
					mu.Unlock()
				}
			})
		}
		for p := range producers {
			q := NewQueue(connect(t, addr), dir)
			wg.Go(func() {
				for i := range perProducer {
					if _, err := q.Put(ctx, fmt.Appendf(nil, "p%d-%d", p, i)); err != nil {
						report(fmt.Errorf("producer %d: %w", p, err))
						return
					}
				}
			})
		}
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		select {
		case <-finished:
		case err := <-errs:
			cancel()
			t.Fatal(err)
		case <-time.After(20 * time.Second):
			cancel()
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("after 20s %d of %d items delivered", len(seen), total)
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if len(dupes) > 0 {
			t.Errorf("items delivered twice: %v", dupes)
		}
		if len(seen) != total {
			t.Errorf("%d of %d items delivered", len(seen), total)
		}
		if n, err := NewQueue(s, dir).Len(ctxT(t)); err != nil || n != 0 {
			t.Errorf("Len after draining = %d, %v", n, err)
		}
	})
}

// TestQueueFIFOAndEmpty: on a queue that does not exist yet, TryTake reports empty and
// Len 0; a single consumer gets the items in the order they were put, paths increasing;
// TryTake on the drained queue reports empty again.
func TestQueueFIFOAndEmpty(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		s := connect(t, addr)
		q := NewQueue(s, testRoot(t, s)+"/q")
		ctx := ctxT(t)
		if data, ok, err := q.TryTake(ctx); data != nil || ok || err != nil {
			t.Fatalf("TryTake on a missing queue = %q, %v, %v", data, ok, err)
		}
		if n, err := q.Len(ctx); n != 0 || err != nil {
			t.Fatalf("Len of a missing queue = %d, %v", n, err)
		}
		const items = 20
		var prev string
		for i := range items {
			p, err := q.Put(ctx, []byte(strconv.Itoa(i)))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p, q.Dir()+"/q-") || p <= prev {
				t.Fatalf("Put %d made %s, after %s", i, p, prev)
			}
			prev = p
		}
		if n, err := q.Len(ctx); n != items || err != nil {
			t.Fatalf("Len = %d, %v; want %d", n, err, items)
		}
		for i := range items {
			var data []byte
			var err error
			if i%2 == 0 {
				data, err = q.Take(ctx)
			} else {
				var ok bool
				data, ok, err = q.TryTake(ctx)
				if !ok && err == nil {
					t.Fatalf("TryTake %d: empty", i)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != strconv.Itoa(i) {
				t.Fatalf("item %d is %q, want %d", i, data, i)
			}
		}
		if data, ok, err := q.TryTake(ctx); data != nil || ok || err != nil {
			t.Fatalf("TryTake on an empty queue = %q, %v, %v", data, ok, err)
		}
	})
}

// TestQueueTakeBlocks: Take on an empty queue blocks until another Session puts an
// item, and returns that item; on a queue that stays empty it returns ctx's error.
func TestQueueTakeBlocks(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		s := connect(t, addr)
		dir := testRoot(t, s) + "/q"
		q := NewQueue(s, dir)
		type result struct {
			data []byte
			err  error
		}
		done := make(chan result, 1)
		ctx := ctxT(t)
		go func() {
			data, err := q.Take(ctx)
			done <- result{data, err}
		}()
		barrierQuiet(t, done, 300*time.Millisecond, "Take on an empty queue")
		if _, err := NewQueue(connect(t, addr), dir).Put(ctx, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if r := barrierRecv(t, done, "Take after a Put"); r.err != nil || string(r.data) != "hello" {
			t.Fatalf("Take = %q, %v", r.data, r.err)
		}

		short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if data, err := q.Take(short); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("Take on an empty queue past its deadline = %q, %v", data, err)
		}
	})
}
