package tui

import (
	"strings"
	"testing"

	"github.com/yolop-dev/yolop/internal/provider"
)

// TestStatusBarShowsUsage: the session's tokens and, when the model's
// window is known, how full the context is; the usage yields before the
// provider and the checkpoint count when the terminal is narrow.
func TestStatusBarShowsUsage(t *testing.T) {
	t.Parallel()
	in := baseInfo()
	in.Usage = provider.Usage{InputTokens: 9000, OutputTokens: 300, CacheReadTokens: 3000}
	in.ContextTokens, in.ContextWindow = 50_000, 200_000
	f := &fakeSession{info: in}
	m, _ := newTestModel(t, f)
	m.info = in
	if got := m.statusLine(120); !strings.Contains(got, "context 25% · 12.3k tokens") {
		t.Fatalf("status line at 120 columns: %q", got)
	}
	in.ContextWindow = 0
	m.info = in
	if got := m.statusLine(120); !strings.Contains(got, "12.3k tokens") || strings.Contains(got, "context") {
		t.Fatalf("status line without a known window: %q", got)
	}
	narrow := m.statusLine(40)
	if !strings.Contains(narrow, "3 checkpoints") || strings.Contains(narrow, "tokens") {
		t.Fatalf("status line at 40 columns: %q", narrow)
	}
	if compactCount(999) != "999" || compactCount(1000) != "1k" || compactCount(2_500_000) != "2.5M" {
		t.Fatal("compactCount")
	}
}
