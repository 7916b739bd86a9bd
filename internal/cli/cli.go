// Package cli is yolop's command line: flags, subcommands and exit codes.
package cli

import (
	"fmt"
	"os"
)

// Version is set at build time with -ldflags "-X .../cli.Version=...".
var Version = "0.1.0-dev"

// Main runs yolop and returns the process exit code.
func Main() int {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println("yolop", Version)
		return 0
	}
	fmt.Fprintln(os.Stderr, "yolop: not yet wired")
	return 2
}
