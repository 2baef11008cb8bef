package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/web"
)

// paddock zk: a ZooKeeper command-line client for people and scripts, on
// coordinator.Session and the go-zk Conn it exposes.
//
// Exit statuses: 0 on success, 1 when an operation fails (the ZooKeeper error in words
// and the path on stderr, see zkErrors), 2 on bad usage (with the usage), and for lock
// the status of the command it ran. The statuses other than 0 and 1 are why the
// subcommands end the process themselves (zkCLI.exit) instead of returning an error to
// main, which exits 1 on any error.

// zkCLI is one paddock zk invocation: its global flags and how it ends the process.
type zkCLI struct {
	servers string
	access  coordinator.Access
	// aclRoot, if set, is the root of the services' layouts whose ACL rules the nodes
	// created get (--root of paddock task and the like); nil means "/".
	aclRoot        *string
	timeout        time.Duration
	sessionTimeout time.Duration

	// exit ends the process with a status (os.Exit); tests record it instead, and then
	// the command returns errExited.
	exit func(code int)
	// dial, if set, opens the TCP connections (tests cut them); nil dials directly.
	dial zk.Dialer
	// name prefixes error messages; empty means "paddock zk" (paddock task shares this).
	name string
	// maxBuffer, if set (create and set: --max-buffer), is the servers' jute.maxbuffer,
	// which sizes the session's requests (coordinator.Config.MaxBuffer).
	maxBuffer *int
}

func (z *zkCLI) commandName() string {
	if z.name == "" {
		return "paddock zk"
	}
	return z.name
}

// errExited is what a subcommand returns after calling an exit that returned (in tests).
var errExited = errors.New("paddock zk: exited")

// exitError ends paddock zk with code. err, if not nil, goes to stderr first, followed
// by the command's usage if usage is set.
type exitError struct {
	code  int
	err   error
	usage bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is bad usage: exit status 2, with the usage.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...), usage: true}
}

func newZKCmd() *cobra.Command { return newZKCommand(&zkCLI{exit: os.Exit}) }

// newZKCommand returns the zk command tree, which ends the process through z.exit.
func newZKCommand(z *zkCLI) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "zk",
		Short: "A ZooKeeper command-line client: ls, get, stat, set, create, delete, watch, lock",
		Long: `A ZooKeeper command-line client for people and scripts, for paddock or any other
ZooKeeper-protocol server. Each invocation opens one session, runs one command and
closes the session.

The exit status is 0 on success, 1 when the operation fails (the ZooKeeper error in
words, with the path, on stderr: "node does not exist: /x"), 2 on bad usage, and for
lock the exit status of the command it ran.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return z.finish(cmd, usageError("missing command"))
			}
			return z.finish(cmd, usageError("unknown command %q", args[0]))
		},
	}
	pf := cmd.PersistentFlags()
	addServersFlag(pf, &z.servers)
	addAccessFlags(pf, &z.access)
	pf.DurationVar(&z.timeout, "timeout", 10*time.Second, "bound on connecting and on each operation")
	pf.DurationVar(&z.sessionTimeout, "session-timeout", 15*time.Second,
		"session timeout to ask for (lock: how long a partition may last before the lock is lost)")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return z.finish(c, &exitError{code: 2, err: err, usage: true})
	})
	cmd.AddCommand(z.lsCmd(), z.getCmd(), z.statCmd(), z.setCmd(), z.createCmd(), z.deleteCmd(),
		z.deleteAllCmd(), z.watchCmd(), z.lockCmd(), z.migrateACLsCmd())
	return cmd
}

// zkAction is what a subcommand does with a connected client.
type zkAction func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error

// subcommand completes cmd: its arguments are checked by args (a failure is a usage
// error) and it runs run on a connected client, ending the process as run's error says.
func (z *zkCLI) subcommand(cmd *cobra.Command, args cobra.PositionalArgs, run zkAction) *cobra.Command {
	cmd.Args = func(cmd *cobra.Command, a []string) error {
		if err := args(cmd, a); err != nil {
			return z.finish(cmd, &exitError{code: 2, err: err, usage: true})
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, a []string) error {
		return z.finish(cmd, z.run(cmd, a, run))
	}
	return cmd
}

// run connects, runs fn and closes the session; fn's ephemeral nodes go with it.
func (z *zkCLI) run(cmd *cobra.Command, args []string, fn zkAction) error {
	if z.timeout <= 0 {
		return usageError("--timeout %v: must be positive", z.timeout)
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := z.connect(ctx, cmd)
	if err != nil {
		return err
	}
	defer c.s.Close()
	return fn(ctx, c, cmd, args)
}

// finish prints err (if any) and ends the process with its exit status. It returns only
// when z.exit does (in tests).
func (z *zkCLI) finish(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	code, usage := 1, false
	var ee *exitError
	if errors.As(err, &ee) {
		code, usage, err = ee.code, ee.usage, ee.err
	}
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", z.commandName(), err)
		if usage {
			fmt.Fprint(cmd.ErrOrStderr(), cmd.UsageString())
		}
	}
	z.exit(code)
	return errExited
}

// zkClient is a connected session with the per-operation timeout.
type zkClient struct {
	s       *coordinator.Session
	conn    *zk.Conn
	timeout time.Duration
}

// connect opens the session within --timeout. A connection failure names the servers
// and the last dial error.
func (z *zkCLI) connect(ctx context.Context, cmd *cobra.Command) (*zkClient, error) {
	cfg := coordinator.DefaultConfig()
	cfg.Servers = nil
	for _, s := range strings.Split(z.servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Servers = append(cfg.Servers, s)
		}
	}
	cfg.SessionTimeout = z.sessionTimeout
	for i, a := range z.access.Auth {
		if _, err := coordinator.ParseAuth(a); err != nil {
			return nil, usageError("--auth #%d: want scheme:credentials, as in digest:user:password (the value is not shown)", i+1)
		}
	}
	if errs := z.access.Check(); len(errs) > 0 {
		return nil, usageError("%w", errors.Join(errs...))
	}
	root := "/"
	if z.aclRoot != nil {
		root = *z.aclRoot
	}
	ac, err := z.access.Config(cfg.Servers, cfg.SessionTimeout, nil, platformRules(root, web.DefaultConfig().AuditRoot))
	if err != nil {
		return nil, usageError("%w", err)
	}
	cfg.Auth, cfg.TLS, cfg.Policy, cfg.Signer, cfg.Trust = ac.Auth, ac.TLS, ac.Policy, ac.Signer, ac.Trust
	if err := cfg.Validate(); err != nil {
		return nil, usageError("--zk %q, --session-timeout %v: %w", z.servers, z.sessionTimeout, err)
	}
	cfg.Logger = zkLogger(cmd)
	cfg.Dialer = z.dial
	if z.maxBuffer != nil {
		cfg.MaxBuffer = *z.maxBuffer
	}

	cctx, cancel := context.WithTimeout(ctx, z.timeout)
	defer cancel()
	s, err := coordinator.Connect(cctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted while connecting to %s", strings.Join(cfg.Servers, ","))
		}
		reason := err.Error()
		var ce *coordinator.ConnectError
		switch {
		case !errors.As(err, &ce):
		case ce.LastDial != nil:
			reason = ce.LastDial.Error()
		case errors.Is(err, context.DeadlineExceeded):
			reason = fmt.Sprintf("no session within %v", z.timeout)
		default:
			reason = ce.Err.Error()
		}
		return nil, fmt.Errorf("cannot connect to %s: %s", strings.Join(cfg.Servers, ","), reason)
	}
	return &zkClient{s: s, conn: s.Conn(), timeout: z.timeout}, nil
}

// zkLogger returns the logger for the session: --log-level when the root command has
// it, else nothing.
func zkLogger(cmd *cobra.Command) *slog.Logger {
	if cmd.Flags().Lookup("log-level") == nil {
		return nil
	}
	logger, err := newLogger(cmd)
	if err != nil {
		return nil
	}
	return logger
}

// Errors.

// zkErrors says each ZooKeeper error in words: the one table from go-zk's errors to
// what paddock zk prints, "words: path".
var zkErrors = []struct {
	err   error
	words string
}{
	{zk.ErrNoNode, "node does not exist"},
	{zk.ErrNodeExists, "node already exists"},
	{zk.ErrBadVersion, "version mismatch"},
	{zk.ErrNotEmpty, "node not empty"},
	{zk.ErrNoAuth, "not authorised"},
	{zk.ErrInvalidPath, "invalid path"},
	{zk.ErrBadArguments, "invalid arguments"},
	{zk.ErrNoChildrenForEphemerals, "ephemeral nodes cannot have children"},
	{zk.ErrInvalidACL, "invalid ACL"},
	{zk.ErrInvalidFlags, "invalid create flags"},
	{zk.ErrShortBuffer, "request larger than the servers' jute.maxbuffer (--max-buffer)"},
	{zk.ErrAuthFailed, "authentication failed"},
	{zk.ErrSessionExpired, "session expired"},
	{zk.ErrSessionMoved, "session moved to another server"},
	{zk.ErrConnectionClosed, "connection lost"},
	{zk.ErrNoServer, "no server reachable"},
	{zk.ErrClosing, "connection closing"},
	{zk.ErrAPIError, "ZooKeeper API error"},
	{zk.ErrUnknown, "unknown ZooKeeper error"},
	{errUnimplemented, "not implemented by the server (TTL nodes need extendedTypesEnabled)"},
	{coordinator.ErrClosed, "session closed"},
	{context.DeadlineExceeded, "timed out"},
	{context.Canceled, "interrupted"},
}

// errUnimplemented stands for ZooKeeper's Unimplemented (-6), which go-zk returns
// unnamed, as "unknown error: -6"; a server without TTL nodes enabled answers createTTL
// with it.
var errUnimplemented = errors.New("unimplemented")

// zkWords returns err in words, from zkErrors; an error not in the table is said as
// go-zk says it, without its "zk: " prefix.
func zkWords(err error) string {
	if err.Error() == fmt.Sprintf("unknown error: %d", -6) {
		err = errUnimplemented
	}
	for _, e := range zkErrors {
		if errors.Is(err, e.err) {
			return e.words
		}
	}
	return strings.TrimPrefix(err.Error(), "zk: ")
}

// opError is an operation on path that failed with err.
type opError struct {
	path    string
	version int32         // the version the operation expected, or -1
	timeout time.Duration // the operation's bound, said when it ran out
	err     error
}

func (e *opError) Error() string {
	s := zkWords(e.err)
	if errors.Is(e.err, context.DeadlineExceeded) && e.timeout > 0 {
		s += fmt.Sprintf(" after %v", e.timeout)
	}
	s += ": " + e.path
	if errors.Is(e.err, zk.ErrBadVersion) && e.version >= 0 {
		s += fmt.Sprintf(" (expected %d)", e.version)
	}
	return s
}

func (e *opError) Unwrap() error { return e.err }

// Operations, each bounded by --timeout.

// within runs fn, giving up when ctx ends or d passes. go-zk's calls take no context;
// one given up on ends when its reply comes or the session closes.
func within[T any](ctx context.Context, d time.Duration, fn func() (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func (c *zkClient) fail(path string, version int32, err error) error {
	if err == nil {
		return nil
	}
	return &opError{path: path, version: version, timeout: c.timeout, err: err}
}

// do runs one operation on path within the timeout, its error (if any) naming path
// and version.
func do[T any](ctx context.Context, c *zkClient, path string, version int32, op func() (T, error)) (T, error) {
	v, err := within(ctx, c.timeout, op)
	return v, c.fail(path, version, err)
}

func (c *zkClient) children(ctx context.Context, path string) ([]string, error) {
	children, err := do(ctx, c, path, -1, func() ([]string, error) {
		children, _, err := c.conn.Children(path)
		return children, err
	})
	slices.Sort(children)
	return children, err
}

func (c *zkClient) get(ctx context.Context, path string) ([]byte, error) {
	return do(ctx, c, path, -1, func() ([]byte, error) {
		data, _, err := c.conn.Get(path)
		return data, err
	})
}

func (c *zkClient) stat(ctx context.Context, path string) (*zk.Stat, error) {
	return do(ctx, c, path, -1, func() (*zk.Stat, error) {
		ok, stat, err := c.conn.Exists(path)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return stat, err
	})
}

func (c *zkClient) set(ctx context.Context, path string, data []byte, version int32) error {
	_, err := do(ctx, c, path, version, func() (*zk.Stat, error) { return c.conn.Set(path, data, version) })
	return err
}

func (c *zkClient) delete(ctx context.Context, path string, version int32) error {
	_, err := do(ctx, c, path, version, func() (struct{}, error) { return struct{}{}, c.conn.Delete(path, version) })
	return err
}

// ls.

func (z *zkCLI) lsCmd() *cobra.Command {
	var recursive bool
	cmd := z.subcommand(&cobra.Command{
		Use:   "ls PATH [-R]",
		Short: "List a node's children, one per line (sorted); -R: the subtree's paths",
	}, cobra.ExactArgs(1), func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error {
		if !recursive {
			children, err := c.children(ctx, args[0])
			if err != nil {
				return err
			}
			for _, child := range children {
				fmt.Fprintln(cmd.OutOrStdout(), child)
			}
			return nil
		}
		return c.listTree(ctx, args[0], true, func(path string) { fmt.Fprintln(cmd.OutOrStdout(), path) })
	})
	cmd.Flags().BoolVarP(&recursive, "recursive", "R", false,
		"list the subtree: PATH and every node under it, one full path per line, depth first")
	return cmd
}

// listTree visits path and its subtree depth first, children in order. Nodes that vanish
// while it walks are left out; path itself must exist if top.
func (c *zkClient) listTree(ctx context.Context, path string, top bool, visit func(string)) error {
	children, err := c.children(ctx, path)
	if errors.Is(err, zk.ErrNoNode) && !top {
		return nil
	}
	if err != nil {
		return err
	}
	visit(path)
	for _, child := range children {
		if err := c.listTree(ctx, strings.TrimSuffix(path, "/")+"/"+child, false, visit); err != nil {
			return err
		}
	}
	return nil
}

// get, stat, set.

func (z *zkCLI) getCmd() *cobra.Command {
	return z.subcommand(&cobra.Command{
		Use:   "get PATH",
		Short: "Write a node's data, raw, to stdout (no newline added)",
	}, cobra.ExactArgs(1), func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error {
		data, err := c.get(ctx, args[0])
		if err != nil {
			return err
		}
		_, err = cmd.OutOrStdout().Write(data)
		return err
	})
}

func (z *zkCLI) statCmd() *cobra.Command {
	return z.subcommand(&cobra.Command{
		Use:   "stat PATH",
		Short: "Print a node's Stat, as zkCli's stat does",
	}, cobra.ExactArgs(1), func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error {
		stat, err := c.stat(ctx, args[0])
		if err != nil {
			return err
		}
		_, err = io.WriteString(cmd.OutOrStdout(), formatStat(stat))
		return err
	})
}

// formatStat formats stat as zkCli's stat does, times as Java's Date.toString, local.
func formatStat(s *zk.Stat) string {
	const javaDate = "Mon Jan 02 15:04:05 MST 2006"
	date := func(ms int64) string { return time.UnixMilli(ms).Format(javaDate) }
	return fmt.Sprintf("cZxid = 0x%x\nctime = %s\nmZxid = 0x%x\nmtime = %s\npZxid = 0x%x\n"+
		"cversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = 0x%x\n"+
		"dataLength = %d\nnumChildren = %d\n",
		s.Czxid, date(s.Ctime), s.Mzxid, date(s.Mtime), s.Pzxid,
		s.Cversion, s.Version, s.Aversion, s.EphemeralOwner, s.DataLength, s.NumChildren)
}

func (z *zkCLI) setCmd() *cobra.Command {
	var version int32
	var in zkData
	var data []byte
	cmd := z.subcommand(&cobra.Command{
		Use:   "set PATH {DATA | - | --file FILE | --stdin} [-v VERSION]",
		Short: "Set a node's data (given, from a file or from stdin); with -v, only if its data version is VERSION",
	}, cobra.RangeArgs(1, 2), func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error {
		return c.set(ctx, args[0], data, version)
	})
	cmd.Flags().Int32VarP(&version, "version", "v", -1, "the data version the node must have (-1: any)")
	in.addFlags(cmd)
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		var err error
		if data, err = in.read(cmd, z, args[1:]); err == nil && data == nil && len(args) < 2 && in.file == "" && !in.stdin {
			err = usageError("set: want the data: DATA, - (stdin), --file FILE or --stdin")
		}
		return z.finish(cmd, err)
	}
	return cmd
}

// create.

func (z *zkCLI) createCmd() *cobra.Command {
	var ephemeral, sequential, container bool
	var ttl time.Duration
	var in zkData
	var data []byte
	cmd := z.subcommand(&cobra.Command{
		Use:   "create PATH [DATA | - | --file FILE | --stdin] [-e] [-s] [-c] [-t TTL]",
		Short: "Create a node and print its path",
		Long: `Create a node with DATA (empty if not given), open to all, and print the path created
(with -s, PATH followed by the sequence number). The data may come from a file (--file)
or stdin (--stdin, or DATA "-"), read to its end: at most --max-buffer bytes, the
servers' jute.maxbuffer (1048575 by default), path and header included.

An ephemeral node (-e) lives only as long as this command's session: it is gone as soon
as the command exits. A container (-c) is removed by the server once its last child
goes. A TTL node (-t, a duration like 10m) is persistent, may be sequential, and is
removed by the server once it has had no children and no change for TTL; the server
must have TTL nodes enabled (extendedTypesEnabled).`,
	}, cobra.RangeArgs(1, 2), func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error {
		path, err := c.create(ctx, args[0], data, ephemeral, sequential, container, ttl)
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), path)
		return nil
	})
	f := cmd.Flags()
	f.BoolVarP(&ephemeral, "ephemeral", "e", false, "ephemeral: deleted when this command's session ends, at its exit")
	f.BoolVarP(&sequential, "sequential", "s", false, "sequential: a 10-digit sequence number is appended to PATH")
	f.BoolVarP(&container, "container", "c", false, "container: deleted by the server once it has had children and has none")
	f.DurationVarP(&ttl, "ttl", "t", 0, "TTL node: deleted by the server after this long without children or changes")
	in.addFlags(cmd)
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		var err error
		switch {
		case container && (ephemeral || sequential || ttl != 0):
			err = usageError("-c: a container cannot be ephemeral, sequential or have a TTL")
		case ttl != 0 && ephemeral:
			err = usageError("-t: a TTL node must be persistent, not ephemeral")
		case ttl != 0 && ttl < time.Millisecond:
			err = usageError("-t %v: want a positive duration of at least 1ms", ttl)
		default:
			data, err = in.read(cmd, z, args[1:])
		}
		return z.finish(cmd, err)
	}
	return cmd
}

func (c *zkClient) create(ctx context.Context, path string, data []byte, ephemeral, sequential, container bool,
	ttl time.Duration) (string, error) {
	acl := c.s.ACLFor(path)
	return do(ctx, c, path, -1, func() (string, error) {
		switch {
		case container:
			return c.conn.CreateContainer(path, data, zk.FlagContainer, acl)
		case ttl > 0 && sequential:
			return c.conn.CreateTTL(path, data, zk.FlagPersistentSequentialWithTTL, acl, ttl)
		case ttl > 0:
			return c.conn.CreateTTL(path, data, zk.FlagTTL, acl, ttl)
		case ephemeral && sequential:
			return c.conn.Create(path, data, zk.FlagEphemeral|zk.FlagSequence, acl)
		case ephemeral:
			return c.conn.Create(path, data, zk.FlagEphemeral, acl)
		case sequential:
			return c.conn.Create(path, data, zk.FlagSequence, acl)
		}
		return c.conn.Create(path, data, 0, acl)
	})
}

// delete, deleteall.

func (z *zkCLI) deleteCmd() *cobra.Command {
	var version int32
	cmd := z.subcommand(&cobra.Command{
		Use:   "delete PATH [-v VERSION]",
		Short: "Delete a node without children; with -v, only if its data version is VERSION",
	}, cobra.ExactArgs(1), func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error {
		return c.delete(ctx, args[0], version)
	})
	cmd.Flags().Int32VarP(&version, "version", "v", -1, "the data version the node must have (-1: any)")
	return cmd
}

func (z *zkCLI) deleteAllCmd() *cobra.Command {
	return z.subcommand(&cobra.Command{
		Use:   "deleteall PATH",
		Short: "Delete a node and its whole subtree, children first",
	}, cobra.ExactArgs(1), func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error {
		if args[0] == "/" {
			return usageError("refusing to delete /")
		}
		return c.deleteTree(ctx, args[0], true)
	})
}

// deleteAttempts bounds how often deleteTree starts over on a node that gains children
// while it deletes them.
const deleteAttempts = 10

// deleteTree deletes path's subtree, children first. Nodes that vanish meanwhile are
// fine; path itself must exist if top.
func (c *zkClient) deleteTree(ctx context.Context, path string, top bool) error {
	for attempt := 1; ; attempt++ {
		children, err := c.children(ctx, path)
		if errors.Is(err, zk.ErrNoNode) && !top {
			return nil
		}
		if err != nil {
			return err
		}
		for _, child := range children {
			if err := c.deleteTree(ctx, strings.TrimSuffix(path, "/")+"/"+child, false); err != nil {
				return err
			}
		}
		err = c.delete(ctx, path, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if !errors.Is(err, zk.ErrNotEmpty) || attempt == deleteAttempts {
			return err
		}
		top = false // it existed: if it vanishes now, someone else deleted it
	}
}

// watch.
