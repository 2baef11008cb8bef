package web

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/crypto/bcrypt"
)

const (
	sessionCookie = "paddock_session"
	csrfCookie    = "paddock_csrf"    // readable by the page's script, which echoes it
	csrfHeader    = "X-CSRF-Token"    // for API clients
	csrfField     = "csrf_token"      // for form posts
	ctxSession    = "paddock.session" // gin context key of the *webSession
)

// A webSession is one login. Its fields never change after creation.
type webSession struct {
	id      string
	user    string
	role    role
	csrf    string
	expires time.Time
}

// sessionStore keeps the logins in memory: a restart logs everyone out.
type sessionStore struct {
	ttl time.Duration
	now func() time.Time

	mu       sync.Mutex
	sessions map[string]*webSession // by id; guarded by mu
}

func newSessionStore(ttl time.Duration, now func() time.Time) *sessionStore {
	return &sessionStore{ttl: ttl, now: now, sessions: make(map[string]*webSession)}
}

func (s *sessionStore) create(u user) *webSession {
	ws := &webSession{id: randomToken(), user: u.name, role: u.role, csrf: randomToken(), expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
	s.sessions[ws.id] = ws
	return ws
}

func (s *sessionStore) get(id string) *webSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.sessions[id]
	if ws == nil || s.now().After(ws.expires) {
		delete(s.sessions, id)
		return nil
	}
	return ws
}

func (s *sessionStore) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
}

// count returns the number of live logins.
func (s *sessionStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
	return len(s.sessions)
}

func (s *sessionStore) sweepLocked() {
	now := s.now()
	for id, ws := range s.sessions {
		if now.After(ws.expires) {
			delete(s.sessions, id)
		}
	}
}

// dummyHash is compared against when the user is unknown, so that the answer takes
// as long as for a known user with a wrong password.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("paddock"), bcrypt.DefaultCost)
	return h
})

// authenticate checks name and password sent from client address ip by a browser
// holding device cookie device (or ""); a *loginError says why not.
func (c *Console) authenticate(ip, device, name, password string) (*webSession, *loginError) {
	u, ok := c.users[name]
	a := loginAttempt{user: name, addr: ip, known: ok, trusted: ok && c.limiter.trusts(device, name)}
	if wait := c.limiter.wait(a); wait > 0 {
		c.logger.Warn("login refused: too many failures", "user", logName(name), "client_ip", ip,
			"retry_after", wait.Round(time.Second))
		return nil, &loginError{status: http.StatusTooManyRequests, retryAfter: wait,
			msg: "too many failed logins: try again later"}
	}
	hash := u.hash
	if !ok {
		hash = dummyHash()
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || !ok {
		c.limiter.fail(a)
		c.logger.Warn("login failed", "user", logName(name), "client_ip", ip)
		return nil, &loginError{status: http.StatusUnauthorized, msg: "wrong user name or password"}
	}
	c.limiter.succeed(a)
	c.logger.Info("login", "user", name, "role", u.role.String(), "client_ip", ip)
	return c.sessions.create(u), nil
}

type loginError struct {
	status     int
	retryAfter time.Duration
	msg        string
}

func (e *loginError) writeHeader(g *gin.Context) {
	if e.retryAfter > 0 {
		g.Header("Retry-After", strconv.Itoa(int((e.retryAfter+time.Second-1)/time.Second)))
	}
}

func (c *Console) setSessionCookies(g *gin.Context, ws *webSession) {
	maxAge := int(c.cfg.SessionTTL / time.Second)
	if ws == nil {
		maxAge = -1
		ws = &webSession{}
	}
	secure := c.secureCookies()
	http.SetCookie(g.Writer, &http.Cookie{Name: sessionCookie, Value: ws.id, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
	http.SetCookie(g.Writer, &http.Cookie{Name: csrfCookie, Value: ws.csrf, Path: "/", MaxAge: maxAge,
		Secure: secure, SameSite: http.SameSiteStrictMode})
	if ws.user != "" { // a login: trust this browser for the user (loginLimiter)
		http.SetCookie(g.Writer, &http.Cookie{Name: deviceCookie, Value: c.limiter.deviceToken(ws.user), Path: "/",
			MaxAge: int(deviceTTL / time.Second), HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
	}
}

type loginRequest struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

func (c *Console) apiLogin(g *gin.Context) {
	var req loginRequest
	if err := g.ShouldBindJSON(&req); err != nil {
		apiError(g, http.StatusBadRequest, "want a JSON body {\"user\": …, \"password\": …}")
		return
	}
	ws, lerr := c.authenticate(g.ClientIP(), deviceOf(g), req.User, req.Password)
	if lerr != nil {
		lerr.writeHeader(g)
		apiError(g, lerr.status, lerr.msg)
		return
	}
	c.setSessionCookies(g, ws)
	g.JSON(http.StatusOK, gin.H{"user": ws.user, "role": ws.role.String(), "csrf_token": ws.csrf})
}

func (c *Console) logout(g *gin.Context) {
	ws := sessionOf(g)
	c.sessions.remove(ws.id)
	c.setSessionCookies(g, nil)
	c.logger.Info("logout", "user", ws.user)
	if isAPI(g) {
		g.JSON(http.StatusOK, gin.H{"ok": true})
		return
	}
	g.Redirect(http.StatusSeeOther, "/login")
}

// deviceOf returns the request's device cookie, "" if none.
func deviceOf(g *gin.Context) string {
	ck, err := g.Request.Cookie(deviceCookie)
	if err != nil {
		return ""
	}
	return ck.Value
}

func isAPI(g *gin.Context) bool { return strings.HasPrefix(g.Request.URL.Path, "/api/") }

func sessionOf(g *gin.Context) *webSession { return g.MustGet(ctxSession).(*webSession) }

// liveSession returns the request's login, nil if none.
func (c *Console) liveSession(g *gin.Context) *webSession {
	ck, err := g.Request.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	return c.sessions.get(ck.Value)
}

// requireSession lets through requests with a live login: others get 401 on the API and
// a redirect to /login on pages.
func (c *Console) requireSession(g *gin.Context) {
	ws := c.liveSession(g)
	if ws == nil {
		if isAPI(g) {
			apiError(g, http.StatusUnauthorized, "not logged in: POST /api/v1/login first")
		} else {
			g.Redirect(http.StatusSeeOther, "/login")
		}
		g.Abort()
		return
	}
	g.Set(ctxSession, ws)
}

// checkCSRF rejects state-changing requests whose token (header X-CSRF-Token or form
// field csrf_token) is not the session's.
func (c *Console) checkCSRF(g *gin.Context) {
	switch g.Request.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return
	}
	token := g.GetHeader(csrfHeader)
	if token == "" && !isAPI(g) {
		token = g.PostForm(csrfField)
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(sessionOf(g).csrf)) != 1 {
		c.deny(g, http.StatusForbidden, "missing or wrong CSRF token")
	}
}

// requireRole lets through sessions of at least role min.
func (c *Console) requireRole(min role) gin.HandlerFunc {
	return func(g *gin.Context) {
		if ws := sessionOf(g); ws.role < min {
			c.deny(g, http.StatusForbidden, "role "+ws.role.String()+" may not do this: it needs "+min.String())
		}
	}
}

func (c *Console) deny(g *gin.Context, status int, msg string) {
	if isAPI(g) {
		apiError(g, status, msg)
	} else {
		g.String(status, msg)
	}
	g.Abort()
}

// apiError answers {"error": msg}.
func apiError(g *gin.Context, status int, msg string) {
	g.JSON(status, gin.H{"error": msg})
}
