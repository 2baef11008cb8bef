package web

import (
	"context"
	"sync"
	"time"
)

// refresher caches the answer of a read through the console's session and refreshes
// it in the background, one read at a time. A go-zookeeper call waits, whatever its
// context, while the session is disconnected; callers of get wait at most the given
// time and then take the last answer, so a page that shows the read answers while the
// session is down, and the one read stuck in flight ends when the session comes back
// or is closed. It is safe for concurrent use.
type refresher[T any] struct {
	ttl  time.Duration // how long an answer is reused
	read func(context.Context) (T, error)

	mu      sync.Mutex
	val     T             // the last answer; guarded by mu
	err     error         // its error; guarded by mu
	at      time.Time     // when it was read; zero before the first; guarded by mu
	running chan struct{} // closed when the read in flight ends; nil when none; guarded by mu
}

// get returns the last answer if it is younger than ttl; otherwise it starts a read
// (unless one is in flight) and waits for it at most wait or until ctx ends. ok is
// false when no read has finished yet.
func (r *refresher[T]) get(ctx context.Context, wait time.Duration) (val T, err error, at time.Time) {
	r.mu.Lock()
	if !r.at.IsZero() && time.Since(r.at) < r.ttl {
		defer r.mu.Unlock()
		return r.val, r.err, r.at
	}
	if r.running == nil {
		done := make(chan struct{})
		r.running = done
		go func() {
			defer close(done)
			v, err := r.read(context.Background())
			r.mu.Lock()
			r.val, r.err, r.at, r.running = v, err, time.Now(), nil
			r.mu.Unlock()
		}()
	}
	running := r.running
	r.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-running:
	case <-t.C:
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.val, r.err, r.at
}
