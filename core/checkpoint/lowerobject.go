package checkpoint

import "golang.org/x/sys/unix"

// A made tree's file may be the store's object itself. A new object has
// the owner, mode and mtime of the file it was stored from (package cas,
// attrs.go), so the first tree made of a checkpoint takes each file whose
// record equals its object's attributes as a hard link to the object:
// a stat and a link, where a file made anew costs a create, its size,
// two xattrs, its times and a close. A made tree is never written (an
// overlay copies up first), nor is an object, so they may be one inode.
//
// One object is one path of a tree at most: two paths of one inode would
// read, through the overlay, as hard links of each other (one inode
// number, a link count above one), which the checkpoint's two files were
// not. So the first path of a content claims its object, and a tree built
// on a tree made before (lowerlink.go) links no object at all: a file it
// takes from that tree may be the object a changed file would link.

// objectClaims answers, for each entry of the build in path order,
// whether its file may be its object.
func (b *lowerBuild) objectClaims() func(cpEntry) bool {
	if b.objects == nil || b.from != nil {
		return func(cpEntry) bool { return false }
	}
	claimed := map[string]bool{}
	return func(e cpEntry) bool {
		if e.Kind != kindFile || e.Size == 0 || e.Perm&(unix.S_ISUID|unix.S_ISGID) != 0 || claimed[e.Hash] {
			return false
		}
		claimed[e.Hash] = true
		return true
	}
}

// linkObject makes name in dfd a hard link to e's object when the object
// has e's attributes; false when it did not (other attributes, or the
// link failed: another filesystem, too many links): e is then made anew.
func (b *lowerBuild) linkObject(e cpEntry, dfd int, name string) bool {
	linked, _ := b.objects.LinkIf(e.Hash, dfd, name, func(st *unix.Stat_t) bool { return objectIs(st, e) })
	return linked
}

// objectIs reports whether an object of stat st is the file e records.
func objectIs(st *unix.Stat_t, e cpEntry) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o7777 == e.Perm && st.Uid == e.Uid && st.Gid == e.Gid &&
		st.Mtim.Nano() == e.Mtime && st.Size == e.Size
}
