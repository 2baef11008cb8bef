package web

import (
	"context"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// watchHub shares one ZooKeeper watch per watched thing among every event stream
// that follows it. The client keeps a watch registered until it fires, so a watch per
// stream would pile up on a quiet node with every page load; shared, at most one is
// left behind per thing once its last stream has gone.
type watchHub struct {
	arm    func(watchSpec) (<-chan zk.Event, error)
	stop   <-chan struct{} // closed when the console stops
	logger interface {
		Debug(msg string, args ...any)
	}

	mu      sync.Mutex
	entries map[watchSpec]*hubEntry
}

// hubEntry is one shared watch and its subscribers. Each subscriber's channel has
// room for one event: an event means "changed, read again", so one pending is as good
// as several.
type hubEntry struct {
	subs   map[chan zk.Event]struct{}
	cancel context.CancelFunc
}

// subscribe returns a channel of w's events, arming the watch if no stream follows w
// yet, and the function that ends the subscription.
func (h *watchHub) subscribe(w watchSpec) (<-chan zk.Event, func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[w]
	if e == nil {
		first, err := h.arm(w)
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		e = &hubEntry{subs: map[chan zk.Event]struct{}{}, cancel: cancel}
		h.entries[w] = e
		go h.loop(ctx, w, e, first)
	}
	ch := make(chan zk.Event, 1)
	e.subs[ch] = struct{}{}
	return ch, func() { h.unsubscribe(w, e, ch) }, nil
}

func (h *watchHub) unsubscribe(w watchSpec, e *hubEntry, ch chan zk.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(e.subs, ch)
	if len(e.subs) == 0 && h.entries[w] == e {
		delete(h.entries, w)
		e.cancel()
	}
}

// loop hands each event of w's watch to the subscribers and re-arms the watch (which
// reads the watched state, so a change made in between fires the next event), until
// the last subscriber has gone or the console stops.
func (h *watchHub) loop(ctx context.Context, w watchSpec, e *hubEntry, ch <-chan zk.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.stop:
			return
		case ev := <-ch:
			if ev.Type != zk.EventNotWatching { // NotWatching: the session closed or expired
				h.broadcast(e, ev)
			}
		}
		for {
			var err error
			if ch, err = h.arm(w); err == nil {
				break
			}
			h.logger.Debug("arm watch", "path", w.path, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-h.stop:
				return
			case <-time.After(rearmBackoff):
			}
		}
	}
}

func (h *watchHub) broadcast(e *hubEntry, ev zk.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range e.subs {
		select {
		case ch <- ev:
		default: // one is pending already
		}
	}
}

// following returns how many things have a shared watch (for tests).
func (h *watchHub) following() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}
