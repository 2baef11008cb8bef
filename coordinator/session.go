package coordinator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/provenance"
)

// State is how a Session stands, as the recipes see it.
type State int

const (
	// StateConnecting: no session yet (before the first one is established).
	StateConnecting State = iota
	// StateConnected: the session is live and the client is connected to a server.
	StateConnected
	// StateSuspended: the connection dropped; the session may still be alive on the
	// servers, or may not. Whoever holds a lock or leads must act as if they might not
	// (Curator's SUSPENDED).
	StateSuspended
	// StateLost: the session is gone: the servers said it expired, or the client was cut
	// off for longer than its timeout, so they will have expired it. Its ephemeral nodes
	// are gone and its watches will not fire. The Session keeps trying to reconnect, and
	// a new session follows (Curator's LOST).
	StateLost
	// StateClosed: Close was called.
	StateClosed
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateSuspended:
		return "suspended"
	case StateLost:
		return "lost"
	case StateClosed:
		return "closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Event is a change of a Session's state.
type Event struct {
	State State
	// SessionID is the session's id when State is StateConnected, else the last one.
	SessionID int64
	// NewSession is set on StateConnected when the session is not the one before the
	// last disconnection: everything the old one held is gone.
	NewSession bool
}

// Auth is an identity the Session adds to every connection (zkCli's addauth), such as
// {Scheme: "digest", Credentials: "user:password"}.
type Auth struct {
	Scheme      string
	Credentials string
}

// ParseAuth parses "scheme:credentials" ("digest:user:password").
func ParseAuth(s string) (Auth, error) {
	scheme, cred, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || cred == "" {
		// The value is not shown: it may be a password.
		return Auth{}, errors.New("coordinator: auth: want scheme:credentials, as in digest:user:password")
	}
	return Auth{Scheme: scheme, Credentials: cred}, nil
}

// Config says how to reach the ensemble.
type Config struct {
	// Servers are the ensemble's client addresses, host:port.
	Servers []string
	// SessionTimeout is the session timeout asked for; the servers bound it (by default
	// to between 2 and 20 ticks, 4 s to 40 s).
	SessionTimeout time.Duration
	// Auth is added to every connection.
	Auth []Auth
	// Logger receives the Session's and the recipes' logs; nil discards them.
	Logger *slog.Logger
	// Dialer, if set, opens the TCP connections (tests cut them with it).
	Dialer zk.Dialer
	// TLS, if set, secures every connection (on top of Dialer's): the servers' client
	// port must be a secure one (secureClientPort). TLSFiles.Config makes one.
	TLS *tls.Config
	// Policy, if set, gives each node the Session and its recipes create its ACL
	// (ACLFor); nil leaves them open to all (world:anyone, all permissions).
	Policy *Policy
	// Signer, if set, signs what the Session's user authors (task specs, job
	// definitions: package task); Trust, if set, says whose signatures it believes
	// (docs/security.md, "Provenance"). Access.Config makes both from signing_key,
	// signers_file and the TLS files.
	Signer *provenance.Signer
	Trust  *provenance.Trust
	// MaxBuffer is the servers' jute.maxbuffer (their max_buffer): the largest request
	// frame they accept. If set, the client refuses a larger request itself
	// (zk.ErrShortBuffer) instead of sending one the server answers by closing the
	// connection, and sends any up to it (go-zk alone stops at 1.5 MiB). 0 leaves go-zk's
	// buffer as it is; MaxBuffer then reports ZooKeeper's default, DefaultMaxBuffer.
	MaxBuffer int
}

// DefaultMaxBuffer is ZooKeeper's default jute.maxbuffer, 0xfffff bytes (1 MiB - 1).
const DefaultMaxBuffer = 0xfffff

// DefaultConfig returns a Config for a server on localhost:2181 with a 15 s session.
func DefaultConfig() Config {
	return Config{Servers: []string{"127.0.0.1:2181"}, SessionTimeout: 15 * time.Second}
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	var errs []error
	if len(c.Servers) == 0 {
		errs = append(errs, errors.New("coordinator: servers: none given"))
	}
	for _, s := range c.Servers {
		if !strings.Contains(s, ":") {
			errs = append(errs, fmt.Errorf("coordinator: server %q: want host:port", s))
		}
	}
	if c.MaxBuffer != 0 && (c.MaxBuffer < 1024 || c.MaxBuffer > 512<<20) {
		errs = append(errs, fmt.Errorf("coordinator: max buffer %d: want 1024 bytes to 512 MiB (the servers' jute.maxbuffer)", c.MaxBuffer))
	}
	if c.SessionTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("coordinator: session timeout %v: must be at least 1ms", c.SessionTimeout))
	}
	for _, a := range c.Auth {
		if a.Scheme == "" || a.Credentials == "" {
			errs = append(errs, fmt.Errorf("coordinator: auth %q:%q: scheme and credentials must be set", a.Scheme, a.Credentials))
		}
	}
	return errors.Join(errs...)
}

// Session is one ZooKeeper session kept for its owner across disconnections and
// expiry, on github.com/go-zookeeper/zk. The client reconnects by itself and keeps its
// watches while the session lives; when the session expires it starts a new one, and
// the Session then re-creates the ephemeral nodes kept through it (KeepEphemeral) and
// tells its subscribers (Subscribe), which re-arm their watches and re-contest what
// they held. A Session is safe for concurrent use.
type Session struct {
	conn   *zk.Conn
	cfg    Config
	logger *slog.Logger
	acl    []zk.ACL

	// zkEvents carries the client's session events to run, in order; the client's
	// callback must not block, so it is an unbounded queue.
	zkEvents *queue[zk.Event]
	// cw observes the connections: the granted timeout, SetWatches sent.
	cw *connWatch

	mu          sync.Mutex
	state       State
	sessionID   int64 // the current or last session
	subs        map[*subscriber]struct{}
	ephemerals  map[string]*Ephemeral // by path
	established chan struct{}         // closed once the first session is established
	closed      chan struct{}
	done        chan struct{} // closed when run returns
}

// Connect opens a session with cfg and waits until it is established or ctx ends.
func Connect(ctx context.Context, cfg Config) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Session{
		cfg:         cfg,
		logger:      cfg.Logger,
		acl:         zk.WorldACL(zk.PermAll),
		zkEvents:    newQueue[zk.Event](),
		cw:          newConnWatch(),
		subs:        make(map[*subscriber]struct{}),
		ephemerals:  make(map[string]*Ephemeral),
		established: make(chan struct{}),
		closed:      make(chan struct{}),
		done:        make(chan struct{}),
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	dialer := cfg.Dialer
	if dialer == nil {
		dialer = defaultDialer
	}
	if cfg.TLS != nil {
		dialer = TLSDialer(cfg.TLS, dialer)
	}
	// The send buffer holds the 4-byte length and a frame of at most MaxBuffer; without
	// MaxBuffer, go-zk's own default of 1.5 MiB.
	sendBuffer := 1536 << 10
	if cfg.MaxBuffer > 0 {
		sendBuffer = 4 + cfg.MaxBuffer
	}
	conn, _, err := zk.Connect(cfg.Servers, cfg.SessionTimeout,
		zk.WithLogger(zkLogger{s.logger}),
		zk.WithDialer(s.cw.wrap(dialer)),
		zk.WithMaxConnBufferSize(sendBuffer),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession {
				s.zkEvents.push(ev)
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("coordinator: connect to %s: %w", strings.Join(cfg.Servers, ","), err)
	}
	s.conn = conn
	go s.run()
	select {
	case <-s.established:
	case <-ctx.Done():
		s.Close()
		return nil, &ConnectError{Servers: cfg.Servers, LastDial: s.cw.lastDialError(), Err: ctx.Err()}
	}
	// Added once there is a session, so that waiting for one is bounded by ctx; the
	// client sends them again on every reconnection.
	for _, a := range cfg.Auth {
		if err := conn.AddAuth(a.Scheme, []byte(a.Credentials)); err != nil {
			s.Close()
			return nil, fmt.Errorf("coordinator: add auth %s: %w", a.Scheme, err)
		}
	}
	return s, nil
}

// ConnectError is Connect giving up before a session was established: the servers,
// why it stopped waiting (Err, the context's error), and the error of the last attempt
// to reach one of them, if it failed.
type ConnectError struct {
	Servers  []string
	LastDial error
	Err      error
}

func (e *ConnectError) Error() string {
	msg := fmt.Sprintf("coordinator: connect to %s: %v", strings.Join(e.Servers, ","), e.Err)
	if e.LastDial != nil {
		msg += " (last dial: " + e.LastDial.Error() + ")"
	}
	return msg
}

func (e *ConnectError) Unwrap() error { return e.Err }

// MaxBuffer returns the largest request frame the Session sends: Config.MaxBuffer, or
// DefaultMaxBuffer.
func (s *Session) MaxBuffer() int {
	if s.cfg.MaxBuffer > 0 {
		return s.cfg.MaxBuffer
	}
	return DefaultMaxBuffer
}

// Identities returns the ACL identities the Session authenticates as, besides
// world:anyone and its address (ip): the id of each Config.Auth (a digest's hashed, never
// its password) and the x509 subject of its client certificate.
func (s *Session) Identities() []ID {
	var ids []ID
	for _, a := range s.cfg.Auth {
		ids = append(ids, IDOf(a))
	}
	if s.cfg.TLS != nil {
		for _, c := range s.cfg.TLS.Certificates {
			leaf := c.Leaf
			if leaf == nil && len(c.Certificate) > 0 {
				leaf, _ = x509.ParseCertificate(c.Certificate[0])
			}
			if leaf != nil {
				ids = append(ids, ID{Scheme: "x509", ID: leaf.Subject.String()})
			}
		}
	}
	return ids
}

// Conn returns the underlying client, for operations the recipes do not cover. It
// stays the same across reconnections and new sessions.
func (s *Session) Conn() *zk.Conn { return s.conn }

// ACL returns the ACL of nodes created without a path in mind: the Policy's for "/",
// or open to all without one. Prefer ACLFor.
func (s *Session) ACL() []zk.ACL { return s.ACLFor("/") }

// Policy returns the Config's ACL policy, nil if none.
func (s *Session) Policy() *Policy { return s.cfg.Policy }

// Signer returns the Config's signer, nil if none: the Session authors nothing.
func (s *Session) Signer() *provenance.Signer { return s.cfg.Signer }

// Trust returns whose signatures the Session believes; nil trusts no one.
func (s *Session) Trust() *provenance.Trust { return s.cfg.Trust }

// ACLFor returns the ACL to create the node at path with: the Config's Policy's, or
// open to all without one.
func (s *Session) ACLFor(path string) []zk.ACL {
	if s.cfg.Policy != nil {
		return s.cfg.Policy.ACL(path)
	}
	return s.acl
}

// Logger returns the Session's logger, for the recipes.
func (s *Session) Logger() *slog.Logger { return s.logger }

// State returns the Session's current state.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// SessionID returns the id of the current session, or of the last one while there is
// none.
func (s *Session) SessionID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

// Timeout returns the session timeout the server granted (the one asked for until a
// server has answered).
func (s *Session) Timeout() time.Duration {
	if t := s.cw.timeout(); t > 0 {
		return t
	}
	return s.cfg.SessionTimeout
}

// Subscribe returns a channel of every state change from now on, in order, starting
// with an event for the current state; cancel stops the delivery and closes the
// channel. A subscriber that does not keep up does not block the Session: its events
// queue up in memory.
func (s *Session) Subscribe() (events <-chan Event, cancel func()) {
	sub := newSubscriber()
	s.mu.Lock()
	if s.state == StateClosed {
		s.mu.Unlock()
		sub.push(Event{State: StateClosed, SessionID: s.sessionID})
		sub.close()
		return sub.out, sub.cancel
	}
	sub.push(Event{State: s.state, SessionID: s.sessionID})
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	var once sync.Once
	return sub.out, func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.subs, sub)
			s.mu.Unlock()
			sub.cancel()
		})
	}
}

// WaitConnected blocks until the Session is connected or ctx ends.
func (s *Session) WaitConnected(ctx context.Context) error {
	events, cancel := s.Subscribe()
	defer cancel()
	for {
		select {
		case ev, ok := <-events:
			if !ok || ev.State == StateClosed {
				return ErrClosed
			}
			if ev.State == StateConnected {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Closed is closed once Close is called.
func (s *Session) Closed() <-chan struct{} { return s.closed }

// Close ends the session: its ephemeral nodes go at once, and subscribers get
// StateClosed. It is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.state == StateClosed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.state = StateClosed
	close(s.closed)
	s.mu.Unlock()
	s.conn.Close()
	s.zkEvents.close()
	<-s.done
	return nil
}

// run turns the client's session events into the Session's states, and declares the
// session lost when the client stays disconnected for its whole timeout.
func (s *Session) run() {
	defer close(s.done)
	defer s.broadcastClosed()
	var lostTimer *time.Timer
	var lostC <-chan time.Time
	stopTimer := func() {
		if lostTimer != nil {
			lostTimer.Stop()
			lostTimer, lostC = nil, nil
		}
	}
	defer stopTimer()
	for {
		select {
		case <-s.closed:
			return
		case <-lostC:
			lostTimer, lostC = nil, nil
			s.logger.Warn("session lost: disconnected for its whole timeout", "session_id", hexID(s.SessionID()),
				"timeout", s.Timeout())
			s.transition(StateLost, 0)
		case <-s.zkEvents.ready():
			for _, ev := range s.zkEvents.drain() {
				switch ev.State {
				case zk.StateHasSession:
					stopTimer()
					id := s.conn.SessionID()
					if id == s.SessionID() {
						s.awaitSetWatches()
					}
					s.transition(StateConnected, id)
				case zk.StateExpired:
					stopTimer()
					s.logger.Warn("session expired", "session_id", hexID(s.SessionID()))
					s.transition(StateLost, 0)
				case zk.StateDisconnected, zk.StateConnecting:
					select {
					case <-s.cw.setWatches: // from an earlier connection
					default:
					}
					if s.State() == StateConnected {
						s.transition(StateSuspended, 0)
						lostTimer = time.NewTimer(s.Timeout())
						lostC = lostTimer.C
					}
				case zk.StateAuthFailed:
					s.logger.Error("authentication failed", "server", ev.Server)
				}
			}
		}
	}
}

// awaitSetWatches holds back the news of a reconnection to the same session until the
// client has re-sent its watches (SetWatches), or for at most setWatchesWait when it has
// none to send. go-zookeeper/zk v1.0.4 reads its last zxid to build SetWatches while
// its new receive loop updates it from replies to requests queued before SetWatches: a
// data race (go-zookeeper/zk#35, unfixed) that the race detector reports. Recipes wait
// for StateConnected before they send again, so their requests then queue after it.
func (s *Session) awaitSetWatches() {
	t := time.NewTimer(setWatchesWait)
	defer t.Stop()
	select {
	case <-s.cw.setWatches:
	case <-t.C:
	case <-s.closed:
	}
}

// setWatchesWait bounds awaitSetWatches; the client sends SetWatches, if at all, right
// after the handshake.
const setWatchesWait = 100 * time.Millisecond

// transition moves the Session to state (id: the session's id, for StateConnected) and
// tells the subscribers.
func (s *Session) transition(state State, id int64) {
	s.mu.Lock()
	if s.state == StateClosed {
		s.mu.Unlock()
		return
	}
	ev := Event{State: state, SessionID: s.sessionID}
	if state == StateConnected {
		ev.NewSession = s.sessionID != 0 && id != s.sessionID
		ev.SessionID, s.sessionID = id, id
	}
	if s.state == state && !ev.NewSession {
		s.mu.Unlock()
		return
	}
	s.state = state
	subs := make([]*subscriber, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	s.mu.Unlock()
	if state == StateConnected {
		select {
		case <-s.established:
		default:
			close(s.established)
		}
		if ev.NewSession {
			s.logger.Info("new session", "session_id", hexID(id))
		}
	}
	for _, sub := range subs {
		sub.push(ev)
	}
}

// broadcastClosed tells every subscriber the Session is closed and ends their channels.
func (s *Session) broadcastClosed() {
	s.mu.Lock()
	subs := s.subs
	s.subs = map[*subscriber]struct{}{}
	id := s.sessionID
	s.mu.Unlock()
	for sub := range subs {
		sub.push(Event{State: StateClosed, SessionID: id})
		sub.close()
	}
}

// ErrClosed is returned by a Session, and the recipes on it, once it is closed.
var ErrClosed = errors.New("coordinator: session closed")

func hexID(id int64) string { return fmt.Sprintf("0x%x", id) }
