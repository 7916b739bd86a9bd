package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/yolop-dev/yolop/internal/cli"
	"github.com/yolop-dev/yolop/internal/spawn"
)

func main() {
	// First: the same binary runs the tools' commands as their helper.
	spawn.Main()
	stop := profile(os.Getenv("YOLOP_CPUPROFILE"))
	code := cli.Main()
	stop()
	os.Exit(code)
}

// profile writes a CPU profile of the whole process to path when it is
// set (docs/benchmarks.md: how the long-session figures were found).
func profile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolop: YOLOP_CPUPROFILE: %v (no profile is written)\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "yolop: YOLOP_CPUPROFILE: %v\n", err)
		}
	}
}
