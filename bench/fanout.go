package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// runFanout runs the watch fan-out workload. cfg.Watchers sessions each hold one
// goroutine. A round: every watcher sets a data watch on root/watched (getData with
// watch), and once all are set a separate writer session changes the node; the round's
// latency is from just before that write until the last watcher has read its
// NodeDataChanged notification for the node. A round in which a watcher is not notified
// within cfg.RequestTimeout fails the run: notifications are counted, not assumed.
//
// The time includes the load generator reading cfg.Watchers sockets, on the same machine
// as the server: the per-notification latencies (Result.Notify) show how it spreads.
func runFanout(ctx context.Context, cfg Config) (*Result, error) {
	res := newResult(&cfg)
	writer, err := dial(ctx, cfg.addr(0), cfg.sessionOptions(4, 64<<10))
	if err != nil {
		return nil, err
	}
	defer writer.close(10 * time.Second)
	root := newRunRoot(&cfg)
	res.Root = root
	if err := createRoot(writer, cfg.Root, root); err != nil {
		return nil, err
	}
	f := &fanout{cfg: &cfg, writer: writer, watched: root + "/watched", target: root + "/watched", value: cfg.value()}
	if cfg.fanoutWritePath != "" {
		f.target = root + "/" + cfg.fanoutWritePath
	}
	made := []string{f.watched}
	if f.target != f.watched {
		made = append(made, f.target)
	}
	var setupErr error
	for _, p := range made {
		if code, err := create(writer, p); err != nil || code != wire.OK {
			setupErr = fmt.Errorf("bench: create %s: %v", p, errors.Join(err, codeErr(code)))
			break
		}
	}
	if setupErr == nil {
		setupErr = f.run(ctx, res)
	}
	if !cfg.Keep {
		for _, p := range made {
			remove(writer, p)
		}
		if err := removeRoot([]*worker{{s: writer}}, cfg.Root, root); err != nil {
			res.CleanupError = err.Error()
		}
	}
	if setupErr != nil {
		return nil, setupErr
	}
	return res, nil
}

// fanout is one fan-out run.
type fanout struct {
	cfg     *Config
	writer  *session
	watched string // the node the watchers watch
	target  string // the node the writer changes (watched, except in tests)
	value   []byte

	sessions []*session
	notifyAt []int64       // per watcher: nanotime of its notification in the current round
	failOnce sync.Once     // guards failure and closing failed
	failure  error         // the first watcher failure
	failed   chan struct{} // closed on the first watcher failure
}

// round is one notification round. The coordinator sets next and last, and resets the
// countdowns, before it closes start; watchers use them only after start is closed.
type round struct {
	start    chan struct{} // closed when the watchers are to set their watches
	last     bool          // no round: the watchers return
	next     *round
	armed    countdown // a watcher arrives when its watch is set
	notified countdown // a watcher arrives when it has its notification
}

// countdown is closed when n parties have arrived. Unlike a WaitGroup it can be waited
// on in a select, with no goroutine left behind when the wait gives up.
type countdown struct {
	n, arrived atomic.Int64
	done       chan struct{}
}

func (c *countdown) reset(n int) {
	c.n.Store(int64(n))
	c.arrived.Store(0)
	c.done = make(chan struct{})
}

func (c *countdown) arrive() {
	if c.arrived.Add(1) == c.n.Load() {
		close(c.done)
	}
}

func newRound() *round { return &round{start: make(chan struct{})} }

// run connects the watchers, runs the warm-up and measured rounds and closes the watchers.
func (f *fanout) run(ctx context.Context, res *Result) error {
	cfg := f.cfg
	sessions, err := dialMany(ctx, cfg, cfg.Watchers, cfg.sessionOptions(2, 512))
	if err != nil {
		return err
	}
	f.sessions = sessions
	defer closeSessions(sessions)
	f.notifyAt = make([]int64, len(sessions))
	f.failed = make(chan struct{})
	first := newRound()
	var watchers sync.WaitGroup
	for i, s := range sessions {
		watchers.Go(func() { f.watch(i, s, first) })
	}
	cur := first
	stopWatchers := func() {
		cur.last = true
		close(cur.start)
		watchers.Wait()
	}

	if cfg.Warmup > 0 {
		until := nanotime() + int64(cfg.Warmup)
		for nanotime() < until {
			if cur, err = f.round(ctx, cur, nil, nil); err != nil {
				return f.abort(err, &watchers)
			}
		}
	}
	hist, notify := NewHistogram(), NewHistogram()
	cfg.hook(true)
	defer cfg.hook(false)
	start := nanotime()
	var until int64
	if cfg.Ops == 0 {
		until = start + int64(cfg.Duration)
	}
	var rounds atomic.Int64
	stop := startProgress(cfg, "measure", start, func() (int64, int64) { return rounds.Load(), 0 })
	for n := int64(0); ; n++ {
		if (cfg.Ops > 0 && n >= cfg.Ops) || (until != 0 && nanotime() >= until) {
			break
		}
		if cur, err = f.round(ctx, cur, hist, notify); err != nil {
			stop()
			return f.abort(err, &watchers)
		}
		res.Ops++
		rounds.Add(1)
	}
	stop()
	res.Elapsed = time.Duration(nanotime() - start)
	stopWatchers()
	res.hist = hist
	ns := notify.Summary()
	res.Notify = &ns
	res.finish()
	return nil
}

// abort ends a failed run: it closes every watcher's connection, which ends their reads,
// and waits for the watchers to return.
func (f *fanout) abort(err error, watchers *sync.WaitGroup) error {
	for _, s := range f.sessions {
		s.abort()
	}
	f.fail(err) // release watchers waiting for a round
	watchers.Wait()
	return err
}

// round runs round r and returns the next one. With hist and notify it records the time
// until the last notification and the time until each.
func (f *fanout) round(ctx context.Context, r *round, hist, notify *Histogram) (*round, error) {
	n := len(f.sessions)
	r.next = newRound()
	r.armed.reset(n)
	r.notified.reset(n)
	close(r.start)
	if err := f.wait(ctx, &r.armed, "set their watches"); err != nil {
		return nil, err
	}
	// Write: the round's clock starts just before the setData is written.
	e := f.writer.begin(wire.OpSetData, -1)
	e.String(f.target)
	e.Buffer(f.value)
	e.Int(-1)
	f.writer.end()
	t0 := nanotime()
	if err := f.writer.flush(); err != nil {
		return nil, fmt.Errorf("bench: fanout write: %w", err)
	}
	if err := f.wait(ctx, &r.notified, "were notified"); err != nil {
		return nil, err
	}
	if code, err := f.writerReply(); err != nil || code != wire.OK {
		return nil, fmt.Errorf("bench: fanout setData %s: %v", f.target, errors.Join(err, codeErr(code)))
	}
	if hist != nil {
		var last int64
		for _, at := range f.notifyAt {
			notify.Record(at - t0)
			last = max(last, at)
		}
		hist.Record(last - t0)
	}
	return r.next, nil
}

// wait waits for c, a watcher failure, ctx or the request timeout, whichever comes first.
func (f *fanout) wait(ctx context.Context, c *countdown, what string) error {
	t := time.NewTimer(f.cfg.RequestTimeout)
	defer t.Stop()
	select {
	case <-c.done:
		return nil
	case <-f.failed:
		return fmt.Errorf("bench: fanout: a watcher failed: %w", f.failure)
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		if what == "were notified" {
			return fmt.Errorf("bench: fanout: only %d of %d watchers were notified within %v",
				c.arrived.Load(), len(f.sessions), f.cfg.RequestTimeout)
		}
		return fmt.Errorf("bench: fanout: the watchers did not all %s within %v", what, f.cfg.RequestTimeout)
	}
}

// writerReply reads the reply to the writer's setData.
func (f *fanout) writerReply() (wire.Code, error) {
	for {
		r, err := f.writer.next()
		if err != nil {
			return 0, err
		}
		if !r.notification {
			return r.hdr.Err, nil
		}
	}
}

// fail records the first watcher failure and releases everyone waiting for the watchers.
func (f *fanout) fail(err error) {
	f.failOnce.Do(func() {
		f.failure = err
		close(f.failed)
	})
}

// watch is watcher i's goroutine: for each round, set the watch, then read until the
// notification for the watched node arrives.
func (f *fanout) watch(i int, s *session, r *round) {
	path := []byte(f.watched)
	for {
		if !f.await(s, r) || r.last {
			return
		}
		if err := f.arm(s); err != nil {
			f.fail(fmt.Errorf("watcher %d (0x%x): set watch: %w", i, s.id, err))
			return
		}
		r.armed.arrive()
		for {
			n, err := s.next()
			if err != nil {
				f.fail(fmt.Errorf("watcher %d (0x%x): %w", i, s.id, err))
				return
			}
			if n.notification && isDataChanged(n.body, path) {
				f.notifyAt[i] = n.at
				r.notified.arrive()
				break
			}
		}
		r = r.next
	}
}

// await waits for r to start, pinging while it waits so that the session stays alive.
// It returns false if the run failed.
func (f *fanout) await(s *session, r *round) bool {
	t := time.NewTimer(time.Duration(s.pingEvery))
	defer t.Stop()
	for {
		select {
		case <-r.start:
			return true
		case <-f.failed:
			return false
		case <-t.C:
			if err := s.ping(nanotime()); err != nil {
				f.fail(err)
				return false
			}
			t.Reset(time.Duration(s.pingEvery))
		}
	}
}

// arm sets a data watch on the watched node with getData and waits for the reply.
func (f *fanout) arm(s *session) error {
	e := s.begin(wire.OpGetData, -1)
	e.String(f.watched)
	e.Bool(true)
	s.end()
	if err := s.flush(); err != nil {
		return err
	}
	for {
		r, err := s.next()
		if err != nil {
			return err
		}
		if r.notification {
			continue // a stale event: not this round's
		}
		if r.hdr.Err != wire.OK {
			return r.hdr.Err
		}
		return nil
	}
}

// isDataChanged reports whether a notification body (a WatcherEvent: int type, int
// state, ustring path) is NodeDataChanged for path.
func isDataChanged(body, path []byte) bool {
	if len(body) < 12 {
		return false
	}
	typ := wire.EventType(binary.BigEndian.Uint32(body))
	n := bodyInt(body[8:])
	return typ == wire.EventNodeDataChanged && int(n) == len(path) && len(body) >= 12+len(path) &&
		bytes.Equal(body[12:12+len(path)], path)
}
