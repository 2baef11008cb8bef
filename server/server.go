// Package server is the ZooKeeper-compatible coordination server: it owns the lifecycle of
// the listeners, the request pipeline, the log, the tree and the session table. The
// deterministic parts live in subpackages (wire, datatree, txn, session, watch, store);
// docs/threads.md maps the goroutines and docs/locking.md the lock order.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock/paddock/server/admin"
	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/session"
	"github.com/paddock/paddock/server/store"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/watch"
	"github.com/paddock/paddock/server/wire"
)

// Server is one coordination server, standalone or a member of an ensemble: its log
// (txnLog) is the one or the other. Create it with New, then Start (or Run).
type Server struct {
	cfg     Config
	logger  *slog.Logger
	txnOpts txn.Options
	admin   *admin.Admin
	// saslUsers maps the SASL users to their passwords (Config.SASLJaasConfig,
	// SASLPasswords); nil when SASL is off. Read-only after New.
	saslUsers map[string]string
	// known is the digest ids the server knows: the super digest and KnownDigestsFile's
	// (knowndigests.go). Read-only after New.
	known knownDigests

	ln       net.Listener // the plain client port; nil without one
	secureLn net.Listener // the TLS client port; nil without one
	tlsConf  *tls.Config  // the TLS client port's; set with secureLn
	adminLn  net.Listener
	adminSrv *http.Server
	fs       store.FS // the filesystem the log and snapshots live on
	log      txnLog   // the log the server writes through: solo or replica (txnlog.go)

	treeMu      sync.RWMutex
	tree        *datatree.Tree // guarded by treeMu: written only by the log's applying goroutine (apply)
	lastApplied atomic.Int64   // the tree's last zxid, readable without treeMu
	watches     *watch.Registry[*conn]
	sessions    *session.Table
	ro          *roSessions // a member's read-only sessions (readonly.go)

	nextSessionID atomic.Int64

	proposals chan *proposal // to the log's loop (nextBatch); its capacity is MaxOutstanding
	stopping  chan struct{}  // closed when the server starts shutting down
	failed    chan error     // receives the error that stopped the server (capacity 1)
	fatalErr  atomic.Pointer[error]
	wg        sync.WaitGroup

	mu           sync.Mutex
	conns        map[*conn]struct{} // guarded by mu
	perIP        map[string]int     // open connections per client IP; guarded by mu
	sessionConns map[int64]*conn    // the connection of each attached session; guarded by mu

	received, sent atomic.Int64 // packets, for srvr; reset by srst
	outstanding    atomic.Int64 // requests read and not yet answered (conn.pending, summed)
	closeOnce      sync.Once

	// The bounds at the client port (docs/limits.md).
	queued    atomic.Int64  // bytes queued for clients and not yet written (conn.queued, summed)
	shedMu    sync.Mutex    // held by the one goroutine dropping connections to bring queued down (makeRoom)
	roomMu    sync.Mutex    // guards room; a leaf
	room      chan struct{} // closed, and replaced, when outstanding falls below MaxOutstanding while read loops wait
	throttled atomic.Int32  // read loops waiting for outstanding to fall below MaxOutstanding
	limits    limitCounters
	quota     quotaCounters // quota.go
	audit     *auditLog     // nil unless AuditEnable (audit.go)
}

// limitCounters count what the bounds at the client port refused or waited for, since
// start; admin shows them (Stats.Limits). Each is named after its mntr key.
type limitCounters struct {
	sessionlessExpired atomic.Int64 // sessionless_connections_expired
	framesRejected     atomic.Int64 // frames_rejected
	largeResponses     atomic.Int64 // large_responses_rejected
	connsDropped       atomic.Int64 // connection_drop_count
	throttleWaits      atomic.Int64 // request_throttle_wait_count
	connThrottleWaits  atomic.Int64 // connection_throttle_wait_count
	tlsHandshakeFailed atomic.Int64 // unsuccessful_handshake: TLS handshakes that failed or timed out
	readOnlyRefused    atomic.Int64 // readonly_sessions_refused: past either bound of roSessions
}

// Option adjusts a server beyond its Config.
type Option func(*Server)

// WithFS puts the log and snapshots on fs instead of the operating system's filesystem:
// tests inject faults this way.
func WithFS(fs store.FS) Option { return func(s *Server) { s.fs = fs } }

// New validates cfg and returns a server that is not yet listening.
func New(cfg Config, logger *slog.Logger, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server: config: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	saslUsers, err := loadSASLUsers(&cfg)
	if err != nil {
		return nil, fmt.Errorf("server: config: %w", err)
	}
	known, err := loadKnownDigests(&cfg)
	if err != nil {
		return nil, fmt.Errorf("server: config: %w", err)
	}
	s := &Server{
		saslUsers:    saslUsers,
		known:        known,
		cfg:          cfg,
		logger:       logger,
		txnOpts:      txn.Options{ExtendedTypes: cfg.ExtendedTypes, SkipACL: cfg.SkipACL, EnforceQuota: cfg.EnforceQuota},
		tree:         datatree.New(),
		watches:      watch.New[*conn](),
		sessions:     session.NewTable(cfg.TickTime),
		proposals:    make(chan *proposal, cfg.MaxOutstanding),
		stopping:     make(chan struct{}),
		failed:       make(chan error, 1),
		conns:        make(map[*conn]struct{}),
		perIP:        make(map[string]int),
		sessionConns: make(map[int64]*conn),
		ro:           newROSessions(cfg.TickTime, cfg.readOnlyPerAddr()),
		room:         make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	if s.fs == nil {
		s.fs = store.OS
	}
	if len(cfg.Ensemble) > 0 {
		s.log = newReplica(s)
	} else {
		s.log = newSolo(s)
	}
	s.warnEnforce()
	return s, nil
}

// Start recovers state from the data directory, binds the listeners and starts serving.
// On error everything opened is closed again.
func (s *Server) Start() (err error) {
	defer func() {
		if err != nil {
			s.audit.auditServer(auditStart, auditFailure)
			s.Close()
		}
	}()
	if err = s.startAudit(); err != nil {
		return err
	}
	if err = s.log.open(); err != nil {
		return err
	}
	s.settleHeap()
	// The client ports (listen) and, in an ensemble, the peer port (log.open) are the
	// server: an address that cannot be bound fails the start. The admin HTTP port is an
	// add-on (startAdmin), as in a ZooKeeper ensemble member.
	if err = s.listen(); err != nil {
		return err
	}
	if err := s.startAdmin(); err != nil {
		return err
	}
	zxid := s.lastApplied.Load()
	s.log.start()
	if s.ln != nil {
		s.goroutine(func() { s.acceptLoop(s.ln, nil) })
	}
	if s.secureLn != nil {
		s.goroutine(func() { s.acceptLoop(s.secureLn, s.tlsConf) })
	}
	s.goroutine(s.expiryLoop)
	s.goroutine(s.reapLoop)
	s.goroutine(s.gcTuneLoop)
	s.audit.auditServer(auditStart, auditSuccess)
	s.logger.Info("serving", "client_addr", s.Addr().String(), "secure_client_addr", s.SecureAddr(),
		"admin_addr", s.AdminAddr(), "zxid", hexID(zxid), "sessions", s.sessions.Len(), "data_dir", s.cfg.DataDir)
	return nil
}

func (s *Server) startAdmin() error {
	acfg := admin.DefaultConfig()
	acfg.FourLetterWords = s.cfg.FourLetterWords
	acfg.Started = time.Now()
	acfg.Server = admin.ServerConf{
		ClientPort:       listenerPort(s.ln),
		SecureClientPort: listenerPort(s.secureLn),
		DataDir:          s.cfg.DataDir,
		DataLogDir:       s.cfg.DataLogDir,
		TickTime:         s.cfg.TickTime,
		MaxClientCnxns:   s.cfg.MaxClientCnxns,
		ServerID:         0, // ZooKeeper's conf shows 0 for a standalone server

		MinSessionTimeout: first(s.cfg.SessionTimeoutBounds()),
		MaxSessionTimeout: second(s.cfg.SessionTimeoutBounds()),
	}
	a, err := admin.New(acfg, s, s.logger)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.admin = a
	if s.cfg.AdminAddr == "" {
		return nil
	}
	ln, err := listenTCP("admin_addr", s.cfg.AdminAddr)
	if err != nil {
		// As a ZooKeeper ensemble member warns "Problem starting AdminServer" and serves
		// on: three members of one machine whose zoo.cfg files leave admin.serverPort at
		// 8080 all serve, one of them with the admin port. The four-letter words stay on
		// the client port; AdminAddr says nil.
		s.logger.Warn("admin port not served: cannot listen; serving clients without it (the four-letter words still answer on the client port)",
			"admin_addr", s.cfg.AdminAddr, "err", err)
		return nil
	}
	s.adminLn = ln
	s.adminSrv = &http.Server{Handler: s.adminHandler(a.Handler()), ReadHeaderTimeout: 10 * time.Second}
	s.goroutine(func() {
		if err := s.adminSrv.Serve(s.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("admin server stopped", "err", err)
		}
	})
	return nil
}

func first[T any](a, _ T) T  { return a }
func second[T any](_, b T) T { return b }

// Addr returns the plain client listener's address, or the TLS one's when there is no
// plain port; valid after Start.
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return s.secureLn.Addr()
	}
	return s.ln.Addr()
}

// AdminAddr returns the admin HTTP listener's address, or nil if it is disabled or its
// address could not be bound (Start logs why and serves on without it).
func (s *Server) AdminAddr() net.Addr {
	if s.adminLn == nil {
		return nil
	}
	return s.adminLn.Addr()
}

// Close stops serving, closes every connection, waits for every goroutine and closes the
// log. Writes in flight that were not yet durable are not acknowledged. Idempotent.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.audit.auditServer(auditStop, auditInvoked) // before stopping, as ZooKeeper's shutdown hook
		close(s.stopping)
		s.log.halt()
		if s.ln != nil {
			s.ln.Close()
		}
		if s.secureLn != nil {
			s.secureLn.Close()
		}
		if s.adminSrv != nil {
			s.adminSrv.Close()
		}
		for _, c := range s.connList() {
			c.close()
		}
		s.wg.Wait()
		err = s.log.close()
		s.audit.close()
		s.logger.Info("stopped", "zxid", hexID(s.lastApplied.Load()))
	})
	return err
}

// Run starts the server and serves until ctx is done or the server fails, then closes it.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(); err != nil {
		return err
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-s.failed:
	}
	return errors.Join(err, s.Close())
}

// fatal reports an error the server cannot serve past (the log failed) and starts
// shutting down: no write may be acknowledged that is not durable.
func (s *Server) fatal(err error) {
	s.logger.Error("stopping: cannot continue", "err", err)
	s.fatalErr.CompareAndSwap(nil, &err)
	select {
	case s.failed <- err:
	default:
	}
	go s.Close()
}

// Done is closed when the server starts shutting down: Close was called, or the server
// failed (then Err says why).
func (s *Server) Done() <-chan struct{} { return s.stopping }

// Err returns the error that made the server stop on its own (its log failed), or nil.
func (s *Server) Err() error {
	if e := s.fatalErr.Load(); e != nil {
		return *e
	}
	return nil
}

// goroutine runs f on a goroutine that Close waits for.
func (s *Server) goroutine(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// acceptLoop accepts the connections of ln, over TLS with tlsConf unless it is nil: the
// handshake is then done by the connection's goroutine (conn.tlsHandshake).
func (s *Server) acceptLoop(ln net.Listener, tlsConf *tls.Config) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.stopping:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.logger.Error("accept failed", "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if tlsConf != nil {
			nc = tls.Server(nc, tlsConf)
		}
		c := newConn(s, nc)
		if !s.addConn(c) {
			s.logger.Warn("too many connections from one address", "ip", c.ip, "max_client_cnxns", s.cfg.MaxClientCnxns)
			nc.Close()
			continue
		}
		s.goroutine(c.serve)
	}
}

// addConn registers c unless its IP already has MaxClientCnxns connections or the
// server is stopping.
func (s *Server) addConn(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.stopping:
		return false
	default:
	}
	if max := s.cfg.MaxClientCnxns; max > 0 && s.perIP[c.ip] >= max {
		return false
	}
	s.perIP[c.ip]++
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c]; !ok {
		return
	}
	delete(s.conns, c)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
	if sid := c.sessionID.Load(); s.sessionConns[sid] == c {
		delete(s.sessionConns, sid)
	}
}

// makeRoom counts n bytes about to be queued for a client before they are encoded, so
// that large replies built at the same time each see the others' (a small frame passes
// 0: it is checked, not counted ahead); then, if the bytes queued over all connections
// are past MaxQueuedBytes, it drops the connections holding the most until they are
// not. The caller queues its frame, whose bytes replace the n in one step
// (endFrameLocked), or gives the n back if it queues nothing. So the queue never holds
// more than MaxQueuedBytes and the frames being built at that moment, one a goroutine,
// and once they are queued it is within MaxQueuedBytes again. (Issue
// 31: checked only after queuing, by one shedder that the others did not wait for,
// while dropped connections kept their bytes outside the count, never-reading clients
// held more than twice the limit.)
//
// One goroutine sheds at a time, and a goroutine over the limit waits for it: it does
// no I/O under shedMu (the lines about the connections dropped are logged after), and
// its callers hold no outMu, so the wait is short, the apply path's included.
func (s *Server) makeRoom(n int64) {
	total := s.queued.Load()
	if n != 0 {
		total = s.queued.Add(n)
	}
	if total <= s.cfg.MaxQueuedBytes {
		return
	}
	s.shedMu.Lock()
	dropped := s.shedQueued()
	s.shedMu.Unlock()
	for _, h := range dropped {
		s.logger.Warn("closing connection: replies queued for clients past the server's limit",
			"remote", h.c.nc.RemoteAddr().String(), "session_id", hexID(h.c.sessionID.Load()),
			"queued_bytes", h.queued, "max_queued_bytes", s.cfg.MaxQueuedBytes)
	}
}

// holding is a connection and the bytes it had queued when the server looked.
type holding struct {
	c      *conn
	queued int64
}

// shedQueued drops the connections that hold the most queued bytes, the slowest
// readers, until the server's count is back under MaxQueuedBytes, and returns them. The
// caller holds shedMu. A connection dropped gives up its queue at once and queues
// nothing more (conn.drop): its bytes leave the count as they leave memory.
func (s *Server) shedQueued() []holding {
	if s.queued.Load() <= s.cfg.MaxQueuedBytes {
		return nil // another goroutine shed while this one waited
	}
	var conns []holding
	for _, c := range s.connList() {
		if q := c.queued.Load(); q > 0 {
			conns = append(conns, holding{c, q})
		}
	}
	slices.SortFunc(conns, func(a, b holding) int { return cmp.Compare(b.queued, a.queued) })
	for i, h := range conns {
		if s.queued.Load() <= s.cfg.MaxQueuedBytes {
			return conns[:i]
		}
		s.limits.connsDropped.Add(1)
		h.c.drop()
	}
	return conns
}

// expiryLoop closes sessions whose clients have gone quiet for their timeout. Only this
// loop decides expiry; the close itself is a txn like any other.
func (s *Server) expiryLoop() {
	timer := time.NewTimer(s.cfg.TickTime)
	defer timer.Stop()
	for {
		select {
		case <-s.stopping:
			return
		case now := <-timer.C:
			if !s.leading() {
				timer.Reset(s.cfg.TickTime) // in an ensemble only the leader expires sessions
				continue
			}
			for _, id := range s.sessions.Expire(now) {
				s.logger.Info("session expired", "session_id", hexID(id))
				p := &proposal{txn: &txn.Txn{Session: id, Op: wire.OpCloseSession, Req: wire.Empty{}}}
				if s.propose(context.Background(), p) != nil {
					return
				}
			}
			wait := s.cfg.TickTime
			if next, ok := s.sessions.Next(); ok {
				wait = min(max(time.Until(next), time.Millisecond), wait)
			}
			timer.Reset(wait)
		}
	}
}

// reapLoop deletes empty containers and expired TTL nodes every ContainerCheckInterval
// (ZooKeeper's ContainerManager), at most ContainerMaxPerMinute a minute.
func (s *Server) reapLoop() {
	ticker := time.NewTicker(s.cfg.ContainerCheckInterval)
	defer ticker.Stop()
	limit := max(1, int(int64(s.cfg.ContainerMaxPerMinute)*int64(s.cfg.ContainerCheckInterval)/int64(time.Minute)))
	for {
		select {
		case <-s.stopping:
			return
		case now := <-ticker.C:
			if !s.leading() {
				continue
			}
			for _, path := range s.reapable(now, limit) {
				p := &proposal{txn: &txn.Txn{Op: wire.OpDeleteContainer, Req: &wire.PathRecord{Path: path}}}
				if s.propose(context.Background(), p) != nil {
					return
				}
			}
		}
	}
}

// reapable lists up to limit containers that had children and have none left, and TTL
// nodes without children unchanged for longer than their TTL.
func (s *Server) reapable(now time.Time, limit int) []string {
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	var out []string
	for _, p := range s.tree.Containers() {
		if n := s.tree.Get(p); n.NumChildren() == 0 && n.ChildCreates() > 0 && len(out) < limit {
			out = append(out, p)
		}
	}
	for _, p := range s.tree.TTLNodes() {
		if n := s.tree.Get(p); n.NumChildren() == 0 && now.UnixMilli()-n.Mtime() > n.TTL() && len(out) < limit {
			out = append(out, p)
		}
	}
	return out
}

// leading reports whether this server decides what only one server may: session
// expiry and the reaping of containers and TTL nodes. A standalone server always does;
// in an ensemble the leader does.
func (s *Server) leading() bool { return s.log.leading() }

func hexID(v int64) string { return fmt.Sprintf("0x%x", v) }
