// Package secret keeps yolop's credentials away from the tools and out of
// everything recorded or sent: it says which environment variables and
// HTTP headers look like secrets, filters the tools' environment, and
// redacts known secret values from text.
//
// The known values are process-wide: the values of every variable in
// yolop's own environment whose name looks like a secret, the passwords of
// URLs in its environment, and what the settings file holds (provider
// keys, MCP servers' secret variables and headers, passwords in URLs),
// registered with Add, AddHeader and AddURLs when the settings are read.
// Values shorter than MinLen are never redacted: replacing "1" or "true"
// everywhere would mangle output and protect nothing.
//
// A known value is also found when it was encoded (base64, standard or
// URL alphabet, at any of the three byte alignments a value can have
// inside a longer encoded text; hex, lower or upper case; percent
// encoding) and when any of these is broken over lines or spaced out
// (base64 -w, xxd -p, fold, JSON's \n escapes). Redact compacts the text
// once (separators dropped, positions kept) and looks up one 4-byte window
// in four in a filter of every form's windows (see matcher), so its cost
// is linear in the text's length and nearly independent of the number of
// values: about twice a plain search for ten raw values (BenchmarkRedact).
package secret

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// MinLen is the shortest value that is redacted, and the shortest encoded
// form of a value that is searched for.
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

// HeaderLooksSecret reports whether an HTTP header carries a credential:
// Authorization, Proxy-Authorization, Cookie, and *-Key, *-Token,
// *-Secret (X-Api-Key, X-Auth-Token); case-insensitive.
func HeaderLooksSecret(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "authorization", "proxy-authorization", "cookie", "key", "token", "secret", "apikey", "api-key":
		return true
	}
	for _, suf := range []string{"-key", "-token", "-secret", "_key", "_token"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

// FilterEnv returns environ without yolop's credentials and without
// variables whose names look like secrets, except those named in pass
// (exact names), and the names it withheld, sorted. The values of the
// secret-looking variables, withheld or passed, and the passwords of URLs
// in any value become known.
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
		AddURLs(k, v)
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

// value is one known secret and the compacted forms searched for.
type value struct {
	name, v string
	forms   []string
}

var (
	mu      sync.RWMutex
	known   []value // guarded by mu
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
	known = append(known, value{name: markerName(name), v: v, forms: forms(v)})
	match = buildMatcher(known)
}

// AddHeader makes an HTTP header's value known when the header carries a
// credential (HeaderLooksSecret): the whole value, the credentials after
// an authorization scheme ("Bearer <token>"), and for Basic the decoded
// user:password and the password.
func AddHeader(name, header, v string) {
	if !HeaderLooksSecret(header) {
		AddURLs(name, v)
		return
	}
	v = strings.TrimSpace(v)
	Add(name, v)
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok {
		return
	}
	cred = strings.TrimSpace(cred)
	Add(name, cred)
	if strings.EqualFold(scheme, "basic") {
		if dec, err := base64.StdEncoding.DecodeString(cred); err == nil {
			Add(name, string(dec))
			if _, pw, ok := strings.Cut(string(dec), ":"); ok {
				Add(name, pw)
			}
		}
	}
}

// urlCreds finds the user-info of URLs (scheme://user:password@host) in a
// text.
var urlCreds = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://([^\s/?#@:"'<>]*):([^\s/?#@"'<>]+)@`)

// AddURLs makes known the passwords of every URL in v
// (scheme://user:password@host, decoded and as written) and the values
// of its query parameters whose names look like secrets (?api_key=…).
func AddURLs(name, v string) {
	if !strings.Contains(v, "://") {
		return
	}
	for _, m := range urlCreds.FindAllStringSubmatch(v, -1) {
		Add(name+" password", m[2])
		if dec, err := url.PathUnescape(m[2]); err == nil {
			Add(name+" password", dec)
		}
	}
	for _, f := range strings.Fields(v) {
		_, rest, ok := strings.Cut(f, "://")
		if !ok {
			continue
		}
		_, query, ok := strings.Cut(rest, "?")
		if !ok {
			continue
		}
		q, err := url.ParseQuery(strings.SplitN(query, "#", 2)[0])
		if err != nil {
			continue
		}
		for k, vs := range q {
			if LooksSecret(k) || HeaderLooksSecret(k) || strings.EqualFold(k, "password") || strings.EqualFold(k, "access_token") {
				for _, qv := range vs {
					Add(name+" "+k, qv)
				}
			}
		}
	}
}

// markerName keeps a marker's name to characters that are safe inside a
// JSON string and a shell line.
func markerName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._-: ", r):
			return r
		}
		return '_'
	}, name)
}

// forms are the compacted forms of v that Redact searches for: v itself,
// its percent encodings, its hex in both cases, and the part of its
// base64 (both alphabets) that depends on v alone at each alignment.
func forms(v string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		f = compactString(f)
		if len(f) >= MinLen && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	add(v)
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	h := hex.EncodeToString([]byte(v))
	add(h)
	add(strings.ToUpper(h))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for pad := 0; pad < 3; pad++ {
			add(base64Core(enc, v, pad))
		}
	}
	return out
}

// base64Core is the part of the base64 of v, preceded by pad bytes of
// anything, that does not depend on the bytes around v: the characters
// that mix in a preceding byte (the first pad+1 of them when pad > 0)
// and those that mix in a following one (the last, unless v ends a
// 3-byte group) are left out.
func base64Core(enc *base64.Encoding, v string, pad int) string {
	b := make([]byte, pad+len(v))
	copy(b[pad:], v)
	s := enc.WithPadding(base64.NoPadding).EncodeToString(b)
	// Characters 0..: each holds 6 bits; bits of v start at bit 8*pad.
	start := (8*pad + 5) / 6 // first character made of v's bits only
	total := 8 * (pad + len(v))
	end := total / 6 // characters wholly inside
	if start >= end || end > len(s) {
		return ""
	}
	return s[start:end]
}

// sepLen is the length of the separator at s[i] (0 when there is none):
// the compacted text drops whitespace and the JSON escapes \n, \r, \t.
func sepLen(s string, i int) int {
	switch s[i] {
	case ' ', '\t', '\r', '\n':
		return 1
	case '\\':
		if i+1 < len(s) && (s[i+1] == 'n' || s[i+1] == 'r' || s[i+1] == 't') {
			return 2
		}
	}
	return 0
}

func compactString(s string) string {
	var sc scratch
	sc.compact(s)
	return string(sc.c)
}

// seg maps a run of the compacted text back to the original: compacted
// index c is original index o, and so on up to the next seg.
type seg struct{ c, o int }

// scratch is a compacted text and its segs, reused between calls (most
// texts hold no secret, and then Redact allocates nothing).
type scratch struct {
	c    []byte
	segs []seg
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// compact drops the separators of s, keeping in sc the result and where
// each of its runs starts in s.
func (sc *scratch) compact(s string) {
	sc.c, sc.segs = sc.c[:0], append(sc.segs[:0], seg{0, 0})
	i := nextSep(s, 0)
	sc.c = append(sc.c, s[:i]...)
	for i < len(s) {
		if n := sepLen(s, i); n > 0 {
			i += n
			continue
		}
		j := nextSep(s, i+1)
		sc.segs = append(sc.segs, seg{len(sc.c), i})
		sc.c = append(sc.c, s[i:j]...)
		i = j
	}
}

// sepStart marks the bytes a separator can start with.
var sepStart = [256]bool{' ': true, '\t': true, '\r': true, '\n': true, '\\': true}

// nextSep is the index of the first separator in s at or after i
// (len(s) when there is none).
func nextSep(s string, i int) int {
	for ; i < len(s); i++ {
		if sepStart[s[i]] && sepLen(s, i) > 0 {
			return i
		}
	}
	return i
}

// orig is where compacted index c is in the original text.
func orig(segs []seg, c int) int {
	k := sort.Search(len(segs), func(i int) bool { return segs[i].c > c }) - 1
	return segs[k].o + c - segs[k].c
}

func loadEnv() {
	envOnce.Do(func() {
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if LooksSecret(k) {
				Add(k, v)
			}
			AddURLs(k, v)
		}
	})
}

// Marker is what replaces a secret named name.
func Marker(name string) string { return "[redacted " + markerName(name) + "]" }

type span struct {
	start, end int // in the original text
	name       string
	width      int // length of the matched form
}

// matcher finds the forms of every known value in one pass over a
// compacted text. Every form is at least MinLen (8) bytes long, so it
// holds a 4-byte window starting at a multiple of 4 wherever it lies:
// only those windows are looked up, in a 1 Mibit filter of every 4-byte
// window of every form, and where the filter says one may start the
// forms holding it are compared. Rebuilt by Add.
type matcher struct {
	filter []uint64             // 1<<filterBits bits
	grams  map[uint32][]gramPos // 4-byte window -> the forms holding it, and where
}

const (
	stride     = 4
	filterBits = 20
)

type gramPos struct {
	form *form
	at   int // the window's offset in the form
}

type form struct {
	text, name string
}

var match *matcher // guarded by mu

func hash4(x uint32) uint32 { return (x * 0x9E3779B1) >> (32 - filterBits) }

func buildMatcher(vals []value) *matcher {
	m := &matcher{filter: make([]uint64, 1<<filterBits/64), grams: map[uint32][]gramPos{}}
	for _, v := range vals {
		for _, text := range v.forms {
			f := &form{text, v.name}
			for k := 0; k+4 <= len(text); k++ {
				x := le32(text, k)
				h := hash4(x)
				m.filter[h/64] |= 1 << (h % 64)
				m.grams[x] = append(m.grams[x], gramPos{f, k})
			}
		}
	}
	return m
}

// le32 reads 4 bytes of s at i as a little-endian number.
func le32[T string | []byte](s T, i int) uint32 {
	_ = s[i+3]
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

// matches finds every known secret in s, in any of its forms.
func matches(s string) []span {
	loadEnv()
	mu.RLock()
	m := match
	mu.RUnlock()
	if m == nil || len(s) < MinLen {
		return nil
	}
	sc := scratches.Get().(*scratch)
	defer scratches.Put(sc)
	sc.compact(s)
	c, segs := sc.c, sc.segs
	var out []span
	var seen map[[2]int]bool
	for i := 0; i+4 <= len(c); i += stride {
		x := le32(c, i)
		h := hash4(x)
		if m.filter[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		for _, g := range m.grams[x] {
			start := i - g.at
			if start < 0 || start+len(g.form.text) > len(c) || string(c[start:start+len(g.form.text)]) != g.form.text {
				continue
			}
			// A form is seen from each of its windows at the stride.
			key := [2]int{start, len(g.form.text)}
			if seen[key] {
				continue
			}
			if seen == nil {
				seen = map[[2]int]bool{}
			}
			seen[key] = true
			out = append(out, span{orig(segs, start), orig(segs, start+len(g.form.text)-1) + 1, g.form.name, len(g.form.text)})
		}
	}
	return out
}

// Redact replaces every known secret value in s, in any of its forms.
func Redact(s string) string {
	spans := matches(s)
	if len(spans) == 0 {
		return s
	}
	// Overlapping matches are replaced as one, named after the widest.
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].start != spans[j].start {
			return spans[i].start < spans[j].start
		}
		return spans[i].width > spans[j].width
	})
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		cur := spans[i]
		for i++; i < len(spans) && spans[i].start < cur.end; i++ {
			if spans[i].end > cur.end {
				cur.end = spans[i].end
			}
			if spans[i].width > cur.width {
				cur.name, cur.width = spans[i].name, spans[i].width
			}
		}
		b.WriteString(s[last:cur.start])
		b.WriteString(Marker(cur.name))
		last = cur.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// RedactBytes is Redact for byte slices; it returns b itself when nothing
// matched.
func RedactBytes(b []byte) []byte {
	if len(matches(string(b))) == 0 {
		return b
	}
	return []byte(Redact(string(b)))
}

// RedactJSON redacts a JSON document and keeps it valid JSON: it returns
// raw itself when nothing matched, and when replacing the matches in the
// text would break the document (a secret that is a number, or an escape
// inside a value), it replaces them in every string of the decoded value
// instead.
func RedactJSON(raw []byte) []byte {
	out := RedactBytes(raw)
	if string(out) == string(raw) || json.Valid(out) {
		return out
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return out
	}
	b, err := json.Marshal(redactValue(v))
	if err != nil {
		return out
	}
	return b
}

func redactValue(v any) any {
	switch x := v.(type) {
	case string:
		return Redact(x)
	case []any:
		for i := range x {
			x[i] = redactValue(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = redactValue(e)
		}
	case float64:
		if s := Redact(jsonNumber(x)); s != jsonNumber(x) {
			return s
		}
	}
	return v
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// Error is err with every known secret redacted from its message; it
// unwraps to err, so errors.Is and errors.As see through it. nil stays
// nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := Redact(msg); red != msg {
		return &redacted{msg: red, err: err}
	}
	return err
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
