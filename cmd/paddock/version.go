package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set by a release build: go build -ldflags "-X main.version=v1.2.3".
// Otherwise the module version (go install ...@v1.2.3) or "(devel)" is shown.
var version string

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print paddock's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "paddock", versionString())
		},
	}
}

// versionString is the version, the commit when the build recorded it, and the Go
// toolchain and platform.
func versionString() string {
	v, commit := version, ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				commit = " " + s.Value[:12]
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return fmt.Sprintf("%s%s %s %s/%s", v, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
