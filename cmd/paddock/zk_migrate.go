package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/coordinator"
)

// migrateACLsCmd gives nodes an older paddock made open to all their role ACLs
// (docs/security.md, "Migrating data made by an older paddock").
func (z *zkCLI) migrateACLsCmd() *cobra.Command {
	return z.subcommand(&cobra.Command{
		Use:   "migrate-acls PATH...",
		Short: "Give every node at or under PATH that the world may change its role ACL (needs --roles or --roles-file)",
		Long: `Give every node at or under each PATH whose ACL lets unauthenticated clients do more
than read and what docs/security.md's table gives them (world:anyone cdrwa: made by a
paddock before role ACLs) the ACL its path has in that table, over the identities of
--roles / --roles-file. PATH / is the root znode alone (the world keeps read and create,
only the admin deletes top-level nodes), not the whole tree. Protected nodes are left
alone, so it can run again. Prints how many nodes it changed.`,
	}, cobra.MinimumNArgs(1), func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error {
		n, err := 0, error(nil)
		if slices.Contains(args, "/") {
			var root bool
			root, err = c.s.MigrateACL(ctx, "/")
			if root {
				n++
			}
			args = slices.DeleteFunc(slices.Clone(args), func(p string) bool { return p == "/" })
		}
		if err == nil && len(args) > 0 {
			var m int
			m, err = c.s.MigrateACLs(ctx, args...)
			n += m
		}
		if errors.Is(err, coordinator.ErrNoPolicy) {
			return usageError("migrate-acls: give the platform's identities with --roles or --roles-file")
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%d nodes given their role ACLs\n", n)
		return err
	})
}
