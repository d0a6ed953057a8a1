package fusefs

import (
	"context"
	"strings"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sandfs/core/journal"
)

// vetoTimeout is the entry timeout that stops the bridge from turning a
// missing name into a negative entry (it does so only when the node left
// it zero); it goes nowhere, since the kernel then gets ENOENT.
const vetoTimeout = time.Nanosecond

// invalidateAll invalidates what the kernel may cache of the paths of a
// run of queued events the mirror did not make (a loss: of everything),
// each path and each inode once. Only the invalidator's goroutine calls
// it (invalidator.go says why): the kernel asks again for what it no longer
// trusts, so telling it once after the last change of a run is as good as
// telling it after each (a burst of outside writes to one directory costs
// one notification of the directory, not one per write).
func (m *Mirror) invalidateAll(run []inval) {
	gone := map[string]bool{}
	var paths []string
	for _, it := range run {
		if it.lost {
			// A directory may have left the root unheard: held descriptors
			// go too (lookups take them again).
			releaseTree(&m.root.Inode)
			m.invalidateTree(&m.root.Inode)
			return
		}
		for _, p := range []string{it.e.Path, it.e.OldPath} {
			if p == "" {
				continue
			}
			g, seen := gone[p]
			if !seen {
				paths = append(paths, p)
			}
			gone[p] = g || p == it.e.OldPath || it.e.Type == journal.Remove
		}
	}
	told := map[*fs.Inode]bool{}
	for _, p := range paths {
		m.invalidatePath(p, gone[p], told)
	}
}

// invalidatePath invalidates the kernel's entry for API path p, and the
// attributes and pages of the inode the mirror knows there (each inode
// once: told holds those done). gone drops the name from the tree too
// (removed or renamed away), unless the name holds that inode again.
func (m *Mirror) invalidatePath(p string, gone bool, told map[*fs.Inode]bool) {
	content := func(n *fs.Inode) {
		if !told[n] {
			told[n] = true
			n.NotifyContent(0, 0)
		}
	}
	parent := &m.root.Inode
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if p == "/" || len(parts) == 0 {
		content(parent)
		return
	}
	for _, c := range parts[:len(parts)-1] {
		parent = parent.GetChild(c)
		if parent == nil {
			return // the kernel has never looked it up
		}
	}
	name := parts[len(parts)-1]
	content(parent) // the directory's listing and times changed
	parent.NotifyEntry(name)
	if ch := parent.GetChild(name); ch != nil {
		content(ch)
		if gone && !m.sameInodeAt(ch, p) {
			releaseTree(ch)
			parent.RmChild(name)
		}
	}
}

// sameInodeAt reports whether the inode ch is what the root holds at p now
// (the name may have been recreated or renamed back since the event).
func (m *Mirror) sameInodeAt(ch *fs.Inode, p string) bool {
	st, err := m.sb.LstatRaw(context.Background(), p)
	return err == nil && m.stableAttr(&st).Ino == ch.StableAttr().Ino
}

// invalidateTree invalidates every inode the mirror knows under n, n
// included (events were lost).
func (m *Mirror) invalidateTree(n *fs.Inode) {
	n.NotifyContent(0, 0)
	for name, ch := range n.Children() {
		n.NotifyEntry(name)
		m.invalidateTree(ch)
	}
}

// caching reports whether the mount lets the kernel cache anything at all
// (--mount-cache above zero).
func (m *Mirror) caching() bool { return m.entryTTL > 0 || m.attrTTL > 0 }

// cacheable reports whether the kernel may keep what it learns of API path
// p for the mount's timeouts: only where an outside change is sure to be
// heard (core.WatchView.Covers) and so invalidated.
func (m *Mirror) cacheable(p string) bool {
	return m.caching() && m.sb.Watch().Covers(p)
}

// entryTimeouts sets the timeouts of a name looked up or made at p: the
// mount's where cacheable, zero (ask every time) elsewhere, and for a
// set-id file, whose bits the daemon may clear behind the kernel's back
// (killpriv.go).
func (m *Mirror) entryTimeouts(p string, out *fuse.EntryOut) {
	if m.cacheable(p) && !setID(out.Mode) {
		out.SetEntryTimeout(m.entryTTL)
		out.SetAttrTimeout(m.attrTTL)
	}
}

// vetoNegativeEntry vetoes the negative entry of a missing name at p where the
// kernel may not cache it.
func (m *Mirror) vetoNegativeEntry(p string, out *fuse.EntryOut) {
	if !m.cacheable(p) {
		out.SetEntryTimeout(vetoTimeout)
	}
}

// attrTimeout is entryTimeouts for attributes alone.
func (m *Mirror) attrTimeout(p string, out *fuse.AttrOut) bool {
	if m.cacheable(p) && !setID(out.Mode) {
		out.SetTimeout(m.attrTTL)
		return true
	}
	return false
}

// openFlags lets the kernel keep a file's pages (or a directory's listing)
// across opens where the journal will say when they change.
func (m *Mirror) openFlags(p string, dir bool) uint32 {
	if !m.cacheable(p) {
		return 0
	}
	if dir {
		return fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	}
	return fuse.FOPEN_KEEP_CACHE
}
