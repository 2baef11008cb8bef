package testutil

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the "mysql" database/sql driver
)

// The Debian mariadb-server package (MariaDB 10.11) puts its programs here; test/deps.sh
// installs it.
const (
	mariadbdPath  = "/usr/sbin/mariadbd"
	installDBName = "mariadb-install-db"
)

// mariaDBRedoLog is the InnoDB redo log size of the template and of every instance: the
// default 96 MB would make each copy of the template cost more than an install.
const mariaDBRedoLog = "16M"

// DefaultMariaDBStartTimeout bounds how long a started MariaDB may take to answer, unless
// MariaDBOptions.StartTimeout says otherwise. A fresh instance answers in about 0.2 s.
const DefaultMariaDBStartTimeout = 30 * time.Second

// MariaDBOptions configure a throwaway MariaDB. The zero value is a server without a
// binary log, with a server id unique within the test binary.
type MariaDBOptions struct {
	// Binlog turns the binary log on (--log-bin, files DataDir/bin.NNNNNN): the server
	// can then be a replication source.
	Binlog bool
	// BinlogFormat is --binlog-format when Binlog is set; empty means ROW.
	BinlogFormat string
	// ServerID is --server-id; zero picks one no other instance of this test binary has.
	ServerID uint32
	// Args are more mariadbd options, after the harness's own (the last of a repeated
	// option wins), e.g. "--binlog-row-image=MINIMAL".
	Args []string
	// StartTimeout bounds the wait for the server to answer; zero means
	// DefaultMariaDBStartTimeout.
	StartTimeout time.Duration
}

// MariaDB is a throwaway MariaDB server process on 127.0.0.1 with its data in a
// temporary directory. root has an empty password over TCP. The kernel kills the server
// if the test binary dies, and the test's cleanup kills it if it still runs.
type MariaDB struct {
	Dir      string // holds data/ (the datadir, with the binary log), tmp/, the socket, pid file and log
	ServerID uint32
	Ready    time.Duration // how long the last start took until the server answered

	tb    testing.TB
	opts  MariaDBOptions
	port  int
	child *Child // the running (or last) mariadbd process
}

// errMariaDBPortTaken says that another process took the port before mariadbd bound it.
var errMariaDBPortTaken = errors.New("testutil: mariadb port already in use")

// mariaDBServerIDs hands out server ids: unique within the test binary.
var mariaDBServerIDs atomic.Uint32

// StartMariaDB starts a MariaDB on a free port in a copy of a freshly installed datadir
// and waits until it answers a query. If the port is taken before the server binds it,
// it tries again on another. Failing to start fails tb; a missing MariaDB installation
// fails it with a message saying how to install it (tests never skip on it).
func StartMariaDB(tb testing.TB, opts MariaDBOptions) *MariaDB {
	tb.Helper()
	m := &MariaDB{Dir: tb.TempDir(), tb: tb, opts: opts, ServerID: opts.ServerID}
	if m.ServerID == 0 {
		m.ServerID = 100 + mariaDBServerIDs.Add(1)
	}
	template, err := mariaDBTemplate()
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.CopyFS(m.dataDir(), os.DirFS(template)); err != nil {
		tb.Fatalf("testutil: copy the mariadb template datadir: %v", err)
	}
	if err := os.Mkdir(m.tmpDir(), 0o700); err != nil {
		tb.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		if m.port, err = FreePort(); err != nil {
			tb.Fatal(err)
		}
		err = m.start()
		if err == nil {
			return m
		}
		if !errors.Is(err, errMariaDBPortTaken) || attempt == 3 {
			tb.Fatal(err)
		}
	}
}

// Addr returns the server's address, 127.0.0.1:port.
func (m *MariaDB) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port)) }

// Port returns the server's TCP port.
func (m *MariaDB) Port() int { return m.port }

// DSN returns a go-sql-driver/mysql DSN for root (empty password) over TCP, with db as
// the default database (empty for none).
func (m *MariaDB) DSN(db string) string {
	return fmt.Sprintf("root@tcp(%s)/%s", m.Addr(), db)
}

// Open returns a connection pool to the server with db as the default database; it is
// closed when the test ends.
func (m *MariaDB) Open(tb testing.TB, db string) *sql.DB {
	tb.Helper()
	conn, err := sql.Open("mysql", m.DSN(db))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

// LogPath returns the path of the server's error log (its stdout and stderr).
func (m *MariaDB) LogPath() string { return filepath.Join(m.Dir, "mariadb.log") }

// LogTail returns the last n lines of the server's log, for failure messages.
func (m *MariaDB) LogTail(n int) string { return logTail(m.LogPath(), n) }

// Kill sends SIGKILL and waits for the process to be gone: a crash. Idempotent.
func (m *MariaDB) Kill() { m.child.Kill() }

// Stop shuts the server down cleanly (SIGTERM) and waits for it, killing it if it takes
// more than 30 s.
func (m *MariaDB) Stop() error { return m.child.Stop(30 * time.Second) }

// Restart starts the server again on its data and port after Stop or Kill, and waits
// until it answers. It does not touch tb, so any goroutine may call it.
func (m *MariaDB) Restart() error {
	select {
	case <-m.child.Exited():
	default:
		return fmt.Errorf("testutil: mariadb at %s still runs: Stop or Kill it before Restart", m.Addr())
	}
	return m.start()
}

// start launches mariadbd on m.port and waits until it answers.
func (m *MariaDB) start() error {
	var err error
	m.child, err = StartChild(m.tb, m.LogPath(), nil, mariadbdPath, m.args()...)
	if err != nil {
		return fmt.Errorf("testutil: start mariadbd: %w", err)
	}
	if err := m.waitReady(); err != nil {
		m.child.Kill()
		return err
	}
	m.Ready = time.Since(m.child.Started)
	return nil
}

// args returns mariadbd's command line.
func (m *MariaDB) args() []string {
	args := []string{
		"--no-defaults",
		"--datadir=" + m.dataDir(),
		"--port=" + strconv.Itoa(m.port),
		"--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(m.Dir, "mariadb.sock"),
		"--pid-file=" + filepath.Join(m.Dir, "mariadb.pid"),
		"--tmpdir=" + m.tmpDir(), // its own: internal temporary tables must not meet other processes' files
		"--server-id=" + strconv.FormatUint(uint64(m.ServerID), 10),
		"--innodb-log-file-size=" + mariaDBRedoLog,
		"--innodb-buffer-pool-size=64M",
		"--skip-name-resolve",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root") // mariadbd refuses to run as root otherwise
	}
	if m.opts.Binlog {
		format := m.opts.BinlogFormat
		if format == "" {
			format = "ROW"
		}
		args = append(args, "--log-bin=bin", "--binlog-format="+format)
	}
	return append(args, m.opts.Args...)
}

func (m *MariaDB) dataDir() string { return filepath.Join(m.Dir, "data") }

func (m *MariaDB) tmpDir() string { return filepath.Join(m.Dir, "tmp") }

func (m *MariaDB) startTimeout() time.Duration {
	if m.opts.StartTimeout > 0 {
		return m.opts.StartTimeout
	}
	return DefaultMariaDBStartTimeout
}

// waitReady polls every 20 ms until the server answers SELECT 1, the process exits, or
// the start timeout passes.
func (m *MariaDB) waitReady() error {
	deadline := m.child.Started.Add(m.startTimeout())
	db, err := sql.Open("mysql", m.DSN("")+"?timeout=1s")
	if err != nil {
		return err
	}
	defer db.Close()
	for {
		select {
		case <-m.child.Exited():
			tail := m.LogTail(30)
			if strings.Contains(tail, "Address already in use") {
				return fmt.Errorf("%w: %s", errMariaDBPortTaken, m.Addr())
			}
			return fmt.Errorf("testutil: mariadbd exited during start-up (%v); log tail:\n%s", m.child.ExitErr(), tail)
		default:
		}
		if answers(db) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testutil: mariadb at %s did not answer within %v of starting; log tail:\n%s",
				m.Addr(), m.startTimeout(), m.LogTail(30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answers reports whether the server runs a query.
func answers(db *sql.DB) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var one int
	return db.QueryRowContext(ctx, "SELECT 1").Scan(&one) == nil
}

// The template datadir, installed once per test binary (and reused by later binaries:
// see mariaDBTemplate).
var (
	templateOnce sync.Once
	templateDir  string
	templateErr  error
)

// mariaDBTemplate returns a datadir fresh from mariadb-install-db that instances copy.
// It lives in the system temporary directory under a name derived from the mariadbd
// binary and the install options, so that later test binaries reuse it and a new
// MariaDB version gets a new one; it is built under a temporary name and renamed into
// place, so concurrent test binaries never see a half-installed template.
func mariaDBTemplate() (string, error) {
	templateOnce.Do(func() { templateDir, templateErr = installMariaDBTemplate() })
	return templateDir, templateErr
}

// installMariaDBTemplate finds or installs the template datadir.
func installMariaDBTemplate() (string, error) {
	key, err := mariaDBTemplateKey()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("paddock-mariadb-template-%d-%s", os.Geteuid(), key))
	if _, err := os.Stat(filepath.Join(dir, "mysql")); err == nil {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "paddock-mariadb-install-")
	if err != nil {
		return "", fmt.Errorf("testutil: mariadb template: %w", err)
	}
	defer os.RemoveAll(tmp) // what is left of it when the rename did not happen
	if err := runInstallDB(filepath.Join(tmp, "data")); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, "data"), dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "mysql")); statErr == nil {
			return dir, nil // another test binary installed it first
		}
		return "", fmt.Errorf("testutil: mariadb template: %w", err)
	}
	return dir, nil
}

// installArgs are mariadb-install-db's options after --no-defaults and --datadir.
var installArgs = []string{
	"--auth-root-authentication-method=normal",
	"--skip-test-db",
	"--innodb-log-file-size=" + mariaDBRedoLog,
}

// runInstallDB runs mariadb-install-db into dataDir.
func runInstallDB(dataDir string) error {
	installDB, err := exec.LookPath(installDBName)
	if err != nil {
		return fmt.Errorf("testutil: MariaDB is not installed (%v): run `make test`, which installs "+
			"the Debian mariadb-server package (or apt-get install -y mariadb-server)", err)
	}
	args := append([]string{"--no-defaults", "--datadir=" + dataDir}, installArgs...)
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(installDB, args...)
	cmd.SysProcAttr = childProcAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testutil: %s %v: %v\n%s", installDB, args, err, out)
	}
	return nil
}

// mariaDBTemplateKey names the template after mariadbd's size and modification time and
// the install options.
func mariaDBTemplateKey() (string, error) {
	st, err := os.Stat(mariadbdPath)
	if err != nil {
		return "", fmt.Errorf("testutil: MariaDB is not installed (%v): run `make test`, which installs "+
			"the Debian mariadb-server package (or apt-get install -y mariadb-server)", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d %d %q", st.Size(), st.ModTime().UnixNano(), installArgs)
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}
