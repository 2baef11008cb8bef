package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// Console is the web console: a gin engine over one ZooKeeper session. Its methods are
// safe for concurrent use; call Listen (optional) and Run once.
type Console struct {
	cfg     Config
	session *coordinator.Session
	conn    *zk.Conn
	logger  *slog.Logger
	users   map[string]user

	sessions *sessionStore
	limiter  *loginLimiter
	pages    pageSet
	engine   *gin.Engine
	http     *http.Client // for the server's admin HTTP
	streams  *streamLimiter
	// stop is closed when Run's context ends, to end the event streams before the
	// graceful shutdown waits for requests in flight.
	stop     chan struct{}
	stopOnce sync.Once

	tls *tls.Config // nil: plain HTTP

	mu sync.Mutex
	ln net.Listener // set by Listen; guarded by mu

	hub *watchHub // the watches the event streams share

	prober        *prober                  // the overview's ensemble
	platformCache *refresher[PlatformView] // the overview's platform summary
	replCache     *refresher[ReplSummary]  // the replication lag the sampler charts
	history       *history                 // the overview's charts, sampled by Run
}

// New returns a console on cfg, using s (owned by the caller, who closes it after Run
// returns). It validates cfg and makes Config.AuditRoot if it is missing.
func New(cfg Config, s *coordinator.Session, logger *slog.Logger) (*Console, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	users, _ := parseUsers(cfg.Users) // Validate checked them
	pages, err := parsePages()
	if err == nil {
		err = addPages(pages, "tasks", "task", "jobs", "job", "dag", "workers", "replication", "logs", "sessions")
	}
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	c := &Console{
		cfg: cfg, session: s, conn: s.Conn(), logger: logger, users: users,
		sessions: newSessionStore(cfg.SessionTTL, time.Now),
		limiter:  newLoginLimiter(time.Now),
		pages:    pages,
		http:     &http.Client{Timeout: 2 * time.Second},
		streams:  newStreamLimiter(maxStreamsPerLogin, maxStreams),
		stop:     make(chan struct{}),
	}
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("web: https_cert = %s, https_key = %s: %w", cfg.TLSCert, cfg.TLSKey, err)
		}
		c.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	c.prober, c.platformCache, c.replCache = newProber(c), c.newPlatformCache(), c.newReplCache()
	c.history = newHistory(sampleInterval, historySize)
	c.hub = &watchHub{arm: c.arm, stop: c.stop, logger: logger, entries: map[watchSpec]*hubEntry{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.MakeDirs(ctx, cfg.AuditRoot); err != nil {
		return nil, fmt.Errorf("web: make audit root %s: %w", cfg.AuditRoot, err)
	}
	c.engine = c.routes()
	return c, nil
}

// Handler returns the console's HTTP handler (the gin engine), for tests or to mount
// it in another server.
func (c *Console) Handler() http.Handler { return c.engine }

// Listen binds Config.Listen, so that Addr is known before Run (a port of 0 picks a
// free one). Run calls it if it has not been called.
func (c *Console) Listen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", c.cfg.Listen)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("web: listen = %s: the address is in use by another process: %w", c.cfg.Listen, syscall.EADDRINUSE)
	}
	if err != nil {
		return fmt.Errorf("web: listen = %s: %w", c.cfg.Listen, err)
	}
	if c.tls == nil && !isLoopback(ln.Addr()) {
		c.logger.Warn("web console serves plain HTTP on a non-loopback address: passwords and session cookies "+
			"cross the network in the clear; set https_cert and https_key, or listen on 127.0.0.1 behind an HTTPS proxy",
			"addr", ln.Addr().String())
	}
	if c.tls != nil {
		ln = tls.NewListener(ln, c.tls)
	}
	c.ln = ln
	return nil
}

// Addr returns the address the console listens on, nil before Listen (or Run) bound it.
func (c *Console) Addr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln == nil {
		return nil
	}
	return c.ln.Addr()
}

// secureCookies reports whether the console's cookies are Secure: served over HTTPS,
// or Config.SecureCookies (HTTPS ends at a proxy).
func (c *Console) secureCookies() bool { return c.cfg.SecureCookies || c.tls != nil }

// isLoopback reports whether addr is a loopback address; the unspecified address
// (all interfaces) is not.
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// Run serves until ctx ends, then shuts down gracefully (requests in flight get 5 s)
// and returns nil; or returns the error that stopped serving.
func (c *Console) Run(ctx context.Context) error {
	if err := c.Listen(); err != nil {
		return err
	}
	c.mu.Lock()
	ln := c.ln
	c.mu.Unlock()
	srv := &http.Server{Handler: c.engine, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(c.logger.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampling := make(chan struct{})
	go func() { defer close(sampling); c.sampleLoop(sampleCtx) }()
	defer func() { stopSampling(); <-sampling }()
	c.logger.Info("web console listening", "addr", ln.Addr().String(), "https", c.tls != nil)
	var bg sync.WaitGroup
	defer bg.Wait()
	bgCtx, stopBg := context.WithCancel(ctx)
	defer stopBg()
	bg.Go(func() { c.monitorReplication(bgCtx) })
	select {
	case err := <-errc:
		return fmt.Errorf("web: serve: %w", err)
	case <-ctx.Done():
	}
	c.stopOnce.Do(func() { close(c.stop) })
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	c.logger.Info("web console stopped")
	return err
}

func (c *Console) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	_ = e.SetTrustedProxies(nil) // ClientIP is the peer: X-Forwarded-For cannot dodge the login limit
	e.Use(c.logRequest, c.limitBody, gin.CustomRecovery(func(g *gin.Context, err any) {
		c.logger.Error("handler panic", "path", g.Request.URL.Path, "err", err)
		g.AbortWithStatus(http.StatusInternalServerError)
	}), securityHeaders)
	e.StaticFS("/static", staticFS())
	e.GET("/login", c.loginPage)
	e.POST("/login", c.loginForm)
	e.POST("/api/v1/login", c.apiLogin)

	auth := e.Group("/", c.requireSession, c.checkCSRF)
	operator := c.requireRole(roleOperator)
	auth.POST("/logout", c.logout)
	auth.GET("/", c.overviewPage)
	auth.GET("/znodes", c.znodesPage)
	auth.POST("/znodes/create", operator, c.createForm)
	auth.POST("/znodes/edit", operator, c.editForm)
	auth.POST("/znodes/delete", operator, c.deleteForm)
	auth.POST("/znodes/acl", c.requireRole(roleAdmin), c.aclForm)
	auth.GET("/audit", c.auditPage)
	auth.GET("/sessions", c.sessionsPage)
	auth.GET("/server", c.serverPage)
	admin := c.requireRole(roleAdmin)
	c.servicePageRoutes(auth, operator, admin)

	api := auth.Group("/api/v1")
	api.POST("/logout", c.logout)
	api.GET("/znodes", c.apiChildren)
	api.GET("/znode", c.apiGetZnode)
	api.POST("/znode", operator, c.apiCreateZnode)
	api.PUT("/znode", operator, c.apiSetZnode)
	api.DELETE("/znode", operator, c.apiDeleteZnode)
	api.GET("/acl", c.apiGetACL)
	api.PUT("/acl", c.requireRole(roleAdmin), c.apiSetACL)
	api.GET("/identity", c.apiIdentity)
	api.GET("/audit", c.apiAudit)
	api.GET("/events", c.apiEvents)
	api.GET("/sessions", c.apiSessions)
	api.GET("/overview", c.apiOverview)
	api.GET("/overview/history", c.apiHistory)
	c.serviceAPIRoutes(api, operator, admin)
	e.NoRoute(c.requireSession, func(g *gin.Context) { c.deny(g, http.StatusNotFound, "no such page") })
	return e
}

func (c *Console) logRequest(g *gin.Context) {
	start := time.Now()
	g.Next()
	c.logger.Debug("http request", "method", g.Request.Method, "path", g.Request.URL.Path,
		"status", g.Writer.Status(), "duration", time.Since(start))
}

// securityHeaders forbids framing, inline scripts and foreign assets.
func securityHeaders(g *gin.Context) {
	h := g.Writer.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}
