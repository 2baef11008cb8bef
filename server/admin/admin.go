package admin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"
)

// Version is the ZooKeeper version paddock reports in srvr, stat, envi (zookeeper.version=)
// and mntr (zk_version). It has ZooKeeper's "<release>-<build>" shape: clients gate features
// on the release (kazoo's server_version() takes the leading digits and dots of envi's
// zookeeper.version), and go-zookeeper/zk's FLWSrvr only accepts [A-Za-z0-9.-] here.
const Version = "3.8.4-paddock"

// Server modes, as Stats.Mode and ZooKeeper's "Mode:" line name them.
const (
	ModeStandalone = "standalone"
	ModeLeader     = "leader"
	ModeFollower   = "follower"
	ModeObserver   = "observer"
	ModeReadOnly   = "read-only"
)

// Config configures the admin commands. It is immutable after New.
type Config struct {
	// FourLetterWords is the four-letter-word whitelist (4lw.commands.whitelist); "*" allows
	// every word. srvr is always allowed, as in ZooKeeper (zkServer.sh status needs it).
	// Names paddock does not answer are ignored.
	FourLetterWords []string
	// ReadOnlyMode tells that read-only mode is enabled (readonlymode.enabled); isro is then
	// always allowed, as in ZooKeeper.
	ReadOnlyMode bool
	// Server is what conf prints.
	Server ServerConf
	// FsyncWarning is the fsync duration above which an fsync counts in
	// fsync_threshold_exceed_count (fsync.warningthresholdms).
	FsyncWarning time.Duration
	// Started is when the server started serving; uptime counts from it. Zero means the
	// time of New.
	Started time.Time
	// BuildTime is the build date srvr prints. Zero means: the commit time recorded in the
	// binary, else the executable's modification time.
	BuildTime time.Time
}

// ServerConf is the server configuration the conf command prints.
type ServerConf struct {
	// ClientPort is the port the client listener is bound to; SecureClientPort the TLS
	// one's. Either is -1 when there is no such listener.
	ClientPort       int
	SecureClientPort int
	// DataDir holds the snapshots; DataLogDir the log, or "" when it is DataDir.
	DataDir    string
	DataLogDir string
	TickTime   time.Duration
	// MaxClientCnxns is the per-IP connection limit, 0 for none.
	MaxClientCnxns    int
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	ServerID          int64
}

// DefaultConfig returns ZooKeeper's defaults: only srvr whitelisted, 1 s fsync warning.
func DefaultConfig() Config {
	return Config{FourLetterWords: []string{"srvr"}, FsyncWarning: time.Second}
}

// Validate checks the fields that have a forbidden range.
func (c *Config) Validate() error {
	var errs []error
	if c.FsyncWarning < 0 {
		errs = append(errs, fmt.Errorf("fsync_warning = %v: must be >= 0", c.FsyncWarning))
	}
	if c.Server.ClientPort < -1 || c.Server.ClientPort > 65535 {
		errs = append(errs, fmt.Errorf("client_port = %d: must be in [0, 65535], or -1 for none", c.Server.ClientPort))
	}
	return errors.Join(errs...)
}

// Admin answers the four-letter words and the admin HTTP endpoints from a Source, and keeps
// the latency figures and Prometheus metrics the server feeds it. All methods are safe for
// concurrent use. Admin starts no goroutines and opens no sockets: the server owns the
// connections and the HTTP listener and hands them to Serve and Handler.
type Admin struct {
	cfg     Config
	src     Source
	logger  *slog.Logger
	allowed map[string]bool // four-letter words the whitelist allows; immutable
	version string          // Version plus build date, as srvr's first line shows it
	started time.Time

	// latency is every request (srvr's min/avg/max); read and update split it as ZooKeeper's
	// readlatency/updatelatency summaries do; fsync is fsynctime. Reset by srst.
	latency, read, update, fsync avgMinMax
	fsyncSlow                    counter // fsyncs longer than cfg.FsyncWarning; reset by srst
	prom                         *promMetrics
}

// New returns an Admin reading from src. It does not call src.
func New(cfg Config, src Source, logger *slog.Logger) (*Admin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	if src == nil {
		return nil, errors.New("admin: nil Source")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Admin{cfg: cfg, src: src, logger: logger, started: cfg.Started}
	if a.started.IsZero() {
		a.started = time.Now()
	}
	a.allowed = whitelist(cfg.FourLetterWords, cfg.ReadOnlyMode)
	built := cfg.BuildTime
	if built.IsZero() {
		built = buildTime(a.started)
	}
	// ZooKeeper ≥ 3.7 prints "yyyy-MM-dd HH:mm zz"; go-zookeeper/zk's FLWSrvr (and so its
	// test harness) only parses the older "MM/dd/yyyy HH:mm zz", which is what we print.
	a.version = Version + ", built on " + built.UTC().Format("01/02/2006 15:04") + " GMT"
	for _, s := range []*avgMinMax{&a.latency, &a.read, &a.update, &a.fsync} {
		s.reset()
	}
	a.prom = newPromMetrics(a)
	return a, nil
}

// whitelist resolves a 4lw.commands.whitelist value as ZooKeeper's FourLetterCommands does.
func whitelist(names []string, readOnly bool) map[string]bool {
	allowed := map[string]bool{"srvr": true}
	if readOnly {
		allowed["isro"] = true
	}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "*" {
			for _, c := range commands {
				allowed[c.word] = true
			}
			break
		}
		if _, ok := byWord[n]; ok {
			allowed[n] = true
		}
	}
	return allowed
}

// buildTime returns the commit time stamped into the binary, else the executable's
// modification time, else fallback.
func buildTime(fallback time.Time) time.Time {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.time" {
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					return t
				}
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			return fi.ModTime()
		}
	}
	return fallback
}

// IsFourLetterWord reports whether the first four bytes of a connection, read as the
// big-endian int32 a frame length would be, are one of the four-letter words paddock
// answers, and which. Anything else, ZooKeeper's other words included, is not a four-letter
// word and the bytes are a frame length.
func IsFourLetterWord(code int32) (string, bool) {
	w, ok := byCode[code]
	return w, ok
}

// Serve writes the answer to one four-letter word to w; the caller then closes the
// connection. A word the whitelist does not allow gets ZooKeeper's refusal line. Serve
// returns an error only for a word IsFourLetterWord does not know (writing nothing) or when
// writing to w fails.
func (a *Admin) Serve(w io.Writer, word string) error {
	c, ok := byWord[word]
	if !ok {
		return fmt.Errorf("admin: %q is not a four-letter word", word)
	}
	var b bytes.Buffer
	switch {
	case a.allowed[word] && c.needsServing && a.src.Stats().NotServing:
		b.WriteString(notServing + "\n")
	case a.allowed[word]:
		c.text(a, &b)
	default:
		b.WriteString(word + " is not executed because it is not in the whitelist.\n")
	}
	a.logger.Debug("four letter word", "word", word, "allowed", a.allowed[word], "bytes", b.Len())
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("admin: write %s answer: %w", word, err)
	}
	return nil
}

// notServing is ZooKeeper's answer to a word that reads the server's state while the
// server is not running (on a member: while it has no leader).
const notServing = "This ZooKeeper instance is not currently serving requests"

// Allowed reports whether the whitelist allows word.
func (a *Admin) Allowed(word string) bool { return a.allowed[word] }

func (a *Admin) uptime() time.Duration { return time.Since(a.started) }
