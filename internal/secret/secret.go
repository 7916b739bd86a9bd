// Package secret keeps yolop's credentials away from the tools and out of
// everything recorded or sent: it says which environment variables look
// like secrets, filters the tools' environment, and redacts known secret
// values from text.
//
// The known values are process-wide: the values of every variable in
// yolop's own environment whose name looks like a secret, and the
// provider keys from the settings file and flags (registered with Add
// when the provider configuration is resolved). Values shorter than
// MinLen are never redacted: replacing "1" or "true" everywhere would
// mangle output and protect nothing.
package secret

import (
	"os"
	"sort"
	"strings"
	"sync"
)

// MinLen is the shortest value that is redacted.
const MinLen = 8

// Credentials are the variables that hold yolop's own provider keys.
var Credentials = []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}

// LooksSecret reports whether an environment variable's name looks like it
// holds a secret: *_KEY, *_TOKEN, *_SECRET (or exactly KEY, TOKEN, SECRET),
// or anything containing PASSWORD or PASSWD; case-insensitive.
func LooksSecret(name string) bool {
	n := strings.ToUpper(name)
	for _, suf := range []string{"KEY", "TOKEN", "SECRET"} {
		if n == suf || strings.HasSuffix(n, "_"+suf) {
			return true
		}
	}
	return strings.Contains(n, "PASSWORD") || strings.Contains(n, "PASSWD")
}

// FilterEnv returns environ without yolop's credentials and without
// variables whose names look like secrets, except those named in pass
// (exact names), and the names it withheld, sorted.
func FilterEnv(environ, pass []string) (kept, withheld []string) {
	allow := map[string]bool{}
	for _, p := range pass {
		allow[p] = true
	}
	creds := map[string]bool{}
	for _, c := range Credentials {
		creds[c] = true
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if creds[k] || LooksSecret(k) {
			Add(k, v)
			if !allow[k] {
				withheld = append(withheld, k)
				continue
			}
		}
		kept = append(kept, kv)
	}
	sort.Strings(withheld)
	return kept, withheld
}

type value struct{ name, v string }

var (
	mu      sync.RWMutex
	known   []value
	envOnce sync.Once
)

// Add makes value known under name (used in the redaction marker). A value
// shorter than MinLen is ignored.
func Add(name, v string) {
	v = strings.TrimSpace(v)
	if len(v) < MinLen {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range known {
		if k.v == v {
			return
		}
	}
	known = append(known, value{name, v})
	// Longest first: a key that contains another is replaced whole.
	sort.SliceStable(known, func(i, j int) bool { return len(known[i].v) > len(known[j].v) })
}

func loadEnv() {
	envOnce.Do(func() {
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if LooksSecret(k) {
				Add(k, v)
			}
		}
	})
}

// Marker is what replaces a secret named name.
func Marker(name string) string { return "[redacted " + name + "]" }

// Redact replaces every known secret value in s.
func Redact(s string) string {
	loadEnv()
	mu.RLock()
	defer mu.RUnlock()
	for _, k := range known {
		if strings.Contains(s, k.v) {
			s = strings.ReplaceAll(s, k.v, Marker(k.name))
		}
	}
	return s
}

// RedactBytes is Redact for byte slices; it returns b itself when nothing
// matched.
func RedactBytes(b []byte) []byte {
	loadEnv()
	mu.RLock()
	hit := false
	for _, k := range known {
		if strings.Contains(string(b), k.v) {
			hit = true
			break
		}
	}
	mu.RUnlock()
	if !hit {
		return b
	}
	return []byte(Redact(string(b)))
}
