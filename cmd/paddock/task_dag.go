package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/task"
)

// maxDAGFile bounds a DAG file: MaxDAGSize specs of at most MaxSpecSize would not fit
// one multi anyway.
const maxDAGFile = 4 << 20

func (t *taskCLI) submitDAGCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "submit-dag FILE",
		Short: "Submit a DAG of tasks from a JSON file (- for stdin); prints each task's name and id",
		Long: `Submit a DAG of tasks, all of them or none, from a JSON array of
  {"name": "load", "spec": {"command": "...", "args": [...]}, "after": ["transform"],
   "on_parent_failure": "fail" | "skip"}
A task runs once every task it names in "after" has ended done; when one ends otherwise,
it ends failed (on_parent_failure fail, the default) or skipped, without running. A
cycle, or a name "after" gives that is not in the file, is refused with what was wrong.`,
	}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		var r io.Reader = cmd.InOrStdin()
		if args[0] != "-" {
			f, err := os.Open(args[0])
			if err != nil {
				return usageError("%w", err)
			}
			defer f.Close()
			r = f
		}
		data, err := io.ReadAll(io.LimitReader(r, maxDAGFile+1))
		if err != nil {
			return usageError("%s: %w", args[0], err)
		}
		if len(data) > maxDAGFile {
			return usageError("%s: more than %d bytes", args[0], maxDAGFile)
		}
		var nodes []task.DAGNode
		if err := json.Unmarshal(data, &nodes); err != nil {
			return usageError("%s: want a JSON array of {name, spec, after, on_parent_failure}: %w", args[0], err)
		}
		if _, err := task.CheckDAG(nodes); err != nil {
			return usageError("%s: %w", args[0], err)
		}
		ids, err := c.SubmitDAG(ctx, nodes)
		if err != nil {
			return err
		}
		names := make([]string, 0, len(ids))
		for name := range ids {
			names = append(names, name)
		}
		slices.SortFunc(names, func(a, b string) int { return strings.Compare(ids[a], ids[b]) })
		for _, name := range names {
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", name, ids[name])
		}
		return nil
	})
}
