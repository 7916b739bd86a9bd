// Package buildinfo names this build of yolop: the one version string that
// `yolop version`, its JSON and ACP's initialize report.
package buildinfo

import "runtime/debug"

// version is set for a release build:
//
//	go build -trimpath -ldflags "-s -w -X github.com/yolop-dev/yolop/internal/buildinfo.version=v0.2.0" ./cmd/yolop
var version string

// Devel is the version of a build from a source tree that set none.
const Devel = "0.1.0-dev"

// Version is the version set at link time, else the module version `go
// install …@vX` records, else Devel.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return Devel
}
