// Package resume owns resume.bin, a derived file in the session directory:
// what opening a session needs from its logs, as of the end of a turn,
// restore or repair, so that the next process parses only what was
// appended after (see session.OpenAt and timeline.OpenLogAt) instead of
// replaying a long session's logs. It is a package of its own because it
// is the one file that joins the event log, the timeline and the model
// context: each of those packages owns its own part of it (session.Prefix,
// timeline.AppendState, agent.ContextCache).
//
// # Format
//
// One record, written whole, in the binary codec of the derived caches
// (package binenc):
//
//	"yolop-resume\n" uvarint(version = 3)
//	events.jsonl:   varint(offset) varint(last seq) [32]tail hash
//	timeline.jsonl: varint(offset) [32]tail hash
//	usage:          varint × 4 (input, output, cache read, cache write tokens of every logged step)
//	state:          uvarint(length) timeline.AppendState
//	context:        uvarint(0) when absent, else uvarint(1)
//	                varint(compaction boundary) varint(through seq)
//	                uvarint(length) agent.ContextCache data
//	crc32 (IEEE, big endian) of everything before it
//
// A log's offset and tail hash are a jsonl.Mark: its length when the file
// was written and the SHA-256 of its last 4 KiB before that length. The
// state and the context carry format numbers of their own; a reader that
// does not know one of them ignores the whole file. The version changes
// whenever the bytes written for the same session change.
//
// # What it vouches for
//
// Only each log's length and last 4 KiB. Opening checks each log's mark:
// a log that is shorter, or whose bytes before the mark hash differently
// (rewritten, truncated, replaced), is replayed in full, and the state or
// context derived from it is not used. A log edited or damaged in its
// middle after the file was written is not noticed while the file is
// used; it is found, and the session made read-only as usual, the next
// time that log is replayed (the file deleted or no longer matching).
// yolop itself only ever appends to the logs, and a torn tail is always
// found: it lies after the mark.
//
// The model context is the one the writing process had (agent.ContextCache);
// File.ContextFor gives it only when the journal shows that the
// conversation has only grown since (no restore, the same head or a
// descendant of it); otherwise the context is rebuilt from the events after
// the compaction boundary.
//
// # Crash model
//
// The file is derived: it is never the source of truth, deleting it at any
// time loses nothing, and the next open just replays the logs. It is
// replaced atomically (temp file, rename), so a reader sees the old file
// or the new one, but not synced: after a system crash it may also be
// empty or torn, and so is checked when read. A file that is missing,
// has another magic or version, fails its checksum, does not decode, or
// whose marks do not match the logs (their tail digests) is ignored,
// never repaired. The logs it describes were synced before it was
// written.
//
// A process that stops between appending a turn's records and rewriting
// the file leaves a file older than the logs: the next open reads the
// records after its marks on top of it. That is the usual case, not a
// failure: the file is rewritten only when the logs have grown 64 KiB
// (events) or 16 KiB (timeline) past it, after a restore, after a
// compaction, and when it holds no model context though the agent has
// one, since rewriting a long session's file costs time in proportion to
// the whole session.
//
// # Recovery
//
// None is needed. An unusable file is ignored and the logs are replayed in
// full; the writer replaces the file at the next save (Writer.Save, called
// by the checkpoint controller under its lock at the end of a turn,
// restore or repair). A read-only session (a damaged journal) never writes
// it.
package resume
