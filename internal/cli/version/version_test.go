package version

import (
	"bytes"
	"testing"

	"github.com/yolop-dev/yolop/internal/buildinfo"
	"github.com/yolop-dev/yolop/internal/cli/clitest"
)

func TestNewCmdVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		argv    string
		sandbox string // --sandbox, a flag of the root
		verbose bool
		err     string
	}{
		{name: "plain", argv: ""},
		{name: "verbose", argv: "--verbose", verbose: true},
		{name: "verbose with a level", argv: "--verbose", sandbox: "strict", verbose: true},
		{name: "a bad level matters only with verbose", argv: "", sandbox: "tight"},
		{name: "verbose with a bad level", argv: "--verbose", sandbox: "tight", err: `usage: --sandbox must be off, write or strict, not "tight"`},
		{name: "verbose=false", argv: "--verbose=false"},
		{name: "bad boolean", argv: "--verbose=maybe", err: `usage: invalid argument "maybe" for "--verbose" flag: strconv.ParseBool: parsing "maybe": invalid syntax`},
		{name: "unknown flag", argv: "--short", err: "usage: unknown flag: --short"},
		{name: "an argument", argv: "2", err: `usage: yolop version takes no arguments, got "2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := clitest.Factory(t)
			f.Flags.Sandbox = tt.sandbox
			var got *VersionOptions
			err := clitest.Run("yolop", NewCmdVersion(f, func(o *VersionOptions) error { got = o; return nil }), tt.argv)
			if clitest.Outcome(err) != tt.err {
				t.Fatalf("error %q, want %q", clitest.Outcome(err), tt.err)
			}
			if err == nil && got.Verbose != tt.verbose {
				t.Errorf("verbose %v, want %v", got.Verbose, tt.verbose)
			}
		})
	}
}

// The plain version reads nothing but the build: no settings, no
// sandbox probe.
func TestVersionRun(t *testing.T) {
	t.Parallel()
	for format, want := range map[string]string{
		"text": "yolop " + buildinfo.Version() + "\n",
		"json": `{"version":"` + buildinfo.Version() + `"}` + "\n",
	} {
		f, _ := clitest.Factory(t)
		f.Flags.OutputFormat = format
		if err := versionRun(&VersionOptions{IO: f.IO, Flags: f.Flags, Config: f.Config}); err != nil {
			t.Fatal(err)
		}
		if got := f.IO.Out.(*bytes.Buffer).String(); got != want {
			t.Errorf("%s: %q, want %q", format, got, want)
		}
	}
}
