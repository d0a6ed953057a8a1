// Package history keeps a sandbox's journal on disk, in the sandbox's own
// directory of the daemon's state directory (never inside the root), so
// that it outlives the daemon: sequence numbers continue across restarts, a
// watcher and its cursor resume, and "what changed since" reaches back as
// far as retention keeps.
//
// # Two files
//
// An appended event is copied into the tail (tail.go), a file mapped
// shared into memory: no system call, nothing a request waits on beyond
// what the in-memory journal always cost. A writer goroutine takes the
// appended events in batches (gathered up to 5 s, or 4,096 events, or
// until a reader needs them; never more than 4,096 in one transaction, so
// a close waits on one: log.go) into journal.db, a SQLite database (WAL mode,
// through the pure-Go modernc.org/sqlite, so the binary stays static) that
// a person can open with sqlite3. A daemon killed at any point loses no
// event it appended: at the next open the tail's whole records that the
// database lacks are given to it. The database also keeps the manifest
// (the tree as the journal knew it, for the comparison at start, whose
// pure part, replaying events over it and diffing it with a walk, is
// diff.go), the watchers (so their ids survive a restart) and a few facts
// (meta).
// Beside them: seqmark, a number no seq handed out has reached (mark.go),
// and a 1 MiB ballast a start on a full disk drops (ballast.go). When the
// database refuses events, failing.go says what holds and what is given
// up.
//
// # Retention
//
// By age, count and size (Retention), oldest first, checked by the writer
// at most every 10 seconds after events were committed, and every few
// minutes when none were (the age bound; an idle sandbox asks nothing of
// its database, whose connection then closes); never past the newest
// manifest's seq, since the next start replays the events after it. A cursor older than what is kept is
// told overflow (journal.Watcher.Read), never a silent gap.
//
// # A journal begun elsewhere
//
// Begin makes a new journal that numbers on after a seq another journal
// handed out (a sandbox taken up on another host from a checkpoint): one
// loss marker stands at that seq, so a cursor from before it is told
// overflow, never shown a gap as if nothing had happened (begin.go).
// NumberAbove does the same for a journal kept (a sandbox taken up again
// on the host and state it left): its own events stay, one loss marker
// at the seq stands for those the other host numbered.
package history
