package main

import (
	"os"

	"github.com/yolop-dev/yolop/internal/cli"
	"github.com/yolop-dev/yolop/internal/spawn"
)

func main() {
	// First: the same binary runs the tools' commands as their helper.
	spawn.Main()
	os.Exit(cli.Main())
}
