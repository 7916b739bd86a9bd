package secret

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wrap breaks s into lines of n characters, as base64 -w and xxd -p do.
func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

// A known key is found however a command printed it: encoded, at any
// alignment inside a longer encoded text, wrapped over lines, spaced out,
// inside JSON.
func TestEncodedCopiesAreRedacted(t *testing.T) {
	const key = "sk-enc-Zq8v1W4mN0pL2xR7tY5uB3"
	Add("OPENAI_API_KEY", key)
	b64 := base64.StdEncoding.EncodeToString
	b64url := base64.URLEncoding.EncodeToString
	hx := hex.EncodeToString
	long := strings.Repeat("environment noise ", 8)
	cases := map[string]string{
		"raw":                      "key: " + key + "\n",
		"base64":                   b64([]byte(key)),
		"base64 of echo":           b64([]byte(key + "\n")),
		"base64 offset 1":          b64([]byte("=" + key + "\n")),
		"base64 offset 2":          b64([]byte("K=" + key)),
		"base64 inside environ":    b64([]byte(long + "OPENAI_API_KEY=" + key + "\x00HOME=/root\x00")),
		"base64 -w 76":             wrap(b64([]byte(long+"OPENAI_API_KEY="+key+"\x00"+long)), 76),
		"base64 url alphabet":      b64url([]byte("\xff\xfe" + key + "\xfb")),
		"hex":                      hx([]byte(key)),
		"HEX":                      strings.ToUpper(hx([]byte("x" + key + "y"))),
		"xxd -p":                   wrap(hx([]byte(long+key+long)), 60),
		"hex bytes spaced":         strings.Join(strings.Split(wrap(hx([]byte(key)), 2), "\n"), " "),
		"fold -w 7":                wrap(key, 7),
		"json with escapes":        mustJSON(t, map[string]string{"out": wrap(b64([]byte(key)), 10)}),
		"percent-encoded":          url.QueryEscape("a=" + key + "&b=/+"),
		"crlf wrapped":             strings.ReplaceAll(wrap(b64([]byte(key)), 12), "\n", "\r\n"),
		"base64 wrapped indented":  strings.ReplaceAll(wrap(b64([]byte(key)), 16), "\n", "\n    "),
		"hex in a longer hex dump": hx([]byte("prefix bytes " + key + " suffix bytes")),
	}
	for name, text := range cases {
		got := Redact(text)
		if !strings.Contains(got, Marker("OPENAI_API_KEY")) {
			t.Errorf("%s: not redacted:\n%s\n->\n%s", name, text, got)
			continue
		}
		// What is left holds no part of the key's encodings long enough
		// to matter.
		for _, enc := range forms(key) {
			if strings.Contains(compactString(got), enc[:MinLen]) && name != "raw" {
				t.Errorf("%s: %q of an encoding is left:\n%s", name, enc[:MinLen], got)
			}
		}
	}
	// Redacting inside JSON keeps it JSON.
	js := []byte(cases["json with escapes"])
	out := RedactJSON(js)
	if !json.Valid(out) || strings.Contains(string(out), b64([]byte(key))[:12]) {
		t.Fatalf("RedactJSON: %s", out)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Text that holds no secret is left as it is, byte for byte: hex and
// base64 of other data, code with escapes, wrapped prose.
func TestUnrelatedTextIsKept(t *testing.T) {
	Add("SOME_TOKEN", "tok-kept-Qw3rTy7uIo9p")
	r := rand.New(rand.NewSource(1))
	buf := make([]byte, 4096)
	r.Read(buf)
	for _, text := range []string{
		hex.EncodeToString(buf),
		wrap(base64.StdEncoding.EncodeToString(buf), 76),
		"printf(\"a\\nb\\tc\\r\\n\");\n    return x;\n",
		strings.Repeat("the quick brown fox jumps over the lazy dog\n", 100),
	} {
		if got := Redact(text); got != text {
			t.Fatalf("changed:\n%.300s\n->\n%.300s", text, got)
		}
	}
}

func TestHeadersAndURLs(t *testing.T) {
	AddHeader("mcp.servers.web.headers.Authorization", "Authorization", "Bearer hdr-tok-9f8e7d6c5b4a")
	AddHeader("mcp.servers.web.headers.X-Api-Key", "X-Api-Key", "xkey-11223344556677")
	AddHeader("mcp.servers.web.headers.Cookie", "Cookie", "session=ck-0a9b8c7d6e5f")
	AddHeader("mcp.servers.web.headers.Authorization", "Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("bob:pw-basic-5566778899")))
	AddHeader("mcp.servers.web.headers.Accept", "Accept", "application/json; charset=utf-8")
	AddURLs("mcp.servers.db.args", "--db=postgres://admin:pg-pass%40word9@db.internal:5432/app?sslmode=require&api_key=qk-0099887766")
	for _, leak := range []string{"hdr-tok-9f8e7d6c5b4a", "xkey-11223344556677", "session=ck-0a9b8c7d6e5f", "pw-basic-5566778899", "pg-pass%40word9", "pg-pass@word9", "qk-0099887766"} {
		if got := Redact("x " + leak + " y"); strings.Contains(got, leak) {
			t.Errorf("%s is not redacted: %s", leak, got)
		}
	}
	if got := Redact("application/json; charset=utf-8"); got != "application/json; charset=utf-8" {
		t.Errorf("a plain header was redacted: %s", got)
	}
	// The user name and host of a URL stay readable.
	if got := Redact("postgres://admin:pg-pass%40word9@db.internal"); got != "postgres://admin:"+Marker("mcp.servers.db.args password")+"@db.internal" {
		t.Errorf("URL: %s", got)
	}
	for name, want := range map[string]bool{"Authorization": true, "cookie": true, "X-Api-Key": true, "X-Auth-Token": true, "Accept": false, "X-Request-Id": false, "Keep-Alive": false} {
		if HeaderLooksSecret(name) != want {
			t.Errorf("HeaderLooksSecret(%q) != %v", name, want)
		}
	}
}

// A secret that is a JSON number is replaced without breaking the
// document.
func TestRedactJSONNumber(t *testing.T) {
	Add("PIN_PASSWORD", "918273645546")
	out := RedactJSON([]byte(`{"n":918273645546,"s":"x 918273645546"}`))
	if !json.Valid(out) || strings.Contains(string(out), "918273645546") {
		t.Fatalf("%s", out)
	}
}

// BenchmarkRedact: the cost of redaction per text size with 10 known
// values (every form of each searched) against the plain search for the
// 10 raw values alone, on text that holds none of them (the common case).
func BenchmarkRedact(b *testing.B) {
	for i := 0; i < 10; i++ {
		Add(fmt.Sprintf("BENCH_%d_KEY", i), fmt.Sprintf("sk-bench-%02d-%s", i, strings.Repeat("q7W", 10)))
	}
	r := rand.New(rand.NewSource(2))
	for _, size := range []int{128, 4 << 10, 64 << 10, 1 << 20} {
		// Command output: lines of words, hex and base64.
		var sb strings.Builder
		buf := make([]byte, 45)
		for sb.Len() < size {
			r.Read(buf)
			switch r.Intn(3) {
			case 0:
				sb.WriteString("building package github.com/example/thing ok 0.123s\n")
			case 1:
				sb.WriteString(hex.EncodeToString(buf) + "\n")
			default:
				sb.WriteString(base64.StdEncoding.EncodeToString(buf) + "\n")
			}
		}
		text := sb.String()[:size]
		b.Run(fmt.Sprintf("every-form/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			defer cpuPerOp(b)()
			for b.Loop() {
				if Redact(text) != text {
					b.Fatal("changed")
				}
			}
		})
		b.Run(fmt.Sprintf("raw-only/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			mu.RLock()
			raw := make([]string, len(known))
			for i, k := range known {
				raw[i] = k.v
			}
			mu.RUnlock()
			defer cpuPerOp(b)()
			for b.Loop() {
				for _, v := range raw {
					if strings.Contains(text, v) {
						b.Fatal("found")
					}
				}
			}
		})
	}
}

// cpuPerOp reports the process's CPU time per operation next to the wall
// time: on a loaded machine the wall time mostly measures the wait for a
// core.
func cpuPerOp(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op") }
}
