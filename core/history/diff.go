package history

import (
	"io/fs"
	"sort"
	"strings"
	"unicode/utf8"

	"sandfs/core/journal"
)

// The comparison at start (core's manifest.go) replays the events after a
// manifest's seq over its entries (DropTree, MoveTree) and tells the
// difference between that and a walk of the tree (DiffManifest). These are
// the pure parts: maps of API paths in, events out.

// DropTree removes API path p and everything under it from m.
func DropTree(m map[string]Entry, p string) {
	delete(m, p)
	prefix := strings.TrimSuffix(p, "/") + "/"
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			delete(m, k)
		}
	}
}

// MoveTree moves everything under API path from to under to in m,
// dropping what was at and under to and from itself; the caller enters
// to's own entry (the rename event's).
func MoveTree(m map[string]Entry, from, to string) {
	DropTree(m, to)
	prefix := strings.TrimSuffix(from, "/") + "/"
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			delete(m, k)
			m[to+"/"+k[len(prefix):]] = v
		}
	}
	delete(m, from)
}

// DiffManifest is the events that take known to now, in an order a reader
// can apply: removes deepest first, then creates parents first, then
// writes and chmods. A path in heard is left out (an event about it
// already came), and so is a known path that is not UTF-8 or that skip
// reports (the daemon's temp names, which a manifest written before they
// were left out may hold). inodes is false when now is a copy of the tree
// known describes (every inode new): a file is then written when its size
// or mtime differ.
func DiffManifest(known, now map[string]Entry, heard map[string]bool, inodes bool, skip func(path string) bool) []journal.Event {
	var removes, creates, changes []journal.Event
	ev := func(t journal.Type, p string, e Entry) journal.Event {
		return journal.Event{Type: t, Path: p, IsDir: e.IsDir, Size: e.Size, Mtime: e.Mtime, Inode: e.Inode, Mode: e.Mode,
			Origin: journal.External, FoundAtStart: true}
	}
	for p, k := range known {
		if heard[p] || !utf8.ValidString(p) || skip(p) {
			continue
		}
		n, ok := now[p]
		if !ok || n.Mode.Type() != k.Mode.Type() && k.Mode != 0 {
			removes = append(removes, ev(journal.Remove, p, k))
		}
	}
	for p, n := range now {
		if heard[p] {
			continue
		}
		k, ok := known[p]
		switch {
		case !ok || n.Mode.Type() != k.Mode.Type() && k.Mode != 0:
			creates = append(creates, ev(journal.Create, p, n))
		case !n.IsDir && (inodes && k.Inode != 0 && k.Inode != n.Inode || k.Inode != 0 && k.Size != n.Size || !k.Mtime.IsZero() && !k.Mtime.Equal(n.Mtime)):
			changes = append(changes, ev(journal.Write, p, n))
		case k.Mode != 0 && permBits(k.Mode) != permBits(n.Mode):
			changes = append(changes, ev(journal.Chmod, p, n))
		}
	}
	sort.Slice(removes, func(i, j int) bool { return removes[i].Path > removes[j].Path })
	sort.Slice(creates, func(i, j int) bool { return creates[i].Path < creates[j].Path })
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return append(append(removes, creates...), changes...)
}

func permBits(m fs.FileMode) fs.FileMode {
	return m & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}
