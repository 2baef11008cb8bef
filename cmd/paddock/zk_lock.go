package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/coordinator"
)

func (z *zkCLI) lockCmd() *cobra.Command {
	cmd := z.subcommand(&cobra.Command{
		Use:   "lock PATH -- CMD [ARGS...]",
		Short: "Run a command while holding the lock at PATH; exit with its status",
		Long: `Wait for the lock at PATH (the ZooKeeper lock recipe: PATH holds the contenders'
sequential ephemeral nodes), run CMD with ARGS while holding it, release it, and exit
with CMD's exit status (128+N if a signal N ended it).

If the lock may be lost while CMD runs (the session is cut off or expires), CMD is
killed and paddock zk exits 1 with a message: nothing runs under a lock that someone
else may hold. Put -- before CMD when CMD has flags of its own. On SIGINT or SIGTERM, CMD gets SIGTERM (and SIGKILL 10s later) and the
lock is released once it ends. Waiting for the lock has no time limit but interruption.`,
	}, cobra.MinimumNArgs(2), func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error {
		return c.runLocked(ctx, args[0], args[1:], cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
	})
	return cmd
}

// killGrace is how long CMD has to stop after SIGTERM before it is killed.
const killGrace = 10 * time.Second

// runLocked runs argv while holding the lock at path.
func (c *zkClient) runLocked(ctx context.Context, path string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	hold, err := coordinator.NewLock(c.s, path).Acquire(ctx)
	if err != nil {
		return c.fail(path, -1, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
		defer cancel()
		if rerr := hold.Release(rctx); rerr != nil && err == nil {
			err = c.fail(path, -1, rerr)
		}
	}()

	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = stdin, stdout, stderr
	child.WaitDelay = time.Second // a grandchild holding stdout must not keep us waiting
	select {
	case <-hold.Lost():
		return &exitError{code: 1, err: fmt.Errorf("lock lost: %s: did not run %s", path, argv[0])}
	default:
	}
	if err := child.Start(); err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		return &exitError{code: code, err: fmt.Errorf("cannot run %s: %w", argv[0], err)}
	}
	waited := make(chan error, 1)
	go func() { waited <- child.Wait() }()

	select {
	case <-waited:
	case <-hold.Lost():
		child.Process.Kill()
		<-waited
		return &exitError{code: 1, err: fmt.Errorf("lock lost: %s: killed %s", path, argv[0])}
	case <-ctx.Done():
		if child.Process.Signal(syscall.SIGTERM) != nil {
			child.Process.Kill()
		}
		t := time.NewTimer(killGrace)
		defer t.Stop()
		select {
		case <-waited:
		case <-t.C:
			child.Process.Kill()
			<-waited
		}
	}
	if code := exitStatus(child.ProcessState); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// exitStatus is a finished process's exit status, 128+N when signal N ended it, as
// shells report it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
