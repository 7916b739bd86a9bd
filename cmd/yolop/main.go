package main

import (
	"os"

	"github.com/yolop-dev/yolop/internal/cli"
)

func main() { os.Exit(cli.Main()) }
