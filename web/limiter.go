package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Failed-login limits (docs/security.md explains the choice):
//
//   - per user name and client address, failures past loginFreeFailures wait
//     loginBaseDelay, doubling with each further failure up to loginMaxDelay; a success
//     clears them, and they are forgotten loginForget after the last failure;
//   - per user, the failures of attempts from browsers that never logged in as that
//     user draw on a budget of loginUserBudget, refilled one every loginUserRefill: when
//     it is spent, such attempts wait for the next refill. A browser that logged in as
//     the user (it holds that user's device cookie) does not draw on the budget, so
//     guessing from any number of addresses cannot lock the user out of it.
const (
	loginFreeFailures = 3
	loginBaseDelay    = time.Second
	loginMaxDelay     = 15 * time.Minute
	loginForget       = time.Hour
	loginUserBudget   = 30
	loginUserRefill   = time.Minute
	// loginMaxEntries bounds the per-address records, and the budgets of names that are
	// not users; past it the oldest record, or a full or unknown name's budget, goes.
	// Names that are not users have budgets too, so that a spent budget does not tell
	// which names are users.
	loginMaxEntries = 10000
	// deviceTTL is how long a browser is trusted after a login.
	deviceTTL    = 30 * 24 * time.Hour
	deviceCookie = "paddock_device"
)

// loginLimiter keeps the failed-login records. Safe for concurrent use.
type loginLimiter struct {
	now func() time.Time
	key []byte // signs device cookies; random per process, so a restart forgets them

	mu      sync.Mutex
	entries map[string]*failEntry    // by user NUL address; guarded by mu
	budgets map[string]*budgetBucket // by user name; guarded by mu
	// unknownBudgets counts the budgets of names that are not users; guarded by mu.
	unknownBudgets int
}

type failEntry struct {
	failures int
	last     time.Time
}

// until returns when the entry may try again.
func (e *failEntry) until() time.Time {
	if e.failures < loginFreeFailures {
		return e.last
	}
	d := loginBaseDelay << min(e.failures-loginFreeFailures, 30)
	return e.last.Add(min(d, loginMaxDelay))
}

// budgetBucket is a token bucket of failures: tokens as of at.
type budgetBucket struct {
	tokens float64
	at     time.Time
	known  bool // a configured user's: never forgotten
}

func (b *budgetBucket) refill(now time.Time) {
	b.tokens = min(loginUserBudget, b.tokens+float64(now.Sub(b.at))/float64(loginUserRefill))
	b.at = now
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand since Go 1.24)
	return &loginLimiter{now: now, key: key, entries: map[string]*failEntry{}, budgets: map[string]*budgetBucket{}}
}

// A loginAttempt names who tries: the user name, the client address, whether the
// name is a configured user and whether the browser is trusted for it.
type loginAttempt struct {
	user    string
	addr    string
	known   bool
	trusted bool
}

func (a loginAttempt) entryKey() string {
	if !a.known {
		return "\x00" + a.addr // unknown names share one record per address
	}
	return a.user + "\x00" + a.addr
}

// wait returns how long until a may try, 0 if it may now.
func (l *loginLimiter) wait(a loginAttempt) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var until time.Time
	if e := l.entries[a.entryKey()]; e != nil && now.Sub(e.last) > loginForget {
		delete(l.entries, a.entryKey())
	} else if e != nil {
		until = e.until()
	}
	if b := l.budgets[a.user]; !a.trusted && b != nil {
		b.refill(now)
		if b.tokens < 1 {
			until = maxTime(until, now.Add(time.Duration((1-b.tokens)*float64(loginUserRefill))))
		}
	}
	return max(until.Sub(now), 0)
}

// fail records a failed attempt.
func (l *loginLimiter) fail(a loginAttempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	k := a.entryKey()
	e := l.entries[k]
	if e == nil {
		l.makeRoomLocked(now)
		e = &failEntry{}
		l.entries[k] = e
	}
	if now.Sub(e.last) > loginForget {
		e.failures = 0
	}
	e.failures++
	e.last = now
	if !a.trusted {
		b := l.budgets[a.user]
		if b == nil {
			l.makeBudgetRoomLocked(now)
			b = &budgetBucket{tokens: loginUserBudget, at: now, known: a.known}
			l.budgets[a.user] = b
			if !a.known {
				l.unknownBudgets++
			}
		}
		b.refill(now)
		b.tokens = max(b.tokens-1, 0)
	}
}

// succeed clears the attempt's own record; the user's budget is left as it is.
func (l *loginLimiter) succeed(a loginAttempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, a.entryKey())
}

// makeRoomLocked forgets stale records when there is no room, then the oldest down to
// nine tenths of the bound, so that the O(n) sweep runs once per n/10 new records.
func (l *loginLimiter) makeRoomLocked(now time.Time) {
	if len(l.entries) < loginMaxEntries {
		return
	}
	type aged struct {
		key  string
		last time.Time
	}
	var live []aged
	for k, e := range l.entries {
		if now.Sub(e.last) > loginForget {
			delete(l.entries, k)
		} else {
			live = append(live, aged{k, e.last})
		}
	}
	if excess := len(live) - loginMaxEntries*9/10; excess > 0 {
		slices.SortFunc(live, func(a, b aged) int { return a.last.Compare(b.last) })
		for _, e := range live[:excess] {
			delete(l.entries, e.key)
		}
	}
}

// makeBudgetRoomLocked forgets full budgets (as good as none) when the names that are not
// users have no room, then others of theirs down to nine tenths of the bound.
// Configured users' budgets are never forgotten.
func (l *loginLimiter) makeBudgetRoomLocked(now time.Time) {
	if l.unknownBudgets < loginMaxEntries {
		return
	}
	for _, pass := range []bool{true, false} {
		for name, b := range l.budgets {
			if l.unknownBudgets <= loginMaxEntries*9/10 {
				return
			}
			if b.refill(now); !b.known && (!pass || b.tokens >= loginUserBudget) {
				delete(l.budgets, name)
				l.unknownBudgets--
			}
		}
	}
}

// size returns the number of records and budgets kept (for tests).
func (l *loginLimiter) size() (records, budgets int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries), len(l.budgets)
}

// deviceToken returns a device cookie value that trusts this browser for user until
// deviceTTL from now: user, expiry and an HMAC of both.
func (l *loginLimiter) deviceToken(user string) string {
	exp := strconv.FormatInt(l.now().Add(deviceTTL).Unix(), 10)
	u := base64.RawURLEncoding.EncodeToString([]byte(user))
	return u + "." + exp + "." + l.sign(u+"."+exp)
}

// trusts reports whether token is a live device cookie for user.
func (l *loginLimiter) trusts(token, user string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	if !hmac.Equal([]byte(parts[2]), []byte(l.sign(parts[0]+"."+parts[1]))) {
		return false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	name, _ := base64.RawURLEncoding.DecodeString(parts[0])
	return err == nil && l.now().Unix() < exp && string(name) == user
}

func (l *loginLimiter) sign(msg string) string {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
