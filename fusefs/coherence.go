package fusefs

import (
	"context"
	"strings"

	"github.com/hanwen/go-fuse/v2/fs"

	"sandfs/core/journal"
)

// invalidate runs until ctx ends: for each journal event the mirror did not
// make, it tells the kernel to forget what it may cache of the paths. It is
// the only place notifies are issued (never from a FUSE handler).
func (m *Mirror) invalidate(ctx context.Context) {
	defer close(m.notifyDone)
	sub := m.sb.Journal().Subscribe(func(e journal.Event) bool { return e.Origin != journal.FUSE }, 4096)
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.C:
			if !ok {
				return
			}
			if sub.TakeDropped() > 0 {
				m.forgetAll(&m.root.Inode)
			}
			m.forget(e.Path, e.Type == journal.Remove)
			if e.OldPath != "" {
				m.forget(e.OldPath, true)
			}
		}
	}
}

// forget invalidates the kernel's entry for API path p, and the attributes
// and pages of the inode the mirror knows there. gone drops the name from
// the tree too (removed or renamed away).
func (m *Mirror) forget(p string, gone bool) {
	parent := &m.root.Inode
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if p == "/" || len(parts) == 0 {
		parent.NotifyContent(0, 0)
		return
	}
	for _, c := range parts[:len(parts)-1] {
		parent = parent.GetChild(c)
		if parent == nil {
			return // the kernel has never looked it up
		}
	}
	name := parts[len(parts)-1]
	parent.NotifyContent(0, 0) // the directory's listing and times changed
	parent.NotifyEntry(name)
	if ch := parent.GetChild(name); ch != nil {
		ch.NotifyContent(0, 0)
		if gone && !m.still(p, ch) {
			parent.RmChild(name)
		}
	}
}

// still reports whether the inode ch is what the root holds at p now (the
// name may have been recreated or renamed back since the event).
func (m *Mirror) still(p string, ch *fs.Inode) bool {
	st, err := m.sb.LstatRaw(context.Background(), p)
	return err == nil && m.stableAttr(&st).Ino == ch.StableAttr().Ino
}

// forgetAll invalidates every inode the mirror knows (events were lost).
func (m *Mirror) forgetAll(n *fs.Inode) {
	n.NotifyContent(0, 0)
	for name, ch := range n.Children() {
		n.NotifyEntry(name)
		m.forgetAll(ch)
	}
}
