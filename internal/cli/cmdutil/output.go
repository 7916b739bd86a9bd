package cmdutil

import (
	"fmt"
	"io"
	"time"

	printhost "github.com/yolop-dev/yolop/internal/host/print"
)

// WriteJSON prints v as the one JSON object of the invocation.
func WriteJSON(w io.Writer, v any) error {
	b, err := printhost.JSONLine(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// NonNil makes an empty list print as [] rather than null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Plural is n with the word that fits it.
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Ago renders a past time for listings.
func Ago(t *time.Time, now time.Time) string {
	if t == nil {
		return "never"
	}
	d := now.Sub(*t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	case d < 7*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
	return t.Local().Format("2006-01-02")
}

// TellRepairs prints what opening a session repaired on w, one line each,
// as every host words them.
func TellRepairs(w io.Writer, repairs []string) {
	for _, r := range repairs {
		fmt.Fprintln(w, "yolop: repaired:", r)
	}
}
