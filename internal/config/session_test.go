package config

import (
	"testing"
	"time"
)

// TestSessionValues: the environment variables and settings a session
// reads when it opens, and the words that refuse a bad one.
func TestSessionValues(t *testing.T) {
	// Not parallel: it sets environment variables.
	for _, v := range []string{"YOLOP_COMPACT_TOKENS", "YOLOP_CAPTURE_BUDGET", "YOLOP_WATCH_BUDGET"} {
		t.Setenv(v, "")
	}
	withSettings(t, "[workspace]\nmax_file_size = 0\n")
	if n, err := CompactAt(); err != nil || n != 120000 {
		t.Errorf("compaction unset: %d, %v", n, err)
	}
	if d, err := CaptureBudget(); err != nil || d != 0 {
		t.Errorf("capture budget unset: %v, %v", d, err)
	}
	if w, err := Watch(); err != nil || w.Budget != 0 {
		t.Errorf("watch budget unset: %+v, %v", w, err)
	}
	if l, err := Folder(); err != nil || l.MaxFiles != DefaultMaxFiles || l.MaxFileSize != 0 {
		t.Errorf("folder limits: %+v, %v", l, err)
	}
	t.Setenv("YOLOP_CAPTURE_BUDGET", "2m")
	t.Setenv("YOLOP_WATCH_BUDGET", "0")
	if d, err := CaptureBudget(); err != nil || d != 2*time.Minute {
		t.Errorf("capture budget 2m: %v, %v", d, err)
	}
	if w, err := Watch(); err != nil || w.Budget != -1 {
		t.Errorf("no watcher: %+v, %v", w, err)
	}
	withSettings(t, "")
	for _, tt := range []struct {
		env, val string
		read     func() error
		want     string
	}{
		{"YOLOP_COMPACT_TOKENS", "-1", func() error { _, err := CompactAt(); return err },
			`YOLOP_COMPACT_TOKENS="-1" is not a token count (a whole number, 0 turns automatic compaction off)`},
		{"YOLOP_CAPTURE_BUDGET", "0s", func() error { _, err := CaptureBudget(); return err },
			`YOLOP_CAPTURE_BUDGET="0s" is not a positive duration (e.g. 30s or 2m)`},
		{"YOLOP_WATCH_BUDGET", "many", func() error { _, err := Watch(); return err },
			`YOLOP_WATCH_BUDGET="many" is not a number of watches (e.g. 8192; 0 means no watcher)`},
	} {
		t.Setenv(tt.env, tt.val)
		if err := tt.read(); err == nil || err.Error() != tt.want {
			t.Errorf("%s=%s: %v\nwant %s", tt.env, tt.val, err, tt.want)
		}
	}
	path := withSettings(t, "[workspace]\nmax_files = 0\n")
	if _, err := Folder(); err == nil || err.Error() != "settings "+path+": [workspace] max_files = 0: want 1 or more" {
		t.Errorf("max_files = 0: %v", err)
	}
}
