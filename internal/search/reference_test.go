package search

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yolop-dev/yolop/internal/session"
	"github.com/yolop-dev/yolop/internal/timeline"
)

// The fast search is checked against a slow reference that decodes every
// line with encoding/json and matches the query with the regexp package on
// every decoded string: the prefilter, the byte-level scanner, the snippet
// cutter, the limit heap and the JSON writer must change nothing.

// refCut is the snippet rule written plainly.
func refCut(s string, a, b int) string {
	lo := a
	for n := 0; lo > 0 && n < before; n++ {
		_, size := utf8.DecodeLastRuneInString(s[:lo])
		lo -= size
	}
	match := s[a:b]
	if utf8.RuneCountInString(match) > maxMatch {
		end := 0
		for n := 0; n < maxMatch; n++ {
			_, size := utf8.DecodeRuneInString(match[end:])
			end += size
		}
		match, b = match[:end]+"…", len(s)
	}
	hi := b
	for n := 0; hi < len(s) && n < after; n++ {
		_, size := utf8.DecodeRuneInString(s[hi:])
		hi += size
	}
	out := s[lo:a] + match + s[min(b, len(s)):hi]
	if lo > 0 {
		out = "…" + out
	}
	if hi < len(s) {
		out += "…"
	}
	// Runs of white space become one space, none at either end.
	return strings.Join(strings.FieldsFunc(out, unicode.IsSpace), " ")
}

// refMatcher matches with the regexp package only.
type refMatcher struct{ re *regexp.Regexp }

func newRefMatcher(t testing.TB, q string, isRegex bool) refMatcher {
	pat := q
	fold := true
	if isRegex {
		parsed, err := syntax.Parse(q, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		fold = !regexHasUpper(parsed)
	} else {
		pat = regexp.QuoteMeta(q)
		fold = !hasUpper(q)
	}
	if fold {
		pat = "(?i)" + pat
	}
	return refMatcher{re: regexp.MustCompile(pat)}
}

type refHit struct {
	Hit
	line int
}

var refSkip = map[string]bool{
	"provider": true, "model": true, "id": true, "call_id": true, "tool_call_id": true,
	"role": true, "stop_reason": true, "signature": true, "redacted": true, "status": true, "kind": true,
}

// walk reads one value from dec and matches its strings in document order.
// It returns the snippet of the first match and whether the value was read
// whole.
func (m refMatcher) walk(dec *json.Decoder, key string, nest int) (snippet string, found, complete bool) {
	tok, err := dec.Token()
	if err != nil {
		return "", false, false
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return "", false, false
				}
				ks, ok := k.(string)
				if !ok {
					return "", false, false
				}
				if s, found, complete := m.walk(dec, ks, nest); found || !complete {
					return s, found, complete
				}
			}
		case '[':
			for dec.More() {
				if s, found, complete := m.walk(dec, key, nest); found || !complete {
					return s, found, complete
				}
			}
		}
		if _, err := dec.Token(); err != nil {
			return "", false, false
		}
		return "", false, true
	case string:
		if refSkip[key] {
			return "", false, true
		}
		if (key == "arguments" || key == "args") && nest < 2 && strings.HasPrefix(strings.TrimSpace(t), "{") {
			inner := json.NewDecoder(strings.NewReader(t))
			inner.UseNumber()
			s, found, complete := m.walk(inner, "", nest+1)
			if found {
				return s, true, true
			}
			if complete {
				return "", false, true
			}
		}
		if loc := m.re.FindStringIndex(t); loc != nil {
			return refCut(t, loc[0], loc[1]), true, true
		}
		return "", false, true
	}
	return "", false, true
}

// refLine matches one well-formed event line.
func (m refMatcher) refLine(line []byte) (seq int64, typ, turn string, ts time.Time, snippet string, ok bool) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		return
	}
	var num json.Number
	dec := json.NewDecoder(bytes.NewReader(top["seq"]))
	dec.UseNumber()
	if dec.Decode(&num) != nil {
		return
	}
	seq, err := strconv.ParseInt(num.String(), 10, 64)
	if err != nil || seq <= 0 {
		return
	}
	if json.Unmarshal(top["type"], &typ) != nil || typ == "" {
		return
	}
	var s string
	if json.Unmarshal(top["turn"], &s) == nil {
		turn = s
	}
	s = ""
	if json.Unmarshal(top["ts"], &s) == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			ts = t.UTC()
		}
	}
	data, has := top["data"]
	if !has {
		return
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	snippet, found, _ := m.walk(d, "", 0)
	return seq, typ, turn, ts, snippet, found
}

// refSearch searches every session the slow way.
func refSearch(t testing.TB, dataDir, q string, isRegex, abandonedOnly bool) []refHit {
	m := newRefMatcher(t, q, isRegex)
	dirs, err := sessionDirs(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	var hits []refHit
	for _, dir := range dirs {
		id := filepath.Base(dir)
		recs, err := timeline.ReadRecords(filepath.Join(dir, session.TimelineFile))
		if err != nil {
			t.Fatal(err)
		}
		st := timeline.Build(recs)
		branches := st.Branches()
		// The branch a hit lies on, the plain way: the active branch, or
		// the first branch not active whose own turns hold the
		// checkpoint, else the first whose turns do.
		branchOf := func(cp string, active bool) string {
			for _, own := range []bool{true, false} {
				for _, b := range branches {
					if active {
						if b.Active {
							return b.ID
						}
						continue
					}
					chain := st.Chain(b.Tip)
					for i, c := range chain {
						if cp != "" && c.ID == cp && !b.Active && (!own || i >= len(chain)-b.Own) {
							return b.ID
						}
					}
				}
			}
			return ""
		}
		data, err := os.ReadFile(filepath.Join(dir, session.EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if !json.Valid(line) {
				continue
			}
			seq, typ, turn, ts, snippet, ok := m.refLine(line)
			if !ok {
				continue
			}
			active := st.InActiveRange(turn, seq)
			if abandonedOnly && active {
				continue
			}
			hits = append(hits, refHit{Hit{SessionID: id, Checkpoint: turn, Branch: branchLabel(active), BranchID: branchOf(turn, active), Time: ts, Snippet: snippet, Kind: kindOf(typ), Seq: seq}, i})
		}
		for _, cid := range st.Order {
			cp := st.Checkpoints[cid]
			active := st.Active(cid)
			if abandonedOnly && active {
				continue
			}
			for _, p := range cp.Paths {
				if loc := m.re.FindStringIndex(p); loc != nil {
					hits = append(hits, refHit{Hit: Hit{SessionID: id, Checkpoint: cid, Branch: branchLabel(active), BranchID: branchOf(cid, active), Time: cp.Created.UTC(), Snippet: "changed " + refCut(p, loc[0], loc[1]), Kind: KindPath}, line: -1})
					break
				}
			}
		}
	}
	return hits
}

func hitKey(h Hit) string {
	return fmt.Sprintf("%s|%s|%s|%s|%s|%d|%s|%q", h.SessionID, h.Checkpoint, h.Branch, h.BranchID, h.Time.Format(time.RFC3339Nano), h.Seq, h.Kind, h.Snippet)
}

// genText is random text with what makes escaping and folding hard.
func genText(r *rand.Rand, words int) string {
	pieces := []string{
		"the", "The", "THE", "quoted", `"quoted"`, "Quoted", "<tag>", "&", "a & b", `back\slash`, "new\nline", "tab\t", "  spaced  ",
		"café", "CAFÉ", "crème", "日本語", "😀", "\u212aey", "key", "KEY", "\u017fun", "sun", "\u2028", "\u00a0nbsp", "\x01", "\x7f",
		"parser", "tool_calls", "sim-1", "{", "}", "[", `\u0041`, "/", "ok",
	}
	var b strings.Builder
	for i := 0; i < words; i++ {
		if i > 0 {
			b.WriteByte(" \n\t"[r.IntN(3)])
		}
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	if r.IntN(8) == 0 {
		b.WriteString("\xff\xfe") // invalid UTF-8: decoded as U+FFFD
	}
	return b.String()
}

// genArgs is tool-call arguments: JSON text (sometimes broken or nested
// once more) or plain text.
func genArgs(r *rand.Rand, depth int) string {
	switch r.IntN(6) {
	case 0:
		return genText(r, 3)
	case 1:
		return `{"path":"a.go","content":` + strconv.Quote(genText(r, 2)) // unterminated
	case 2:
		return `{"path":tru,"content":"the quoted"}` // bad literal
	}
	v := map[string]any{"path": "pkg/" + genText(r, 1) + ".go", "content": genText(r, 6), "id": genText(r, 1)}
	if depth < 3 && r.IntN(3) == 0 {
		v["args"] = genArgs(r, depth+1)
	}
	b, _ := json.Marshal(v)
	if r.IntN(4) == 0 {
		return "  " + string(b) + " trailing the"
	}
	return string(b)
}

func genData(r *rand.Rand, typ string) any {
	switch typ {
	case "user.message":
		return map[string]any{"text": genText(r, 8)}
	case "assistant.message":
		msg := map[string]any{"role": "assistant", "text": genText(r, 10)}
		if r.IntN(2) == 0 {
			msg["tool_calls"] = []any{map[string]any{"id": "call_the", "name": "write_file", "arguments": genArgs(r, 0)}}
		}
		if r.IntN(4) == 0 {
			msg["reasoning"] = []any{map[string]any{"text": genText(r, 4), "signature": "the quoted"}}
		}
		return map[string]any{"provider": "sim", "model": "sim-1", "message": msg}
	case "tool.result":
		return map[string]any{"call_id": "call_the", "name": "bash", "content": genText(r, 12), "is_error": r.IntN(2) == 0, "n": 1.5e3}
	case "notice":
		return map[string]any{"kind": "the", "text": genText(r, 5)}
	}
	return genText(r, 3) // data that is not an object
}

// genSessions writes sessions in yolop's on-disk format: events with
// json.Marshal like the session package, a timeline with rewinds, and
// some damaged event lines (their seqs are returned: what search finds in
// a damaged line is not compared).
func genSessions(t testing.TB, dataDir string, seed uint64, n int) map[string]map[int64]bool {
	r := rand.New(rand.NewPCG(seed, 7))
	damaged := map[string]map[int64]bool{}
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("s_ref%03d", i)
		dir := filepath.Join(session.SessionsDir(dataDir), id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		damaged[id] = map[int64]bool{}
		var evs, tl bytes.Buffer
		var seq int64
		now := base.Add(time.Duration(r.IntN(100)) * time.Minute)
		emit := func(typ, turn string) {
			seq++
			// Several events share a second, some have no fraction: ties
			// are broken by session, seq, checkpoint and kind.
			if r.IntN(3) == 0 {
				now = now.Add(time.Duration(r.IntN(2000)) * time.Millisecond)
			}
			ev := map[string]any{"v": 1, "seq": seq, "type": typ, "ts": now, "data": genData(r, typ)}
			if turn != "" {
				ev["turn"] = turn
			}
			line, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if r.IntN(25) == 0 {
				// Damage the data: cut it, or flip a byte inside it.
				at := bytes.Index(line, []byte(`"data":`)) + 8
				if at < len(line)-1 {
					if r.IntN(2) == 0 {
						line = line[:at+r.IntN(len(line)-at)]
					} else {
						line = slices.Clone(line)
						line[at+r.IntN(len(line)-at-1)] = "\"\\{}[],:\x00x"[r.IntN(10)]
					}
					damaged[id][seq] = true
				}
			}
			evs.Write(line)
			evs.WriteByte('\n')
		}
		rec := func(rc timeline.Record) {
			rc.V, rc.Time = 1, now
			line, _ := json.Marshal(rc)
			tl.Write(line)
			tl.WriteByte('\n')
		}
		head := ""
		for turn := 1; turn <= 2+r.IntN(5); turn++ {
			cp := "cp" + strconv.Itoa(turn)
			rec(timeline.Record{Type: timeline.TypeCheckpointCreated, Checkpoint: cp, Parent: head, SeqBefore: seq, Prompt: genText(r, 3)})
			emit("user.message", cp)
			for k := r.IntN(4); k > 0; k-- {
				emit([]string{"assistant.message", "tool.result", "turn.error", "custom.event"}[r.IntN(4)], cp)
			}
			paths := []string{"pkg/" + genText(r, 1), "b/" + genText(r, 1)}
			rec(timeline.Record{Type: timeline.TypeTurnCompleted, Checkpoint: cp, FinalSeq: seq, Status: "completed", Paths: paths})
			head = cp
			if turn >= 2 && r.IntN(3) == 0 {
				// Rewind to the turn before: this turn is abandoned.
				parent := "cp" + strconv.Itoa(turn-2)
				if turn == 2 {
					parent = ""
				}
				rec(timeline.Record{Type: timeline.TypeHeadMoved, Restore: "r" + strconv.Itoa(turn), Target: "cp" + strconv.Itoa(turn-1), Mode: "conversation", OldHead: cp, NewHead: parent, AbandonedHead: cp})
				head = parent
				emit("notice", parent)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, session.EventsFile), evs.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, session.TimelineFile), tl.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return damaged
}

var refQueries = []struct {
	q     string
	regex bool
}{
	{q: "the"}, {q: "The"}, {q: "quoted"}, {q: `"quoted"`}, {q: `"Quoted"`}, {q: "<tag>"}, {q: "&"}, {q: "a & b"},
	{q: `back\slash`}, {q: "café"}, {q: "CAFÉ"}, {q: "日本"}, {q: "😀"}, {q: "key"}, {q: "KEY"}, {q: "sun"}, {q: "s"},
	{q: "k"}, {q: "new line"}, {q: "e\nl"}, {q: "tool_calls"}, {q: "sim-1"}, {q: "call_the"}, {q: "{"}, {q: "}"},
	{q: `\u0041`}, {q: "A"}, {q: "\u00a0nbsp"}, {q: "nbsp"}, {q: "\x01"}, {q: "parser"}, {q: "trailing the"},
	{q: "\ufffd"}, {q: "spaced"}, {q: "1.5e3"}, {q: "true"}, {q: "write_file"}, {q: ".go"}, {q: "changed"}, {q: "path"}, {q: "tru,"}, {q: "a.go"},
	{q: `qu.ted`, regex: true}, {q: `t[h]e\s+\S`, regex: true}, {q: `(?i)THE`, regex: true}, {q: `^the`, regex: true},
	{q: `\p{Han}+`, regex: true}, {q: `K`, regex: true}, {q: `[a-z]{30,}|é`, regex: true},
}

func TestSearchMatchesReference(t *testing.T) {
	t.Parallel()
	// More generated data sets: YOLOP_SEARCH_REFERENCE_SEEDS=20.
	seeds := 1
	if n, err := strconv.Atoi(os.Getenv("YOLOP_SEARCH_REFERENCE_SEEDS")); err == nil && n > 0 {
		seeds = n
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		dataDir := t.TempDir()
		damaged := genSessions(t, dataDir, seed, 12)
		for _, tc := range refQueries {
			for _, abandoned := range []bool{false, true} {
				name := fmt.Sprintf("seed%d/%q/regex=%v/abandoned=%v", seed, tc.q, tc.regex, abandoned)
				want := refSearch(t, dataDir, tc.q, tc.regex, abandoned)
				res, err := Search(Options{DataDir: dataDir, Query: tc.q, Regex: tc.regex, AbandonedOnly: abandoned})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				checkOrder(t, name, res.Hits)
				var got, exp []string
				for _, h := range res.Hits {
					if h.Kind != KindPath && damaged[h.SessionID][h.Seq] {
						continue
					}
					got = append(got, hitKey(h))
				}
				for _, h := range want {
					if h.Kind != KindPath && damaged[h.SessionID][h.Seq] {
						continue
					}
					exp = append(exp, hitKey(h.Hit))
				}
				slices.Sort(got)
				slices.Sort(exp)
				if !slices.Equal(got, exp) {
					t.Errorf("%s: hits differ from the reference\n%s", name, diffLines(got, exp))
					continue
				}
				if !abandoned {
					checkLimits(t, name, Options{DataDir: dataDir, Query: tc.q, Regex: tc.regex}, res)
				}
				checkJSON(t, name, res)
			}
		}
	}
}

func diffLines(got, want []string) string {
	var b strings.Builder
	g, w := map[string]int{}, map[string]int{}
	for _, x := range got {
		g[x]++
	}
	for _, x := range want {
		w[x]++
	}
	for _, x := range got {
		if g[x] > w[x] {
			fmt.Fprintf(&b, "  extra: %s\n", x)
			g[x] = w[x]
		}
	}
	for _, x := range want {
		if w[x] > g[x] {
			fmt.Fprintf(&b, "missing: %s\n", x)
			w[x] = g[x]
		}
	}
	return b.String()
}

// checkOrder checks hits are newest first.
func checkOrder(t *testing.T, name string, hits []Hit) {
	t.Helper()
	for i := 1; i < len(hits); i++ {
		a, b := hits[i-1], hits[i]
		c := b.Time.Compare(a.Time)
		if c == 0 {
			c = strings.Compare(b.SessionID, a.SessionID)
		}
		if c == 0 && a.Seq != b.Seq {
			c = -1
			if a.Seq < b.Seq {
				c = 1
			}
		}
		if c == 0 {
			c = strings.Compare(a.Checkpoint, b.Checkpoint)
		}
		if c == 0 {
			c = strings.Compare(a.Kind, b.Kind)
		}
		if c > 0 {
			t.Fatalf("%s: hit %d out of order:\n%+v\n%+v", name, i, a, b)
		}
	}
}

// checkLimits checks a limited search returns the first hits of the
// unlimited one and counts the rest.
func checkLimits(t *testing.T, name string, o Options, all *Result) {
	t.Helper()
	for _, limit := range []int{1, 3, 17} {
		o.Limit = limit
		res, err := Search(o)
		if err != nil {
			t.Fatal(err)
		}
		n := min(limit, len(all.Hits))
		if !slices.Equal(res.Hits, all.Hits[:n]) || res.More != len(all.Hits)-n || res.Sessions != all.Sessions {
			t.Errorf("%s: limit %d: %d hits (more %d), want the first %d of %d", name, limit, len(res.Hits), res.More, n, len(all.Hits))
		}
	}
}

// checkJSON checks WriteJSON writes what encoding/json writes.
func checkJSON(t *testing.T, name string, res *Result) {
	t.Helper()
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := res.WriteJSON(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("%s: WriteJSON differs from encoding/json:\n got %.300s\nwant %.300s", name, got.Bytes(), want.Bytes())
	}
}

func TestWriteJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("x", 3600)
	res := &Result{Query: "q\"<>&\u2028", Hits: []Hit{
		{SessionID: "s", Checkpoint: "", Branch: BranchAbandoned, BranchID: "b\"3", Time: time.Date(2026, 1, 2, 3, 4, 5, 60000, time.UTC), Snippet: "a\x00\x1f\b\f\n\r\t\"\\\u2029\xff<>&é😀", Kind: KindPrompt, Seq: 7},
		{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, loc)},
		{Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{},
	}, More: 3, Sessions: 2, Problems: []string{"p\n"}}
	checkJSON(t, "fixed", res)
	checkJSON(t, "empty", &Result{Hits: []Hit{}})
	checkJSON(t, "nil", &Result{})
	var buf bytes.Buffer
	if err := (&Result{Hits: []Hit{{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}}).WriteJSON(&buf); err == nil {
		t.Error("a year past 9999 was written")
	}
}

func FuzzJSONString(f *testing.F) {
	f.Add("plain", int64(0))
	f.Add("\x00\u2028\xff\"\\<é", int64(1e9))
	f.Fuzz(func(t *testing.T, s string, ns int64) {
		tm := time.Unix(ns%(1<<40), ns%1e9).UTC()
		want, err := json.Marshal(Hit{Snippet: s, Time: tm})
		if err != nil {
			t.Skip()
		}
		got, err := appendHitJSON(nil, &Hit{Snippet: s, Time: tm})
		if err != nil {
			t.Fatal(err)
		}
		// json.Marshal escapes HTML; WriteJSON, like the CLI, does not.
		want = bytes.ReplaceAll(want, []byte(`\u003c`), []byte("<"))
		want = bytes.ReplaceAll(want, []byte(`\u003e`), []byte(">"))
		want = bytes.ReplaceAll(want, []byte(`\u0026`), []byte("&"))
		if !bytes.Equal(got, want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
}

func FuzzSnippet(f *testing.F) {
	f.Add("some text with a MATCH in the middle\nand more", 17, 22)
	f.Add(strings.Repeat("é ", 200), 10, 300)
	f.Fuzz(func(t *testing.T, s string, a, b int) {
		s = strings.ToValidUTF8(s, "\ufffd")
		if a < 0 || b < a || b > len(s) || a < len(s) && !utf8.RuneStart(s[a]) || b < len(s) && !utf8.RuneStart(s[b]) {
			t.Skip()
		}
		got := string(appendSnippet([]byte("prefix"), []byte(s), a, b))
		if want := "prefix" + refCut(s, a, b); got != want {
			t.Errorf("appendSnippet(%q, %d, %d) = %q, want %q", s, a, b, got, want)
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-01T00:00:01Z", "2024-02-29T23:59:59.123456789Z", "2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-01T24:00:00Z", "2026-11-01T00:00:60Z", "2026-11-01T00:00:00.Z", "2026-11-01T00:00:00.1234567891Z", "0000-01-01T00:00:00Z", "2026-11-01T00:00:00+01:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseRFC3339UTC([]byte(s))
		want, err := time.Parse(time.RFC3339Nano, s)
		if ok && (err != nil || !got.Equal(want) || got.Location() != time.UTC) {
			t.Errorf("parseRFC3339UTC(%q) = %v, time.Parse = %v, %v", s, got, want, err)
		}
	})
}

func FuzzScanString(f *testing.F) {
	f.Add([]byte(`abc\"def\u00e9\\" tail`))
	f.Add([]byte("long text without a quote at all, more than eight bytes\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		end, _, ok := scanString(b, 0)
		// encoding/json decides whether a string starts here and where
		// it ends.
		var s string
		dec := json.NewDecoder(bytes.NewReader(append([]byte{'"'}, b...)))
		err := dec.Decode(&s)
		if ok != (err == nil) {
			t.Fatalf("scanString(%q) ok=%v, encoding/json: %v", b, ok, err)
		}
		if ok && int64(end+2) != dec.InputOffset() {
			t.Errorf("scanString(%q) ends at %d, encoding/json at %d", b, end, dec.InputOffset()-2)
		}
	})
}

// Every cut of some tricky texts: spaces at the ends and doubled, tabs,
// newlines, non-ASCII space, long matches, text longer than the context.
func TestSnippetEveryCut(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 40)
	texts := []string{
		"", " ", "  ", "a", " lead", "trail ", "two  spaces", "tab\there", "new\nline\n", "nb\u00a0sp é ü",
		" " + long + " ", long + "  " + long, "x" + strings.Repeat("y", 300) + " z", "a !b", "\u2028sep\u2029",
	}
	for _, s := range texts {
		for a := 0; a <= len(s); a++ {
			if a < len(s) && !utf8.RuneStart(s[a]) {
				continue
			}
			for b := a; b <= len(s); b += 1 + (b-a)/8 {
				if b < len(s) && !utf8.RuneStart(s[b]) {
					continue
				}
				if got, want := string(appendSnippet(nil, []byte(s), a, b)), refCut(s, a, b); got != want {
					t.Fatalf("appendSnippet(%q, %d, %d) = %q, want %q", s, a, b, got, want)
				}
			}
		}
	}
}

func TestTimelineHasLooksOnlyAtPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q, tl string
		want  bool
	}{
		{"zebra", `{"v":1,"type":"checkpoint.created","checkpoint":"cp1","prompt":"a zebra"}` + "\n", false},
		{"zebra", `{"v":1,"type":"turn.completed","checkpoint":"cp1","paths":["a/zebra.go"]}` + "\n", true},
		{"Zebra", `{"v":1,"type":"turn.completed","checkpoint":"cp1","paths":["a/Zebra.go"],"prompt":"Zebra"}` + "\n", true},
		{"zebra", `{"prompt":"zebra","paths":["x"]}` + "\n" + `{"paths":["y"],"reason":"zebra"}` + "\n", false},
		{"zebra", `{"prompt":"zebra","paths":["x","]zebra"]}`, true},
		{"zebra", `{"prompt":"zebra","Paths":["x"]}` + "\n", true},         // encoding/json takes Paths for paths
		{"zebra", `{"prompt":"zebra","pa\u0074hs":["x"]}` + "\n", true},    // an escaped key
		{"zebra", `{"prompt":"zebra","paths" : ["zebra"]}` + "\n", true},   // not the plain form
		{"zebra", `{"prompt":"zebra","paths":["unterminated` + "\n", true}, // damaged
		{"zebra", `{"prompt":"no match here"}` + "\n", false},
	} {
		m, err := compile(tc.q, false)
		if err != nil {
			t.Fatal(err)
		}
		var ff *foldFinder
		if m.fold {
			ff = newFoldFinder(m.needle)
		}
		got := pathsHold(m, ff, []byte(tc.tl))
		if got != tc.want {
			t.Errorf("pathsHold(%q, %s) = %v, want %v", tc.q, tc.tl, got, tc.want)
		}
	}
}

// The long s folds to s: a path with it is found though the session's
// events have none (the prefilter looks for it in the timeline itself).
func TestSearchFoldsLongSInPathsOnly(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	b := newBuilder(t, dataDir, "/repo")
	b.turn("plain prompt", "plain reply", nil, "docs/\u017fun.txt")
	res, err := Search(Options{DataDir: dataDir, Query: "sun"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.Hits[0].Kind != KindPath || res.Hits[0].Snippet != "changed docs/\u017fun.txt" {
		t.Errorf("hits %+v, want the changed path", res.Hits)
	}
}
