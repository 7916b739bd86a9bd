package git

import "testing"

func TestDisplayPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a/b c.txt":       "a/b c.txt",
		"ünïcode/名前.md":   "ünïcode/名前.md",
		"new\nline":       `"new\nline"`,
		"bad\xffname":     `"bad\xffname"`,
		"\x1b[2J\x1b[31m": `"\x1b[2J\x1b[31m"`,
		`"quoted"`:        `"\"quoted\""`,
		"tab\there":       `"tab\there"`,
	} {
		if got := DisplayPath(in); got != want {
			t.Errorf("DisplayPath(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestDisplayText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain text":         "plain text",
		"tab\tkept":          "tab\tkept",
		"two\nlines":         `two\nlines`,
		"\x1b[31mred\x1b[0m": `\x1b[31mred\x1b[0m`,
		"bad\xffbyte":        `bad\xffbyte`,
		"cr\rx":              `cr\rx`,
		"名前":                 "名前",
	} {
		if got := DisplayText(in); got != want {
			t.Errorf("DisplayText(%q) = %s, want %s", in, got, want)
		}
	}
}
