package buildinfo

import "testing"

func TestVersion(t *testing.T) {
	// A test binary has no module version: the source-tree version.
	if got := Version(); got != Devel {
		t.Fatalf("Version() = %q, want %q", got, Devel)
	}
	old := version
	t.Cleanup(func() { version = old })
	version = "v9.8.7"
	if got := Version(); got != "v9.8.7" {
		t.Fatalf("with the link-time version: %q", got)
	}
}
