package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/task"
)

// paddock task: submit and follow the task-scheduling cluster's tasks, on task.Client.
// It shares paddock zk's connection flags and exit statuses (zkCLI), with --zk for the
// servers; wait exits with the task's exit code.

type taskCLI struct{ serviceCLI }

func newTaskCmd() *cobra.Command {
	t := &taskCLI{serviceCLI{zkCLI: zkCLI{exit: os.Exit, name: "paddock task"}}}
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Submit, inspect, cancel and wait for tasks of the task-scheduling cluster",
		Long: `Submit, inspect, cancel and wait for tasks of the task-scheduling cluster (paddock
master and paddock worker).

The exit status is 0 on success, 1 when the operation fails, 2 on bad usage; wait exits
with the task's exit code (1 if it ended without one: cancelled, timed out, or its
command could not start).`,
	}
	return t.setup(cmd, "`path` the cluster's nodes live under", "timeout-connect", "submit, submit-dag, get, list, cancel or wait",
		t.submitCmd(), t.submitDAGCmd(), t.getCmd(), t.listCmd(), t.cancelCmd(), t.waitCmd())
}

// taskAction is what a subcommand does with a connected task client.
type taskAction func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error

func (t *taskCLI) subcommand(cmd *cobra.Command, args cobra.PositionalArgs, run taskAction) *cobra.Command {
	return t.zkCLI.subcommand(cmd, args, func(ctx context.Context, c *zkClient, cmd *cobra.Command, a []string) error {
		layout, err := task.NewLayout(t.root)
		if err != nil {
			return usageError("--root: %w", err)
		}
		return run(ctx, task.NewClient(c.s, layout), cmd, a)
	})
}

func (t *taskCLI) submitCmd() *cobra.Command {
	var (
		spec  task.Spec
		env   []string
		sel   string
		delay time.Duration
		tmo   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "submit [flags] -- COMMAND [ARGS...]",
		Short: "Submit a task; prints its id as the last line",
	}
	f := cmd.Flags()
	f.IntVar(&spec.Retries, "retries", 0, "times a failed run is tried again")
	f.DurationVar(&delay, "retry-delay", task.DefaultRetryDelay, "pause before a retry")
	f.DurationVar(&tmo, "timeout", 0, "kill a run that takes longer (0: no limit)")
	f.IntVar(&spec.Priority, "priority", 0, "higher runs first")
	f.StringArrayVar(&env, "env", nil, "`K=V` added to the task's environment (repeatable)")
	f.StringVar(&spec.Dir, "dir", "", "working `directory` on the worker")
	f.StringVar(&sel, "selector", "", "`k=v[,k=v...]`: labels a worker must all have to run the task")
	return t.subcommand(cmd, cobra.MinimumNArgs(1), func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		spec.Command, spec.Args = args[0], args[1:]
		spec.Timeout, spec.RetryDelay = task.Duration(tmo), task.Duration(delay)
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return usageError("--env %q: want K=V", kv)
			}
			if spec.Env == nil {
				spec.Env = map[string]string{}
			}
			spec.Env[k] = v
		}
		var err error
		if spec.Selector, err = task.ParseSelector(sel); err != nil {
			return usageError("--selector: %w", err)
		}
		if err := spec.Validate(); err != nil {
			return usageError("%w", err)
		}
		id, err := c.Submit(ctx, spec)
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), id)
		return nil
	})
}

func (t *taskCLI) getCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "get ID", Short: "Print a task as JSON, with its state"}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		tk, err := c.Get(ctx, args[0])
		if err != nil {
			return err
		}
		return printJSON(cmd, tk)
	})
}

func (t *taskCLI) listCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "list", Short: "List the tasks, oldest first; a pending one says why it waits, when known"}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return t.subcommand(cmd, cobra.NoArgs, func(ctx context.Context, c *task.Client, cmd *cobra.Command, _ []string) error {
		tasks, err := c.List(ctx)
		if err != nil {
			return err
		}
		if asJSON {
			if tasks == nil {
				tasks = []*task.Task{}
			}
			return printJSON(cmd, tasks)
		}
		w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tSTATE\tWORKER\tEXIT\tCOMMAND\tWAITING")
		for _, tk := range tasks {
			exit := ""
			switch {
			case tk.Status != nil && tk.Status.Signal != "":
				exit = "killed (" + tk.Status.Signal + ")"
			case tk.Status != nil && tk.State != task.Cancelled:
				exit = fmt.Sprint(tk.Status.ExitCode)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", tk.ID, tk.State, tk.Worker, exit,
				strings.Join(append([]string{tk.Spec.Command}, tk.Spec.Args...), " "), tk.Waiting)
		}
		return w.Flush()
	})
}

func (t *taskCLI) cancelCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "cancel ID", Short: "Cancel a task: a pending one ends at once, a running one is killed"}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		return c.Cancel(ctx, args[0])
	})
}

func (t *taskCLI) waitCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "wait ID", Short: "Wait until a task ends; exit with its exit code"}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		tk, err := c.Wait(ctx, args[0])
		if err != nil {
			return err
		}
		st := tk.Status
		switch {
		case tk.State == task.Done:
			return nil
		case st.ExitCode > 0 && st.ExitCode < 256 && tk.State == task.Failed:
			return &exitError{code: st.ExitCode, err: fmt.Errorf("%s failed: exit code %d", tk.ID, st.ExitCode)}
		case st.Signal != "":
			return &exitError{code: 1, err: fmt.Errorf("%s %s: killed by %s: %s", tk.ID, tk.State, st.Signal, st.Error)}
		default:
			return &exitError{code: 1, err: fmt.Errorf("%s %s: %s", tk.ID, tk.State, st.Error)}
		}
	})
}

func printJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
