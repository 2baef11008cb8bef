package bench

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// maxFailures caps the session failures a result lists one by one.
const maxFailures = 20

// runChurn runs the ephemeral churn workload: each of cfg.Sessions goroutines repeatedly
// opens a session, creates cfg.Ephemerals ephemeral znodes (cfg.Outstanding at a time)
// and closes the session. One op is one such lifecycle, timed from the dial to the
// closeSession reply. Afterwards the run's root must have no children left: the server
// deletes a session's ephemerals when it closes.
func runChurn(ctx context.Context, cfg Config) (*Result, error) {
	res := newResult(&cfg)
	control, err := dial(ctx, cfg.addr(0), cfg.sessionOptions(1, 64<<10))
	if err != nil {
		return nil, err
	}
	defer control.close(10 * time.Second)
	root := newRunRoot(&cfg)
	res.Root = root
	if err := createRoot(control, cfg.Root, root); err != nil {
		return nil, err
	}
	c := &churn{cfg: &cfg, prefix: []byte(root + "/"), value: cfg.value()}
	if cfg.Warmup > 0 {
		c.phase(ctx, "warm-up", math.MaxInt64, nanotime()+int64(cfg.Warmup), false)
	}
	end, until := int64(math.MaxInt64), int64(0)
	if cfg.Ops > 0 {
		end = c.next.Load() + cfg.Ops
	} else {
		until = nanotime() + int64(cfg.Duration)
	}
	cfg.hook(true)
	pr := c.phase(ctx, "measure", end, until, true)
	cfg.hook(false)
	res.addPhase(pr)
	res.hist = c.hist
	res.finish()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	var left int
	if len(cfg.addrs()) > 1 { // the closes on other members must be visible on this one
		err = settleWorkers([]*worker{{s: control}}, root)
	}
	if err == nil {
		left, err = childCount(control, root)
	}
	switch {
	case err != nil:
		res.CleanupError = err.Error()
	case left > 0:
		res.Errors += int64(left)
		res.ErrorCodes["ephemeral left after its session closed"] += int64(left)
	}
	if cfg.Keep {
		return res, nil
	}
	if err := removeRoot([]*worker{{s: control}}, cfg.Root, root); err != nil {
		res.CleanupError = err.Error()
	}
	return res, nil
}

// churn is the state shared by the churning goroutines.
type churn struct {
	cfg    *Config
	prefix []byte
	value  []byte
	next   atomic.Int64 // the next lifecycle index; lifecycle i creates prefix+[i×E, (i+1)×E)
	hist   *Histogram   // merged after the measured phase
}

// phase runs lifecycles with indices below end, until nanotime reaches until (if not 0).
func (c *churn) phase(ctx context.Context, name string, end, until int64, record bool) phaseResult {
	workers := make([]*worker, c.cfg.Sessions)
	var wg sync.WaitGroup
	start := nanotime()
	for i := range workers {
		w := &worker{hist: NewHistogram(), errs: map[string]int64{}}
		workers[i] = w
		wg.Go(func() { c.loop(ctx, w, end, until, record) })
	}
	stop := startProgress(c.cfg, name, start, func() (int64, int64) {
		var ok, bad int64
		for _, w := range workers {
			ok += w.done.Load()
			bad += w.nerr.Load()
		}
		return ok, bad
	})
	wg.Wait()
	stop()
	pr := phaseResult{elapsed: time.Duration(nanotime() - start), byError: map[string]int64{}}
	c.hist = NewHistogram()
	for _, w := range workers {
		pr.ok += w.done.Load()
		pr.errors += w.nerr.Load()
		for k, v := range w.errs {
			pr.byError[k] += v
		}
		c.hist.Merge(w.hist)
		if w.failure != nil {
			pr.failures = append(pr.failures, w.failure.Error())
		}
	}
	if len(pr.failures) > maxFailures {
		n := len(pr.failures)
		pr.failures = append(pr.failures[:maxFailures], fmt.Sprintf("... and %d more", n-maxFailures))
	}
	return pr
}

// loop runs one goroutine's lifecycles. A failed lifecycle is counted and the loop goes on.
func (c *churn) loop(ctx context.Context, w *worker, end, until int64, record bool) {
	perSession := int64(c.cfg.Ephemerals)
	var failed int64
	var first error
	defer func() {
		if first != nil {
			w.failure = fmt.Errorf("%d lifecycles failed, first: %w", failed, first)
		}
	}()
	for ctx.Err() == nil {
		if until != 0 && nanotime() >= until {
			return
		}
		i := c.next.Add(1) - 1
		if i >= end {
			return
		}
		start := nanotime()
		if err := c.lifecycle(ctx, c.cfg.addr(i), i*perSession, perSession); err != nil {
			if failed++; first == nil {
				first = err
			}
			w.errs["lifecycle failed"]++
			w.nerr.Add(1)
			continue
		}
		if record {
			w.hist.Record(nanotime() - start)
		}
		w.done.Add(1)
	}
}

// lifecycle opens a session to addr, creates n ephemerals prefix+[base, base+n) and closes it.
func (c *churn) lifecycle(ctx context.Context, addr string, base, n int64) error {
	s, err := dial(ctx, addr, c.cfg.sessionOptions(c.cfg.Outstanding, 4096))
	if err != nil {
		return err
	}
	var from atomic.Int64
	cw := &worker{s: s, errs: map[string]int64{}}
	cw.run(&phase{gen: &createGen{prefix: c.prefix, value: c.value, flags: wire.FlagEphemeral, base: base},
		next: &from, end: n, window: c.cfg.Outstanding})
	if cw.failure != nil {
		return cw.failure
	}
	if cw.nerr.Load() > 0 {
		s.close(10 * time.Second)
		return fmt.Errorf("bench: create ephemerals: %s", formatErrors(cw.errs))
	}
	return s.close(10 * time.Second)
}

// childCount returns the number of children of path.
func childCount(s *session, path string) (int, error) {
	s.begin(wire.OpGetChildren, -1)
	s.enc.String(path)
	s.enc.Bool(false)
	s.end()
	if err := s.flush(); err != nil {
		return 0, err
	}
	for {
		r, err := s.next()
		if err != nil {
			return 0, err
		}
		if r.notification {
			continue
		}
		if r.hdr.Err != wire.OK {
			return 0, fmt.Errorf("bench: getChildren %s: %w", path, r.hdr.Err)
		}
		return int(bodyInt(r.body)), nil
	}
}
