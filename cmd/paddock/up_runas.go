package main

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// upNobody is the user paddock up's workers run tasks as when it runs as root and
// --run-as is not given: make run is often run as root, and a task must not be.
const upNobody = "nobody"

// addUpRunAsFlags adds paddock up's --run-as and --allow-root, its workers' run_as and
// allow_root.
func addUpRunAsFlags(f *pflag.FlagSet) {
	f.String("run-as", "", "`user` (a name, or uid[:gid]) the workers run tasks as; as root, nobody unless given")
	f.Bool("allow-root", false, "let the workers run tasks as root (with paddock up run as root and --run-as root, or as uid 0)")
}

// upRunAs returns the workers' run_as and allow_root from paddock up's flags: --run-as,
// or nobody where paddock up runs as root, which it logs.
func upRunAs(cmd *cobra.Command, log *slog.Logger) (runAs string, allowRoot bool) {
	f := cmd.Flags()
	runAs, _ = f.GetString("run-as")
	allowRoot, _ = f.GetBool("allow-root")
	if runAs == "" && !allowRoot && os.Geteuid() == 0 {
		runAs = upNobody
		log.Info("running as root: the workers run tasks as nobody (--run-as to choose another user)", "run_as", upNobody)
	}
	return runAs, allowRoot
}
