package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// Config describes one load-generator run against one server or one ensemble. It is not
// changed by Run.
type Config struct {
	// Addr is the server's client address, host:port, or the client addresses of an
	// ensemble's members separated by commas, as in a ZooKeeper connect string (without a
	// chroot): the sessions connect to them round-robin, session i to address i mod n, and
	// write to whichever member they are connected to, which forwards writes to its leader.
	// After preparing, a run against several members has each session write (setData)
	// the run's root: the reply means its member has applied every write before, so
	// that reads on any member find what the other members' sessions prepared. (A sync
	// did not do: ZooKeeper 3.8 members were seen to answer getData with no node for
	// znodes whose creation was acknowledged before the session's sync.)
	Addr string
	// Workload is one of Workloads.
	Workload string
	// Sessions is the number of concurrent sessions (TCP connections) issuing requests.
	Sessions int
	// Outstanding is the most requests each session has in flight (its pipeline depth).
	Outstanding int
	// ValueSize is the size in bytes of the data each created or set znode holds.
	ValueSize int
	// Ops, if positive, is the number of measured operations: requests for most
	// workloads, session lifecycles for churn, notification rounds for fanout. Otherwise
	// the measurement lasts Duration. The delete workload needs Ops.
	Ops int64
	// Duration is how long the measurement lasts when Ops is 0.
	Duration time.Duration
	// Warmup is how long the workload runs, unmeasured, before the measurement.
	Warmup time.Duration
	// Watchers is the number of watching sessions of the fanout workload.
	Watchers int
	// Nodes is the number of znodes set, get, exists, children and mixed prepare and cycle through.
	Nodes int
	// Ephemerals is the number of ephemeral znodes each churn session creates.
	Ephemerals int
	// Root is the parent of every run's own root, Root/<workload>-<unique suffix>. Runs
	// remove their own root when done; Root itself is removed if it is then empty.
	Root string
	// Keep leaves the run's znodes in place (to measure a server holding them).
	Keep bool
	// SessionTimeout is the session timeout asked for; idle sessions ping at a third of it.
	SessionTimeout time.Duration
	// RequestTimeout ends a session whose oldest request has waited this long, and bounds
	// each fanout round.
	RequestTimeout time.Duration
	// Progress, if not nil, gets a line every ProgressEvery while a phase runs.
	Progress      io.Writer
	ProgressEvery time.Duration

	// measureHook, if not nil, is called just before the measured phase starts (true) and
	// just after it ends (false), for the side-by-side driver to sample CPU times.
	measureHook func(begin bool)
	// timeline keeps every measured request's completion time and latency in
	// Result.samples, for a driver that splits them by what the server was doing
	// meanwhile. It costs an append per reply, so only the drivers that need it set it.
	timeline bool
	// fanoutWritePath, for tests, makes the fanout writer change this node (relative to
	// the run's root) instead of the watched one, so that no watch fires.
	fanoutWritePath string
}

// DefaultConfig returns the defaults of `paddock bench`: 16 sessions × 4 outstanding
// requests (64 in flight), 100-byte values, 10 s of get.
func DefaultConfig() Config {
	return Config{
		Addr:           "127.0.0.1:2181",
		Workload:       WorkloadGet,
		Sessions:       16,
		Outstanding:    4,
		ValueSize:      100,
		Duration:       10 * time.Second,
		Watchers:       1000,
		Nodes:          1000,
		Ephemerals:     10,
		Root:           "/paddock-bench",
		SessionTimeout: 30 * time.Second,
		RequestTimeout: 30 * time.Second,
		ProgressEvery:  2 * time.Second,
	}
}

// Validate checks every field and names the first bad one.
func (c *Config) Validate() error {
	var errs []error
	bad := func(flag string, value any, allowed string) {
		errs = append(errs, fmt.Errorf("--%s %v: %s", flag, value, allowed))
	}
	for _, a := range c.addrs() {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			bad("zk", c.Addr, "want host:port, or host:port,host:port,... of an ensemble's members")
			break
		}
	}
	if !slices.Contains(Workloads, c.Workload) {
		bad("workload", c.Workload, "want one of "+strings.Join(Workloads, ", "))
	}
	if c.Sessions < 1 {
		bad("sessions", c.Sessions, "want at least 1")
	}
	if c.Outstanding < 1 || c.Outstanding > 1<<16 {
		bad("outstanding", c.Outstanding, "want 1 to 65536")
	}
	if c.ValueSize < 0 || c.ValueSize > wire.DefaultMaxBuffer-1024 {
		bad("value-size", c.ValueSize, fmt.Sprintf("want 0 to %d bytes", wire.DefaultMaxBuffer-1024))
	}
	if c.Ops < 0 {
		bad("ops", c.Ops, "want 0 (use --duration) or more")
	}
	if c.Ops == 0 && c.Duration <= 0 {
		bad("duration", c.Duration, "want a positive duration, or --ops")
	}
	if c.Ops == 0 && c.Workload == WorkloadDelete {
		bad("ops", c.Ops, "the delete workload needs --ops: it deletes that many prepared znodes")
	}
	if c.Warmup < 0 {
		bad("warmup", c.Warmup, "want 0 or more")
	}
	if c.Workload == WorkloadFanout && c.Watchers < 1 {
		bad("watchers", c.Watchers, "want at least 1")
	}
	if c.Nodes < 1 {
		bad("nodes", c.Nodes, "want at least 1")
	}
	if c.Workload == WorkloadChurn && c.Ephemerals < 0 {
		bad("ephemerals", c.Ephemerals, "want 0 or more")
	}
	if !strings.HasPrefix(c.Root, "/") || c.Root == "/" || strings.HasSuffix(c.Root, "/") ||
		strings.Contains(c.Root, "//") || c.Root == "/zookeeper" || strings.HasPrefix(c.Root, "/zookeeper/") {
		bad("root", c.Root, "want an absolute znode path other than / and /zookeeper, without a trailing /")
	}
	if c.SessionTimeout < 100*time.Millisecond {
		bad("session-timeout", c.SessionTimeout, "want at least 100ms")
	}
	if c.RequestTimeout <= 0 {
		bad("request-timeout", c.RequestTimeout, "want a positive duration")
	}
	return errors.Join(errs...)
}

// addrs returns the addresses of Addr, blanks around the commas trimmed.
func (c *Config) addrs() []string {
	addrs := strings.Split(c.Addr, ",")
	for i, a := range addrs {
		addrs[i] = strings.TrimSpace(a)
	}
	return addrs
}

// addr returns the address that session (or churn lifecycle) i connects to.
func (c *Config) addr(i int64) string {
	addrs := c.addrs()
	return addrs[i%int64(len(addrs))]
}

func (c *Config) hook(begin bool) {
	if c.measureHook != nil {
		c.measureHook(begin)
	}
}

// prepareWindow is the pipeline depth of the unmeasured phases (preparation, clean-up).
const prepareWindow = 64

// Run runs the workload of cfg against cfg.Addr and returns what it measured. An error
// means the run could not be set up or prepared (or its context ended); a session that
// fails during the measurement is reported in Result.Failures instead, and the other
// sessions go on.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch cfg.Workload {
	case WorkloadChurn:
		return runChurn(ctx, cfg)
	case WorkloadFanout:
		return runFanout(ctx, cfg)
	}
	return runOps(ctx, cfg)
}

// runID makes each run's root unique: runs against one server never share znodes.
var runID atomic.Int64

func newRunRoot(cfg *Config) string {
	return fmt.Sprintf("%s/%s-%s-%d", cfg.Root, cfg.Workload,
		strconv.FormatInt(time.Now().UnixNano(), 36), runID.Add(1))
}

func (c Config) sessionOptions(window, readBuf int) sessionOptions {
	return sessionOptions{Timeout: c.SessionTimeout, RequestTimeout: c.RequestTimeout,
		DialTimeout: 10 * time.Second, Window: window, ReadBuffer: readBuf}
}

// value returns the data of created and set znodes: ValueSize bytes, never nil (nil
// would create a znode with null data, which getData returns as length -1).
func (c *Config) value() []byte {
	v := make([]byte, c.ValueSize)
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
	return v
}

// worker drives one session through the phases of a run.
type worker struct {
	s       *session
	hist    *Histogram       // measured latencies of successful requests
	done    atomic.Int64     // successful requests in the current phase
	nerr    atomic.Int64     // failed requests in the current phase
	errs    map[string]int64 // failed requests in the current phase, by error
	failure error            // why the session ended, if it did
	// samples are the measured requests of a phase with timeline set, in the order
	// their replies came.
	samples []latencySample
}

// latencySample is one measured request: when its reply was read and how long it took,
// in nanotime nanoseconds.
type latencySample struct{ at, latency int64 }

// timelineOf returns the samples the workers kept, in the order of their replies'
// arrival, or nil if they kept none.
func timelineOf(workers []*worker) []latencySample {
	var out []latencySample
	for _, w := range workers {
		out = append(out, w.samples...)
	}
	slices.SortFunc(out, func(a, b latencySample) int { return cmp.Compare(a.at, b.at) })
	return out
}

// phase is one pass of a generator over a range of op indices on every live worker.
type phase struct {
	name   string
	gen    generator
	next   *atomic.Int64 // the next op index to hand out
	end    int64         // op indices stop here (exclusive)
	until  int64         // nanotime after which no op is issued; 0: no limit
	window int
	record bool
	// stop, if not nil, ends the phase once set, like until.
	stop *atomic.Bool
	// timeline keeps each recorded request in worker.samples besides the histogram.
	timeline bool
}

// run issues ops of p until the range or the time is used up, and returns when every
// reply is in or the session fails.
func (w *worker) run(p *phase) {
	s := w.s
	stopping := false
	for {
		if !stopping && s.inFlight() < p.window {
			if p.until != 0 && nanotime() >= p.until || p.stop != nil && p.stop.Load() {
				stopping = true
			}
			for !stopping && s.inFlight() < p.window {
				i := p.next.Add(1) - 1
				if i >= p.end {
					stopping = true
					break
				}
				p.gen.issue(s, i)
			}
		}
		if s.pending() {
			if err := s.flush(); err != nil {
				w.fail(err)
				return
			}
		}
		if s.inFlight() == 0 {
			return
		}
		r, err := s.next()
		for err == nil {
			w.handle(p, r)
			var ok bool
			if r, ok, err = s.buffered(); !ok {
				break
			}
		}
		if err != nil {
			w.fail(err)
			return
		}
	}
}

// handle accounts for one reply.
func (w *worker) handle(p *phase, r reply) {
	if r.notification {
		return // no workload of this kind sets watches
	}
	switch {
	case r.hdr.Err != wire.OK && !p.gen.tolerate(r.hdr.Err):
		w.errs[r.hdr.Err.String()]++
		w.nerr.Add(1)
	case r.hdr.Err == wire.OK && !p.gen.check(r.req, r.body):
		w.errs["bad reply"]++
		w.nerr.Add(1)
	default:
		if p.record {
			w.hist.Record(r.at - r.req.start)
			if p.timeline {
				w.samples = append(w.samples, latencySample{at: r.at, latency: r.at - r.req.start})
			}
		}
		w.done.Add(1)
	}
}

// fail ends the worker's session: its requests in flight count as lost.
func (w *worker) fail(err error) {
	w.failure = err
	if n := w.s.inFlight(); n > 0 {
		w.errs["lost in flight"] += int64(n)
		w.nerr.Add(int64(n))
	}
	w.s.abort()
}

// phaseResult is what a phase did, over all workers.
type phaseResult struct {
	ok       int64
	errors   int64
	byError  map[string]int64
	failures []string
	elapsed  time.Duration
}

func (pr phaseResult) err() error {
	if pr.errors == 0 && len(pr.failures) == 0 {
		return nil
	}
	return fmt.Errorf("%d failed requests (%s)%s", pr.errors, formatErrors(pr.byError), formatFailures(pr.failures))
}

// runPhase runs p on every worker whose session is alive and waits for all of them.
func runPhase(cfg *Config, workers []*worker, p *phase) phaseResult {
	var wg sync.WaitGroup
	start := nanotime()
	for _, w := range workers {
		if w.failure != nil {
			continue
		}
		w.done.Store(0)
		w.nerr.Store(0)
		w.errs = map[string]int64{}
		wg.Go(func() { w.run(p) })
	}
	stop := startProgress(cfg, p.name, start, func() (int64, int64) {
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
	for i, w := range workers {
		if w.errs == nil {
			continue
		}
		pr.ok += w.done.Load()
		pr.errors += w.nerr.Load()
		for k, v := range w.errs {
			pr.byError[k] += v
		}
		w.errs = nil
		if w.failure != nil {
			pr.failures = append(pr.failures, fmt.Sprintf("session %d (0x%x): %v", i, w.s.id, w.failure))
		}
	}
	return pr
}

// startProgress prints a progress line every cfg.ProgressEvery until the returned func is called.
func startProgress(cfg *Config, what string, start int64, counts func() (ok, bad int64)) (stop func()) {
	if cfg.Progress == nil || cfg.ProgressEvery <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(cfg.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ok, bad := counts()
				el := time.Duration(nanotime() - start)
				fmt.Fprintf(cfg.Progress, "bench: %s %s: %v, %d ops, %.0f ops/s, %d errors\n",
					cfg.Workload, what, el.Round(100*time.Millisecond), ok, float64(ok)/el.Seconds(), bad)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// runOps runs the request workloads: create, set, get, exists, children, delete, mixed.
func runOps(ctx context.Context, cfg Config) (*Result, error) {
	workers, err := connectWorkers(ctx, &cfg, cfg.Sessions, max(cfg.Outstanding, prepareWindow))
	if err != nil {
		return nil, err
	}
	defer closeWorkers(workers)
	r := &opsRun{cfg: &cfg, res: newResult(&cfg), workers: workers, root: newRunRoot(&cfg), value: cfg.value()}
	r.res.Root = r.root
	r.prefix = []byte(r.root + "/")
	if err := createRoot(workers[0].s, cfg.Root, r.root); err != nil {
		return nil, err
	}
	gen, warmEnd, err := r.prepareWorkload(ctx)
	if err == nil && len(cfg.addrs()) > 1 {
		err = settleWorkers(workers, r.root)
	}
	if err != nil {
		return nil, errors.Join(err, r.cleanup())
	}
	var next atomic.Int64 // op indices, across the warm-up and the measurement
	if cfg.Warmup > 0 {
		p := &phase{name: "warm-up", gen: gen, next: &next, end: warmEnd,
			until: nanotime() + int64(cfg.Warmup), window: cfg.Outstanding}
		pr := runPhase(&cfg, workers, p)
		r.res.WarmupOps = pr.ok
		if err := pr.err(); err != nil {
			return nil, errors.Join(fmt.Errorf("bench: warm-up: %w", err), r.cleanup())
		}
		if cfg.Workload == WorkloadDelete {
			next.Store(warmEnd) // measure on the pool of Ops znodes
		}
	}
	r.measure(gen, &next)
	if err := ctx.Err(); err != nil {
		return r.res, err
	}
	if err := r.cleanup(); err != nil {
		r.res.CleanupError = err.Error()
	}
	return r.res, nil
}

// opsRun is one run of a request workload. Its znodes are root/i for i in [0, made), and
// for children also root/i/c for c in [0, childrenPerNode).
type opsRun struct {
	cfg     *Config
	res     *Result
	workers []*worker
	root    string
	prefix  []byte // root + "/"
	value   []byte
	made    int64
}

// prepareWorkload creates the znodes the workload needs and returns its generator and
// where its warm-up must stop (only delete's is bounded: it deletes a pool of its own).
func (r *opsRun) prepareWorkload(ctx context.Context) (generator, int64, error) {
	cfg := r.cfg
	creates := &createGen{prefix: r.prefix, value: r.value}
	switch cfg.Workload {
	case WorkloadCreate:
		return creates, math.MaxInt64, nil
	case WorkloadDelete:
		var pool int64
		if cfg.Warmup > 0 {
			pool = max(cfg.Ops/4, 1000)
		}
		r.made = pool + cfg.Ops
		return &deleteGen{prefix: r.prefix}, pool, r.prepare(ctx, "znodes", creates, r.made)
	}
	nodes := int64(cfg.Nodes)
	r.made = nodes
	if err := r.prepare(ctx, "znodes", creates, nodes); err != nil {
		return nil, 0, err
	}
	g := &readGen{prefix: r.prefix, nodes: nodes, value: r.value, valueSize: int32(cfg.ValueSize)}
	switch cfg.Workload {
	case WorkloadGet:
		g.op = wire.OpGetData
	case WorkloadExists:
		g.op = wire.OpExists
	case WorkloadSet:
		g.op = wire.OpSetData
	case WorkloadMixed:
		g.op, g.setEvery = wire.OpGetData, 10
	case WorkloadChildren:
		g.op, g.children = wire.OpGetChildren, childrenPerNode
		children := &childGen{prefix: r.prefix, value: r.value, per: childrenPerNode}
		if err := r.prepare(ctx, "children", children, nodes*childrenPerNode); err != nil {
			return nil, 0, err
		}
	}
	return g, math.MaxInt64, nil
}

// prepare runs g over [0, n), unmeasured, and fails on any error.
func (r *opsRun) prepare(ctx context.Context, what string, g generator, n int64) error {
	var from atomic.Int64
	pr := runPhase(r.cfg, r.workers, &phase{name: "prepare " + what, gen: g, next: &from, end: n, window: prepareWindow})
	r.res.Prepared += pr.ok
	r.res.PrepareElapsed += pr.elapsed
	if err := pr.err(); err != nil {
		return fmt.Errorf("bench: prepare %s: %w", what, err)
	}
	return ctx.Err()
}

// measure runs the measured phase: Ops operations, or for Duration.
func (r *opsRun) measure(gen generator, next *atomic.Int64) {
	cfg := r.cfg
	p := &phase{name: "measure", gen: gen, next: next, end: math.MaxInt64, window: cfg.Outstanding, record: true,
		timeline: cfg.timeline}
	if cfg.Ops > 0 {
		p.end = next.Load() + cfg.Ops
	} else {
		p.until = nanotime() + int64(cfg.Duration)
	}
	cfg.hook(true)
	pr := runPhase(cfg, r.workers, p)
	cfg.hook(false)
	r.res.addPhase(pr)
	for _, w := range r.workers {
		r.res.hist.Merge(w.hist)
	}
	r.res.samples = timelineOf(r.workers)
	if cfg.Workload == WorkloadCreate {
		r.made = min(next.Load(), p.end) // every index handed out below end was issued
	}
	r.res.finish()
}

// cleanup deletes the run's znodes and root, unless Keep.
func (r *opsRun) cleanup() error {
	if r.cfg.Keep {
		return nil
	}
	var errs []error
	if r.cfg.Workload == WorkloadChildren {
		var from atomic.Int64
		p := &phase{name: "clean up", gen: &deleteChildGen{prefix: r.prefix, per: childrenPerNode},
			next: &from, end: r.made * childrenPerNode, window: prepareWindow}
		errs = append(errs, runPhase(r.cfg, r.workers, p).err())
	}
	var from atomic.Int64
	p := &phase{name: "clean up", gen: &deleteGen{prefix: r.prefix, missingOK: true}, next: &from, end: r.made, window: prepareWindow}
	errs = append(errs, runPhase(r.cfg, r.workers, p).err())
	errs = append(errs, removeRoot(r.workers, r.cfg.Root, r.root))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: clean up %s: %w", r.root, err)
	}
	return nil
}

// settleWorkers has every worker write (setData) path and waits for the replies: a
// member answers a write once it has applied it and every write ordered before it, so
// each worker's member then holds every write acknowledged before settleWorkers.
func settleWorkers(workers []*worker, path string) error {
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() {
			code, err := call(w.s, wire.OpSetData, func(e *wire.Encoder) {
				e.String(path)
				e.Buffer([]byte{})
				e.Int(-1)
			})
			if err = errors.Join(err, codeErr(code)); err != nil {
				errs[i] = fmt.Errorf("bench: setData %s on session %d (0x%x): %w", path, i, w.s.id, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// connectWorkers opens n sessions in parallel.
func connectWorkers(ctx context.Context, cfg *Config, n, window int) ([]*worker, error) {
	sessions, err := dialMany(ctx, cfg, n, cfg.sessionOptions(window, 64<<10))
	if err != nil {
		return nil, err
	}
	workers := make([]*worker, n)
	for i, s := range sessions {
		workers[i] = &worker{s: s, hist: NewHistogram()}
	}
	return workers, nil
}

// dialMany opens n sessions to cfg's addresses, round-robin, at most 64 handshakes at a
// time. If any fails, the others are closed and the first error is returned.
func dialMany(ctx context.Context, cfg *Config, n int, o sessionOptions) ([]*session, error) {
	sessions := make([]*session, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range sessions {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			sessions[i], errs[i] = dial(ctx, cfg.addr(int64(i)), o)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeSessions(sessions)
		return nil, fmt.Errorf("bench: connect %d sessions to %s: %w", n, cfg.Addr, firstError(errs))
	}
	return sessions, nil
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// closeSessions ends every live session with closeSession, 64 at a time, so that the
// server drops their ephemerals and watches now rather than at expiry.
func closeSessions(sessions []*session) {
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for _, s := range sessions {
		if s == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s.close(10 * time.Second)
		})
	}
	wg.Wait()
}

func closeWorkers(workers []*worker) {
	var live []*session
	for _, w := range workers {
		if w.failure == nil {
			live = append(live, w.s)
		}
	}
	closeSessions(live)
}

// call sends one request on s and waits for its reply, for set-up and clean-up.
func call(s *session, op wire.Op, body func(e *wire.Encoder)) (wire.Code, error) {
	body(s.begin(op, -1))
	s.end()
	if err := s.flush(); err != nil {
		return 0, err
	}
	for {
		r, err := s.next()
		if err != nil {
			return 0, err
		}
		if !r.notification {
			return r.hdr.Err, nil
		}
	}
}

// create makes a persistent znode with no data.
func create(s *session, path string) (wire.Code, error) {
	return call(s, wire.OpCreate, func(e *wire.Encoder) {
		e.String(path)
		e.Buffer([]byte{})
		e.Raw(openACL)
		e.Int(wire.FlagPersistent)
	})
}

// remove deletes a znode whatever its version.
func remove(s *session, path string) (wire.Code, error) {
	return call(s, wire.OpDelete, func(e *wire.Encoder) { e.String(path); e.Int(-1) })
}

// createRoot creates the shared root (if missing) and the run's own root.
func createRoot(s *session, shared, root string) error {
	if code, err := create(s, shared); err != nil || (code != wire.OK && code != wire.ErrNodeExists) {
		return fmt.Errorf("bench: create %s: %v", shared, errors.Join(err, codeErr(code)))
	}
	if code, err := create(s, root); err != nil || code != wire.OK {
		return fmt.Errorf("bench: create %s: %v", root, errors.Join(err, codeErr(code)))
	}
	return nil
}

// removeRoot deletes the run's root and then the shared root, unless another run still uses it.
func removeRoot(workers []*worker, shared, root string) error {
	for _, w := range workers {
		if w.failure != nil {
			continue
		}
		if code, err := remove(w.s, root); err != nil || code != wire.OK {
			return fmt.Errorf("delete %s: %v", root, errors.Join(err, codeErr(code)))
		}
		if code, err := remove(w.s, shared); err != nil || (code != wire.OK && code != wire.ErrNotEmpty && code != wire.ErrNoNode) {
			return fmt.Errorf("delete %s: %v", shared, errors.Join(err, codeErr(code)))
		}
		return nil
	}
	return errors.New("no session left to delete " + root)
}

func codeErr(c wire.Code) error {
	if c == wire.OK {
		return nil
	}
	return c
}
