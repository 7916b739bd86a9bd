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
//  2. Verify: the line's string values are read (only those whose escaped
//     bytes hold the run are unescaped) and the query is matched against
//     the decoded text (Unicode case folding when it ignores case), so
//     keys, ids, provider names and opaque reasoning blobs never match,
//     and the snippet is cut from the decoded text. Tool-call arguments,
//     JSON inside a JSON string, are matched value by value.
//
// Timelines are read with a small field reader and, for anything it does
// not fully understand, the timeline package itself.
//
// A regular expression (Regex) has no prefilter: every line is decoded.
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
