package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/paddock/paddock/configs"
	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/logcollector"
	"github.com/paddock/paddock/master"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/task"
	"github.com/paddock/paddock/web"
	"github.com/paddock/paddock/worker"
)

func newUpCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run the whole platform in one process: the server and the services on it",
		Long: `Run the whole platform in one process, on the embedded default: a standalone
coordination server (data under --data-dir), a master and two workers of the
task-scheduling cluster, a log collector (also the rebalancer) collecting the
platform's own log, <data-dir>/paddock.log, into <data-dir>/logs, and the web console.
It runs no replicator: run paddock replicator beside it for MySQL replication. On a
fresh data directory it makes the console's user admin with a random password, printed
once; <data-dir>/console-users holds the users.

Its ports, all on 127.0.0.1 by default:
  client   127.0.0.1:2181  --client-addr HOST:PORT, or --client-port PORT on 127.0.0.1
  admin    127.0.0.1:8081  --admin-addr HOST:PORT (four-letter words as JSON, /metrics); "" for none
  console  127.0.0.1:8080  --console-addr HOST:PORT
  metrics  127.0.0.1:8091  --metrics-port PORT: the master's /metrics; worker i's on PORT+i; 0 for none
A port another process holds stops paddock up, but for the admin port: the server logs
that it is not served and runs without it (the four-letter words answer on the client
port; the console's sessions and server pages are then empty).

Secure by default: everything listens on 127.0.0.1 unless told otherwise, and on the
first start the platform's credentials are made in <data-dir>/credentials, one file per
role (digest:<role>:<password>, mode 0600) and roles, their ACL ids. The services
authenticate with them and create their nodes with role ACLs (docs/security.md);
unauthenticated clients can neither submit tasks nor read the services' data. The
admin identity is the server's superuser, and the admin port's guarded commands (cons,
dump, envi, ...) answer it alone (admin.auth):
  curl -H "Authorization: digest $(cut -d: -f2- <data-dir>/credentials/admin)" \
    http://127.0.0.1:8081/commands/dump
To submit tasks from the command line:
  paddock task --auth-file <data-dir>/credentials/submitter \
    --roles-file <data-dir>/credentials/roles submit -- CMD...
Nodes an older paddock made open to all get their role ACLs at start.

The server reads the server section of --config FILE and PADDOCK_SERVER_* variables, as
paddock server does; the services connect to it.`,
		Args: cobra.NoArgs,
		RunE: runUp,
	}
	def := server.DefaultConfig()
	f := cmd.Flags()
	f.String("config", "", "YAML configuration `file` (its server section)")
	f.String("data-dir", def.DataDir, "`directory` for the server's data and the workers' task output")
	f.Int("workers", 2, "workers to run")
	f.Int("capacity", runtime.NumCPU(), "tasks each worker runs at once")
	addUpPortFlags(f)
	addUpRunAsFlags(f)
	return cmd
}

// addUpPortFlags adds paddock up's listening addresses, one flag per port (the table in
// the command's help and in the README), and --listen, the console's old flag, hidden.
func addUpPortFlags(f *pflag.FlagSet) {
	def := server.DefaultConfig()
	f.String("client-addr", upClientAddr, "`host:port` clients connect to (0.0.0.0:2181 or :2181 for every interface)")
	f.Int("client-port", 0, "client `port` on 127.0.0.1, in place of --client-addr")
	f.String("admin-addr", def.AdminAddr, "`host:port` of the admin HTTP server (commands as JSON, /metrics); empty disables it")
	f.String("console-addr", upConsoleAddr, "`host:port` of the web console")
	f.String("listen", upConsoleAddr, "the old name of --console-addr")
	_ = f.MarkHidden("listen") // only fails for a flag that does not exist
	f.Int("metrics-port", upMetricsPort, "the master serves /metrics on 127.0.0.1 at this `port`, worker i at port+i; 0 for none")
}

// upConsoleAddr and upMetricsPort are paddock up's console address and first metrics
// port when none is given.
const (
	upConsoleAddr = "127.0.0.1:8080"
	upMetricsPort = 8091
)

// upConsoleListen returns the console's address: --console-addr, or --listen, its old
// name, when only that is given.
func upConsoleListen(f *pflag.FlagSet) string {
	addr, _ := f.GetString("console-addr")
	if !f.Changed("console-addr") && f.Changed("listen") {
		addr, _ = f.GetString("listen")
	}
	return addr
}

func runUp(cmd *cobra.Command, _ []string) error {
	cfg, err := loadUpServer(cmd)
	if err != nil {
		return err
	}
	// The platform's log goes to stderr and to data/paddock.log, the demo source the
	// log collector collects.
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(cfg.DataDir, upLogName), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	defer logFile.Close()
	logger, err := newLoggerTo(cmd, io.MultiWriter(os.Stderr, logFile))
	if err != nil {
		return err
	}
	plat, err := platformCredentials(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("platform credentials: %w", err)
	}
	if cfg.SuperDigest == "" {
		cfg.SuperDigest = plat.superDigest
	} else {
		logger.Warn("super_digest is set: the platform's admin identity is not the superuser", "credentials", plat.dir)
	}
	// The admin port's guarded commands (cons, dump, envi...) answer the superuser only,
	// and the roles' digests are the ones the server knows (audit lines mark them).
	cfg.AdminAuth = true
	if cfg.KnownDigestsFile == "" {
		cfg.KnownDigestsFile = plat.rolesFile()
	}
	server.SetProcs(cfg.Procs)
	srv, err := server.New(cfg, logger.With("component", "server"))
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	// The console asks the admin port the server bound: none when --admin-addr is empty
	// or taken (the server warned and serves without it), never whatever else holds it.
	cfg.AdminAddr = ""
	if a := srv.AdminAddr(); a != nil {
		cfg.AdminAddr = a.String()
	}
	err = migrateUp(cmd.Context(), srv.Addr().String(), plat, logger)
	var services []upService
	if err == nil {
		services, err = upServices(cmd, cfg, srv.Addr().String(), logger, plat)
	}
	if err == nil {
		err = addDemoSource(cmd.Context(), srv.Addr().String(), cfg.DataDir, plat)
	}
	if err != nil {
		return errors.Join(err, srv.Close())
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	admin := cmp.Or(cfg.AdminAddr, "not served")
	logger.Info("platform up", "zk", srv.Addr().String(), "admin", admin, "services", len(services), "credentials", plat.dir)
	errs := make(chan error, len(services))
	var wg sync.WaitGroup
	for _, s := range services {
		wg.Go(func() {
			if err := s.Run(ctx); err != nil {
				errs <- prefixed(s.name, err)
				cancel()
			}
		})
	}
	select {
	case <-ctx.Done():
	case <-srv.Done():
		cancel()
	}
	wg.Wait() // the services first, while the server still answers them
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(append(all, srv.Close())...)
}

// loadUpServer returns the server's configuration under paddock up: paddock server's,
// with the client port on 127.0.0.1 unless one is given.
func loadUpServer(cmd *cobra.Command) (server.Config, error) {
	file, _ := cmd.Flags().GetString("config")
	// paddock server's default is every interface; the one-process platform is a local
	// one unless the client address is given.
	def := server.DefaultConfig()
	def.ClientAddr = upClientAddr
	cfg, err := configs.LoadServer(configs.Options{File: file, Flags: cmd.Flags(), ServerDefaults: &def})
	if err != nil {
		return cfg, err
	}
	f := cmd.Flags()
	if f.Changed("client-port") && f.Changed("client-addr") {
		return cfg, errors.New("--client-port and --client-addr both set the client address: give one")
	}
	if port, _ := f.GetInt("client-port"); port != 0 {
		cfg.ClientAddr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	return cfg, nil
}

// prefixed returns err after name, unless err already begins with it (the master's
// and the console's errors say "master:" and "web:"; a worker's say "worker:" and not
// which one).
func prefixed(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// upService is a service run by paddock up.
type upService struct {
	name string
	Run  func(context.Context) error
}

// upServices builds the services on the server at addr.
func upServices(cmd *cobra.Command, cfg server.Config, addr string, logger *slog.Logger, plat platform) ([]upService, error) {
	n, _ := cmd.Flags().GetInt("workers")
	capacity, _ := cmd.Flags().GetInt("capacity")
	port, _ := cmd.Flags().GetInt("metrics-port")
	metricsAddr := func(i int) string {
		if port == 0 {
			return ""
		}
		return fmt.Sprintf("127.0.0.1:%d", port+i)
	}
	mc := master.DefaultConfig()
	mc.Servers, mc.ID, mc.MetricsAddr = []string{addr}, "up-master", metricsAddr(0)
	mc.Access = plat.access(coordinator.RoleMaster)
	m, err := master.New(mc, logger.With("component", "master"))
	if err != nil {
		return nil, err
	}
	services := []upService{{"master", m.Run}}
	runAs, allowRoot := upRunAs(cmd, logger)
	for i := 1; i <= n; i++ {
		wc := worker.DefaultConfig()
		wc.Servers, wc.ID, wc.Capacity = []string{addr}, fmt.Sprintf("up-worker-%d", i), capacity
		wc.OutputDir = filepath.Join(cfg.DataDir, "worker-"+wc.ID, "output")
		wc.MetricsAddr = metricsAddr(i)
		wc.Access = plat.access(coordinator.RoleWorker)
		wc.RunAs, wc.AllowRoot = runAs, allowRoot
		w, err := worker.New(wc, logger.With("component", "worker"))
		if err != nil {
			return nil, err
		}
		services = append(services, upService{wc.ID, w.Run})
	}
	lc := logcollector.DefaultConfig()
	lc.Servers, lc.ID, lc.Sink = []string{addr}, "up-collector", filepath.Join(cfg.DataDir, "logs")
	lc.Access = plat.access(coordinator.RoleLogCollector)
	c, err := logcollector.New(lc, logger.With("component", "logcollector"))
	if err != nil {
		return nil, err
	}
	services = append(services, upService{"logcollector", c.Run})
	console, err := upConsole(cmd, cfg, addr, logger, plat)
	if err != nil {
		return nil, err
	}
	return append(services, console), nil
}

// consoleUsersName is the file, in the data directory, of the console's users under
// paddock up: made on the first start with one admin whose password is printed once.
const consoleUsersName = "console-users"

// upConsole returns the web console on the server at addr.
func upConsole(cmd *cobra.Command, cfg server.Config, addr string, logger *slog.Logger, plat platform) (upService, error) {
	users, err := consoleUsers(cmd, filepath.Join(cfg.DataDir, consoleUsersName))
	if err != nil {
		return upService{}, err
	}
	wc := web.DefaultConfig()
	wc.Servers, wc.Users, wc.AdminAddr = []string{addr}, users, cfg.AdminAddr
	wc.Listen = upConsoleListen(cmd.Flags())
	wc.Access = plat.access(coordinator.RoleConsole)
	if wc.AdminUser, wc.AdminPassword, err = plat.adminLogin(); err != nil { // for cons and wchc (admin.auth)
		return upService{}, err
	}
	if err := wc.Validate(); err != nil {
		return upService{}, err
	}
	cc, err := wc.Access.Config(wc.Servers, wc.SessionTimeout, nil, wc.ACLRules())
	if err != nil {
		return upService{}, err
	}
	cc.MaxBuffer = cfg.MaxBuffer // the console writes what the server takes, and says so past it
	run := func(ctx context.Context) error {
		s, err := coordinator.Connect(ctx, cc)
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while connecting
			}
			return err
		}
		defer s.Close()
		c, err := web.New(wc, s, logger.With("component", "web"))
		if err == nil {
			err = c.Listen()
		}
		if err != nil {
			return err
		}
		logger.Info("console serving", "url", "http://"+c.Addr().String(), "users_file", filepath.Join(cfg.DataDir, consoleUsersName))
		return c.Run(ctx)
	}
	return upService{"web", run}, nil
}

// consoleUsers reads the console's users from path, one name:role:hash a line; when
// the file does not exist it makes it with user admin and a random password, which it
// prints once on stderr.
func consoleUsers(cmd *cobra.Command, path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		return strings.Fields(string(data)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	pw := web.NewPassword()
	hash, err := web.HashPassword(pw)
	if err != nil {
		return nil, err
	}
	entry := "admin:admin:" + hash
	if err := os.WriteFile(path, []byte(entry+"\n"), 0o600); err != nil {
		return nil, err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "paddock up: the console's user is admin, password %s (shown once; its hash is in %s)\n", pw, path)
	return []string{entry}, nil
}

// upLogName is the platform's log file in the data directory under paddock up.
const upLogName = "paddock.log"

// addDemoSource defines the log source "paddock", the platform's own log, unless it
// is defined.
func addDemoSource(ctx context.Context, addr, dataDir string, plat platform) error {
	path, err := filepath.Abs(filepath.Join(dataDir, upLogName))
	if err != nil {
		return err
	}
	s, err := connectAdmin(ctx, addr, plat)
	if err != nil {
		return err
	}
	defer s.Close()
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	layout, _ := logcollector.NewLayout("/")
	err = logcollector.NewAdmin(s, layout).AddSource(ctx, "paddock", host, path)
	if errors.Is(err, logcollector.ErrSourceExists) {
		return nil
	}
	return err
}

// upClientAddr is paddock up's client address when none is given: loopback only.
const upClientAddr = "127.0.0.1:2181"

// connectAdmin opens a session on addr as the platform's admin, its nodes with the
// platform's role ACLs.
func connectAdmin(ctx context.Context, addr string, plat platform) (*coordinator.Session, error) {
	cc, err := plat.access(coordinator.RoleAdmin).Config([]string{addr}, 10*time.Second, nil,
		platformRules("/", web.DefaultConfig().AuditRoot))
	if err != nil {
		return nil, err
	}
	return coordinator.Connect(ctx, cc)
}

// upDirs are the persistent nodes at the top of paddock up's services (the task
// cluster's under /, the replication bus's, the log collection's, the console's): made
// at start when missing, so that no one else makes them first, and given their role
// ACLs. The master's election node, /master, is ephemeral: it is migrated if found.
func upDirs() []string {
	tl, _ := task.NewLayout("/")
	rl, _ := replicator.NewLayout("/")
	ll, _ := logcollector.NewLayout("/")
	return append(tl.Dirs(), rl.Root(), ll.Root(), path.Dir(web.DefaultConfig().AuditRoot))
}

// migrateUp protects what paddock up's platform stands on, on every start: the root
// znode (rootRules), every service's top nodes (made if missing) and /zookeeper/quota get
// their role ACLs, and so does every node under them that an older paddock made open to
// all. Nodes already protected are left as they are.
func migrateUp(ctx context.Context, addr string, plat platform, logger *slog.Logger) error {
	s, err := connectAdmin(ctx, addr, plat)
	if err != nil {
		return err
	}
	defer s.Close()
	root, err := s.MigrateACL(ctx, "/")
	if err != nil {
		return err
	}
	if root {
		logger.Info("gave the root znode its acl: only the admin deletes top-level nodes")
	}
	dirs := upDirs()
	for _, d := range dirs {
		if err := s.MakeDirs(ctx, d); err != nil {
			return err
		}
	}
	n, err := s.MigrateACLs(ctx, append(dirs, task.DefaultLayout.Master(), datatree.QuotaPath)...)
	if n > 0 {
		logger.Info("gave nodes open to all their role acls", "nodes", n)
	}
	return err
}
