// Command paddock is paddock's one binary: the ZooKeeper-compatible coordination server
// and, as they arrive, the services built on it. Each subcommand only wires its
// configuration (package configs) to its component's New and Run.
//
// The process stops cleanly on SIGINT or SIGTERM: the context given to Run is cancelled.
// A second signal ends it at once. A bad configuration exits with status 1 and the error
// on stderr.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/worker"
)

func main() {
	worker.SupervisorMain() // a worker's task supervisor is this program re-executed
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop) // after the first signal, the default action: a second one kills
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "paddock:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "paddock",
		Short:         "A ZooKeeper-compatible coordination server and the services built on it",
		Version:       versionString(),
		SilenceUsage:  true, // a bad config is not a usage error
		SilenceErrors: true, // main prints the error once
	}
	root.PersistentFlags().String("log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(newServerCmd(), newStoreCmd(), newBenchCmd(), newZKCmd(), newVersionCmd(),
		newMasterCmd(), newWorkerCmd(), newTaskCmd(), newJobCmd(), newUpCmd(), newReplicatorCmd(), newLogCollectorCmd(), newWebCmd(), newCertsCmd())
	return root
}

// newLogger returns a text logger on stderr at the level of cmd's --log-level.
func newLogger(cmd *cobra.Command) (*slog.Logger, error) { return newLoggerTo(cmd, os.Stderr) }

// newLoggerTo returns a text logger writing to w at the level of cmd's --log-level.
func newLoggerTo(cmd *cobra.Command, w io.Writer) (*slog.Logger, error) {
	s, err := cmd.Flags().GetString("log-level")
	if err != nil {
		return nil, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}
