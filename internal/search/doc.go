// Package search finds text in every session's history: prompts, assistant
// text and reasoning, tool calls and results, notices, and the paths each
// turn changed, on the active branch and on abandoned ones alike. It also
// describes sessions for listings (Catalog) with the time each was last
// used, which is what `yolop sessions` sorts by and `-c` picks.
//
// It only reads: no lock is taken and nothing is written, so a session that
// is open in another process, damaged or read-only is searched as it is.
//
// # How a search runs
//
// events.jsonl is JSON-escaped on disk ("\"" for a quote, "\u003c" for
// "<", and tool-call arguments are JSON inside a JSON string, so escaped
// twice). A plain-text query is therefore matched in two steps:
//
//  1. Prefilter: the longest run of the query whose bytes are written
//     unescaped at every level (printable ASCII other than `"`, `\`, `<`,
//     `>`, `&`; other UTF-8 too when the search is case-sensitive) is
//     searched in the raw file bytes. Ignoring case, the run's rarest byte
//     is found in both cases with bytes.IndexByte and the bytes around it
//     are compared folded; a file that holds the Kelvin sign or the long s
//     (which fold to k and s) uses a run without those letters. Only lines
//     holding the run are decoded. A query without such a run (say "<>")
//     decodes every line.
//  2. Verify: the line's header (seq, type, time, turn) is read without
//     allocating, and the string values of its data are walked in document
//     order by a scanner that skips string contents eight bytes at a time
//     and accepts only what encoding/json accepts. Only strings whose
//     escaped bytes hold the needle are unescaped (into reused buffers), and
//     the query is matched against the decoded text (Unicode case folding
//     when it ignores case; ASCII folding without copying the text when the
//     query is ASCII and the text has neither the Kelvin sign nor the long
//     s), so keys, ids, provider names and opaque reasoning blobs never
//     match. Tool-call arguments, JSON inside a JSON string, are matched
//     value by value; arguments that are not complete JSON are matched as
//     text. The snippet is cut from the decoded text straight into a
//     per-worker arena.
//
// Timelines are read with a small field reader and, for anything it does
// not fully understand, the timeline package itself.
//
// A regular expression (Regex) has no prefilter: every line is decoded.
//
// # Cost per hit
//
// Every hit is verified, so Result.More is exact; what a hit costs beyond
// that is kept small. Hits are held in pointer-free records (interned
// strings, the snippet's place in the arena) that the garbage collector
// does not scan. With a limit, each worker keeps a heap of the newest
// Limit hits and cuts no snippet for a hit that cannot be among them;
// sessions are searched newest event log first so the heaps fill early.
// A hit is labeled active or abandoned only when kept, so a session whose
// hits are all dropped has its timeline decoded only if its bytes hold the
// needle (for the changed paths) or AbandonedOnly needs the labels; a
// problem with a timeline is reported when it was read. Result.WriteJSON
// writes the answer without reflection, byte for byte what encoding/json
// writes.
//
// Smart case: a query (or, with Regex, a literal of the pattern) that has
// an upper-case letter is matched case-sensitively; otherwise case is
// ignored.
//
// # Active and abandoned
//
// Each hit says whether it lies on the session's active branch, decided by
// timeline.State.InActiveRange over the session's timeline (the one
// implementation of the rule). What search shows of an abandoned branch is
// for the user only: it is printed, never added to a session, so it never
// reaches a model.
package search
