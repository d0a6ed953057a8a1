// Package journal is the one record of change of a sandbox: every change,
// whoever made it, is one Event with a sequence number, kept in a bounded
// ring and fanned out to the views that read it.
//
// # Events
//
// An Event says what changed (create, write, remove, rename, chmod), where
// (an API path, and the old path of a rename), what the file looked like
// after (is_dir, size, mtime, inode) and who did it: origin api (a REST
// call), fuse (a process on the mount, with its pid and uid) or external (a
// process writing the root directly, seen by inotify). Sequence numbers
// start at 1 and never repeat within a daemon's life.
//
// # Watchers
//
// A Watcher is a filtered view of the journal with its own buffer: a path
// (and whether it is recursive), excludes (a default list, replaced by a
// given one), include patterns, and a debounce window. Events that pass the
// filter enter the watcher's buffer in journal order. The first write of a
// path is told at once and opens a debounce window; writes of that path
// inside it are held to its end and become one (the latest), which opens the
// next window. So a lone write waits for nothing and a stream of writes is
// told once a window. Nothing else is held except behind a held write, so
// order is kept, a create is never merged into a write and a remove is never
// dropped (and ends the path's window).
// The buffer keeps the last 10,000 events; dropping older ones, or a loss
// reported by a source (kernel queue overflow), marks the watcher as having
// lost events up to a sequence number, and a poll from a cursor before it
// reports overflow.
//
// Identical watcher configurations share one Watcher; each Watch is its own
// reference with its own id ("w_<hex>.<n>", refs.go), released once, so no
// client can stop a shared watcher for the others. At most 128 watchers
// live per journal.
//
// # Subscriptions
//
// Live readers (a websocket, a wait) take a Subscription: a bounded channel
// that never blocks Append; a reader too slow for it loses events and is
// told how many. A Hook (hook.go) hears of an event before it is stored:
// the FUSE mirror's cache invalidation, which Append waits for.
package journal
