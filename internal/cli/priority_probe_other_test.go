//go:build !linux

package cli_test

import (
	"fmt"
	"os"
)

// gitProbe reads Linux's per-thread priorities; spare_priority.txtar runs
// only there.
func gitProbe() {
	fmt.Fprintln(os.Stderr, "gitprobe: reads Linux priorities only")
	os.Exit(2)
}
