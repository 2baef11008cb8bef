package web

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/task"
)

// Config configures the console: the keys of the web section.
type Config struct {
	// Servers are the coordination servers (key zk, flag --zk).
	Servers        []string
	SessionTimeout time.Duration
	// Access is how the service authenticates and the ACLs of the nodes it creates
	// (keys auth, auth_file, tls_ca, tls_cert, tls_key, roles).
	coordinator.Access
	// Listen is the console's HTTP address, host:port.
	Listen string
	// Users are the console's accounts, each "name:role:bcrypt-hash" with role viewer,
	// operator or admin; `paddock web passwd` prints the hash (HashPassword).
	Users []string
	// SessionTTL is how long a login lasts.
	SessionTTL time.Duration
	// SecureCookies sets the Secure flag on the console's cookies. Default false, so that
	// plain http://127.0.0.1 works; set it whenever the console is reached over HTTPS
	// (directly or through a proxy), which is every deployment but a local one.
	SecureCookies bool
	// TLSCert and TLSKey are PEM files of the console's certificate chain and private key
	// (keys https_cert, https_key; tls_cert and tls_key are the client certificate of
	// Access): with both, the console serves HTTPS only, and its cookies are Secure
	// whatever SecureCookies says.
	TLSCert string `config:"https_cert"`
	TLSKey  string `config:"https_key"`
	// AdminAddr is the paddock server's admin HTTP address (host:port) whose
	// /commands/mntr, srvr, cons and wchc the overview and /sessions show; empty skips
	// them.
	AdminAddr string
	// AdminAddrs name the admin HTTP ports of the ensemble's members, "ID=host:port"
	// (ID the member's server id), for the overview's p99 latencies and for members
	// whose client port does not answer srvr; other members are probed with srvr.
	AdminAddrs []string
	// AdminUser and AdminPassword are the digest credentials the console sends to the
	// admin port ("Authorization: digest user:password") when the server requires them
	// (its admin_auth): the super user or an identity with cdrwa on the root's ACL.
	AdminUser     string
	AdminPassword string
	// Root is the path the task, replicator and logcollector layouts live under.
	Root string
	// AuditRoot is the znode under which every change made through the console is
	// recorded.
	AuditRoot string
	// MaxBuffer is the servers' jute.maxbuffer (their max_buffer), the largest request
	// they take: the console refuses larger znode writes with a message naming it. 0
	// means ZooKeeper's default, 1048575 bytes.
	MaxBuffer int
}

// DefaultConfig returns the defaults: 127.0.0.1:8080, no users (Validate asks for one).
func DefaultConfig() Config {
	return Config{
		Servers:        []string{"127.0.0.1:2181"},
		SessionTimeout: 10 * time.Second,
		Listen:         "127.0.0.1:8080",
		SessionTTL:     12 * time.Hour,
		Root:           "/",
		AuditRoot:      "/paddock/audit",
	}
}

// Validate reports every problem of c as "key = value: what is allowed". It never
// prints a password hash.
func (c Config) Validate() error {
	errs := task.CheckConnection(c.Servers, c.SessionTimeout, c.Root)
	errs = append(errs, c.Access.Check()...)
	if c.MaxBuffer != 0 && (c.MaxBuffer < 1024 || c.MaxBuffer > 512<<20) {
		errs = append(errs, fmt.Errorf("max_buffer = %d: want the servers' jute.maxbuffer, 1024 bytes to 512 MiB, or 0 for 1048575", c.MaxBuffer))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen = %s: want host:port", c.Listen))
	}
	if c.AdminAddr != "" {
		if _, _, err := net.SplitHostPort(c.AdminAddr); err != nil {
			errs = append(errs, fmt.Errorf("admin_addr = %s: want host:port, or empty for none", c.AdminAddr))
		}
	}
	if _, err := parseAdminAddrs(c.AdminAddrs); err != nil {
		errs = append(errs, err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, fmt.Errorf("https_cert = %q, https_key = %q: want both (HTTPS) or neither (plain HTTP)", c.TLSCert, c.TLSKey))
	}
	if c.SessionTTL < time.Second {
		errs = append(errs, fmt.Errorf("session_ttl = %v: want at least 1s", c.SessionTTL))
	}
	if err := checkPath(c.AuditRoot); err != nil || c.AuditRoot == "/" {
		errs = append(errs, fmt.Errorf("audit_root = %s: want an absolute path below /, such as /paddock/audit", c.AuditRoot))
	}
	if len(c.Users) == 0 {
		errs = append(errs, errors.New("users = []: want at least one name:role:bcrypt-hash (paddock web passwd prints one)"))
	}
	if _, err := parseUsers(c.Users); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// A role says what a user may do; a higher role may do everything a lower one may.
type role int

const (
	roleViewer   role = iota + 1 // reads only
	roleOperator                 // also writes znodes, runs tasks, toggles replication, edits sources
	roleAdmin                    // everything, incl. creating and deleting replication tasks
)

func (r role) String() string {
	switch r {
	case roleViewer:
		return "viewer"
	case roleOperator:
		return "operator"
	case roleAdmin:
		return "admin"
	}
	return fmt.Sprintf("role(%d)", int(r))
}

func parseRole(s string) (role, bool) {
	for _, r := range []role{roleViewer, roleOperator, roleAdmin} {
		if r.String() == s {
			return r, true
		}
	}
	return 0, false
}

// A user is one parsed entry of Config.Users.
type user struct {
	name string
	role role
	hash []byte
}

// parseUsers parses "name:role:hash" entries; errors show the name and role only.
func parseUsers(entries []string) (map[string]user, error) {
	users := make(map[string]user, len(entries))
	var errs []error
	for i, e := range entries {
		name, rest, _ := strings.Cut(e, ":")
		roleName, hash, _ := strings.Cut(rest, ":")
		shown := fmt.Sprintf("users[%d] = %s:%s:<hash>", i, name, roleName)
		r, ok := parseRole(roleName)
		switch {
		case name == "" || strings.ContainsAny(name, " \t"):
			errs = append(errs, fmt.Errorf("%s: want a user name without blanks", shown))
		case !ok:
			errs = append(errs, fmt.Errorf("%s: want role viewer, operator or admin", shown))
		case !validHash(hash):
			errs = append(errs, fmt.Errorf("%s: want a bcrypt hash after the role (paddock web passwd prints one)", shown))
		case users[name].name != "":
			errs = append(errs, fmt.Errorf("%s: user given twice", shown))
		default:
			users[name] = user{name: name, role: r, hash: []byte(hash)}
		}
	}
	return users, errors.Join(errs...)
}

func validHash(hash string) bool {
	_, err := bcrypt.Cost([]byte(hash))
	return err == nil
}

// HashPassword returns pw's bcrypt hash (default cost), for a Users entry.
func HashPassword(pw string) (string, error) {
	if pw == "" {
		return "", errors.New("web: empty password")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("web: hash password: %w", err)
	}
	return string(h), nil
}

// NewPassword returns a random password of 20 letters and digits (about 119 bits).
func NewPassword() string {
	const alphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	return randomString(alphabet, 20)
}

// randomString draws n characters of alphabet from crypto/rand, without modulo bias.
func randomString(alphabet string, n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	limit := 256 - 256%len(alphabet)
	for len(out) < n {
		rand.Read(buf) // never fails (crypto/rand since Go 1.24)
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out)
}

// randomToken returns 32 random bytes as URL-safe text: session ids and CSRF tokens.
func randomToken() string {
	return randomString("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", 43)
}
