package config

import (
	"path/filepath"
	"testing"
)

func TestDataDir(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv("YOLOP_DATA_DIR", "")
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	tests := []struct {
		flag, env, xdg, want string
	}{
		{"/f", "/e", "/x", "/f"},
		{"", "/e", "/x", "/e"},
		{"", "", "/x", "/x/yolop"},
		{"", "", "relative", "/home/u/.local/share/yolop"},
		{"", "", "", "/home/u/.local/share/yolop"},
	}
	for _, tt := range tests {
		t.Setenv("YOLOP_DATA_DIR", tt.env)
		t.Setenv("XDG_DATA_HOME", tt.xdg)
		got, err := DataDir(tt.flag)
		if err != nil || got != tt.want {
			t.Errorf("DataDir(%q) env=%q xdg=%q = %q, %v; want %q", tt.flag, tt.env, tt.xdg, got, err, tt.want)
		}
	}
	if got, _ := DataDir("rel"); !filepath.IsAbs(got) {
		t.Errorf("relative flag gave %q, want absolute", got)
	}
}
