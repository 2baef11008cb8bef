package main

import (
	"time"

	"github.com/spf13/cobra"
)

// serviceCLI is the command line of a service's admin commands (paddock task, paddock
// replicator task): paddock zk's connection handling and exit statuses, with --zk for
// the servers and --root for where the service's nodes live.
type serviceCLI struct {
	zkCLI
	root string
}

// setup completes cmd, the service's admin command: its persistent flags (the bound
// on connecting is timeoutFlag, as a subcommand may use --timeout for something else),
// usage errors with exit status 2, a usage error when no subcommand is given
// (missing names them), and the subcommands.
func (s *serviceCLI) setup(cmd *cobra.Command, rootHelp, timeoutFlag, missing string, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		return s.finish(c, usageError("missing command: %s", missing))
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&s.servers, "zk", "127.0.0.1:2181", "`host:port`[,host:port...] of the coordination servers")
	pf.StringVar(&s.root, "root", "/", rootHelp)
	pf.StringArrayVar(&s.auth, "auth", nil, "add `scheme:credentials` to the session (repeatable)")
	pf.DurationVar(&s.timeout, timeoutFlag, 10*time.Second, "bound on connecting and on each operation")
	s.sessionTimeout = 15 * time.Second
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return s.finish(c, &exitError{code: 2, err: err, usage: true})
	})
	cmd.AddCommand(subs...)
	return cmd
}
