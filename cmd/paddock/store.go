package main

import (
	"github.com/spf13/cobra"

	"github.com/paddock/paddock/server"
)

func newStoreCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Inspect a server's data directory",
	}
	cmd.AddCommand(newStoreDumpCmd())
	return cmd
}

func newStoreDumpCmd() *cobra.Command {
	var logDir string
	cmd := &cobra.Command{
		Use:   "dump DATA_DIR",
		Short: "Print the snapshots and the log records of a data directory, readably",
		Long: `Print every snapshot under DATA_DIR/snap (every node with its stat, ACL and data,
and the sessions) and every record of the write-ahead log under DATA_DIR/log, or under
--log-dir when the server runs with a separate data_log_dir. For an ensemble member it
prints its Raft directory (raft/ there): each snapshot's Raft index, term and membership
with its tree, and every record of its log — entries by index with the number of txns in
each batch, hard states, and the records of snapshots. Nothing is changed: it may run
beside a live server. Damage is reported where it is met, and the exit status is 1.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return server.DumpStore(cmd.OutOrStdout(), args[0], logDir)
		},
	}
	cmd.Flags().StringVar(&logDir, "log-dir", "", "the server's data_log_dir, if it is not DATA_DIR")
	return cmd
}
