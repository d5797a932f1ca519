package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/pflag"
)

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "dev"

// versionCommand is `vkgrad version`.
func versionCommand() command {
	return command{name: "version", summary: "print the version and build information", setup: func(fs *pflag.FlagSet) func([]string) error {
		return func([]string) error {
			rev := ""
			if info, ok := debug.ReadBuildInfo(); ok {
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" {
						rev = " " + s.Value
					}
				}
			}
			fmt.Fprintf(stdout, "vkgrad %s%s (%s %s/%s)\n", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		}
	}}
}
