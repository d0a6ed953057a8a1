package core

import (
	"context"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/core/quota"
)

// Handle is an open file of the mirror (Dir.Open, Dir.Create): the backing
// descriptor, and for one open for writing the claim held from the open to
// the release, so that the echoes of its writes are claimed, and what it
// wrote is told once: at each flush (a close) and at release. Reads and
// writes go to File directly (through the daemon, or the kernel's
// passthrough, in which case the daemon sees no WRITE at all and the
// handle tells by the file's size and times).
type Handle struct {
	s      *Sandbox
	f      *os.File
	path   func() string
	opener Actor        // who opened it: a release carries no pid
	claim  *Claim       // held from open-for-write until release
	oi     *quota.Inode // the inode's accounted size while open for writing (core/quota)

	mu      sync.Mutex
	wrote   bool        // a WRITE or fallocate went through the daemon
	flushed bool        // a flush (a close) came since the last WRITE
	told    bool        // a change was told (the file is not as opened)
	seen    unix.Stat_t // size and times when last told (or at open)
}

// newHandle makes the handle of fd (open on API path ap) for the actor in
// ctx. A handle with a claim remembers the file's stat to tell changes by:
// st when the caller has it, else taken here.
func (s *Sandbox) newHandle(ctx context.Context, fd int, ap string, claim *Claim, st *unix.Stat_t) *Handle {
	h := &Handle{s: s, f: os.NewFile(uintptr(fd), ap), path: func() string { return ap }, opener: actorOf(ctx), claim: claim}
	switch {
	case claim == nil:
	case st != nil:
		h.seen = *st
	default:
		unix.Fstat(fd, &h.seen)
	}
	if claim != nil {
		h.oi = s.quota.Track(&h.seen)
		s.quota.MayCopyUp() // opened for writing: a fork's lower file is copied up (core/quota, "Forks")
	}
	return h
}

// Passthrough reports whether the kernel may serve this handle's I/O
// without the daemon (FUSE passthrough): not in a sandbox with a byte
// quota, whose every write is checked (WriteAt). Read-only handles too:
// the kernel passes every open of an inode through the backing file of
// the first one still open (go-fuse registers one per inode), so a reader
// in passthrough would let a writer opened after it past the daemon.
func (h *Handle) Passthrough() bool {
	return h.s.quota.NoByteBound()
}

// WriteAt writes data at off through the handle (the mirror's WRITE),
// reserving the growth first: a write past the quota is ENOSPC (a
// *QuotaError) and writes nothing.
func (h *Handle) WriteAt(data []byte, off int64) (int, error) {
	fd := int(h.f.Fd())
	if h.oi != nil {
		p := h.s.quota.BeginInPlace(&unix.Stat_t{Mode: unix.S_IFREG, Nlink: 1}, h.oi)
		defer p.End(fd)
		if err := p.GrowTo(OpWrite, "", off+int64(len(data))); err != nil {
			return 0, PathErr(OpWrite, h.path(), err) // named only when refused: the mirror's path costs a walk
		}
	}
	n, err := unix.Pwrite(fd, data, off)
	if n > 0 {
		h.Wrote()
	}
	return n, err
}

// truncateOpened empties a regular file just opened for writing with
// O_TRUNC (which the open left out, so the bytes freed are counted).
func (h *Handle) truncateOpened(ap string) error {
	if h.oi == nil {
		return nil // not a regular file: nothing to truncate
	}
	return h.s.truncate(ap, int(h.f.Fd()), 0, h.oi)
}

// Allocate is fallocate(2) through the handle, its growth (without
// FALLOC_FL_KEEP_SIZE) reserved first.
func (h *Handle) Allocate(off, size int64, mode uint32) error {
	fd := int(h.f.Fd())
	if h.oi != nil {
		p := h.s.quota.BeginInPlace(&unix.Stat_t{Mode: unix.S_IFREG, Nlink: 1}, h.oi)
		defer p.End(fd)
		if mode&unix.FALLOC_FL_KEEP_SIZE == 0 {
			if err := p.GrowTo(OpWrite, "", off+size); err != nil {
				return PathErr(OpWrite, h.path(), err)
			}
		}
	}
	err := unix.Fallocate(fd, mode, off, size)
	if err == nil {
		h.Wrote()
	}
	return err
}

// File is the backing file. The handle owns it: Release does not close it,
// the caller does, after Release.
func (h *Handle) File() *os.File { return h.f }

// Follow makes the handle name its file by path from now on (the mirror's
// tree, which follows renames); "" once the file has no name in the tree,
// when nothing it does is told.
func (h *Handle) Follow(path func() string) { h.path = path }

// Wrote records a change made through the daemon (a WRITE, a fallocate).
func (h *Handle) Wrote() {
	h.mu.Lock()
	h.wrote, h.flushed = true, false
	h.mu.Unlock()
}

// Setattr changes the attributes of the handle's file through its
// descriptor (which serves an unlinked file, and ftruncate) and returns its
// stat after, as Dir.Setattr does.
func (h *Handle) Setattr(ctx context.Context, a SetAttr) (unix.Stat_t, error) {
	return h.s.changeAttrsOf(ctx, h.path(), int(h.f.Fd()), a, h.oi)
}

// changed reports whether the backing file's size or mtime moved since
// last told (with passthrough the daemon sees no WRITE requests), and
// returns the stat it took (nil when it took none). Not its ctime: a
// rename, a chmod or a link moves that and no byte, and the mirror's own
// rename of a file just closed (a temp renamed into place) reached the
// release before it and was told as an outside write.
func (h *Handle) changed() (bool, *unix.Stat_t) {
	if h.claim == nil {
		return false, nil
	}
	var st unix.Stat_t
	if unix.Fstat(int(h.f.Fd()), &st) != nil {
		return false, nil
	}
	moved := st.Size != h.seen.Size || st.Mtim != h.seen.Mtim
	h.seen = st
	return moved, &st
}

// Flush tells what the handle wrote since it last told, as made by the
// actor in ctx (the process closing it).
func (h *Handle) Flush(ctx context.Context) {
	h.s.quota.Sync(h.oi, int(h.f.Fd()))
	h.tellWrites(ctx, false)
}

// tellWrites tells the write if the file changed since it last told. At
// release, a change since the last flush that did not come through the
// daemon is not the handle's: every descriptor of it was closed by then,
// each close a flush that told what it wrote. It is an outside writer's,
// whose own inotify event the handle's claim swallowed (the release reaches
// the daemon after close() has returned), so it is told as external, which
// also makes the mirror invalidate the kernel's caches. Unless the file
// lost its name to an outside rename meanwhile: that was told.
func (h *Handle) tellWrites(ctx context.Context, release bool) {
	h.mu.Lock()
	changed, st := h.changed()
	wrote, flushed := h.wrote, h.flushed
	h.wrote = false
	h.flushed = !release
	h.told = h.told || changed || wrote
	h.mu.Unlock()
	if !changed && !wrote {
		return
	}
	if st != nil && st.Nlink == 0 {
		// Unlinked while open (a swap file, a temp): no path names it any
		// more (go-fuse calls it .go-fuse.*/deleted), and its remove was
		// told when it went.
		return
	}
	a := h.opener
	if release && flushed && !wrote {
		if h.claim != nil && h.claim.NameGone() {
			// Moved away from its name by an outside rename, told as
			// such (the rename changed its ctime): the kernel watch
			// tells what happens to it under its new name, and the old
			// one is another file's now, or none's.
			return
		}
		a = Actor{Origin: journal.External}
	} else if c := actorOf(ctx); c.Pid != 0 {
		a.Pid, a.Uid, a.Comm, a.Cgroup, a.Process = c.Pid, c.Uid, c.Comm, c.Cgroup, c.Process
	}
	h.s.tellStat(inHandler(WithActor(ctx, a)), journal.Write, h.path(), "", false, st)
}

// Release ends the claim before it looks at the file: a change after the
// sentinel is told by the kernel watch, a change before it by tellWrites. An
// outside write landing between the two is told twice, never lost (with
// the sentinel last, one landing between tellWrites' fstat and the sentinel was
// seen by neither). A handle that left the file as it was opened ends the
// claim at its last echo (DoneEcho: a create's, no sentinel needed).
func (h *Handle) Release(ctx context.Context) {
	if h.claim != nil {
		if h.untouched() {
			h.claim.DoneEcho()
		} else {
			h.claim.Done()
		}
	}
	h.s.quota.Sync(h.oi, int(h.f.Fd()))
	h.tellWrites(ctx, true)
	if h.oi != nil {
		h.s.quota.Untrack(h.oi)
		h.oi = nil
	}
}

// untouched reports whether the file is as the handle opened it: nothing
// written or told, size and times as at open (a change after our fstat at
// open gets a ctime of its own: the kernel's timestamps are fine-grained
// once queried).
func (h *Handle) untouched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	var st unix.Stat_t
	if h.wrote || h.told || unix.Fstat(int(h.f.Fd()), &st) != nil {
		return false
	}
	return sameContent(&st, &h.seen)
}

// sameContent reports whether two stats of one file show it unchanged:
// the same size, mtime and ctime.
func sameContent(a, b *unix.Stat_t) bool {
	return a.Size == b.Size && a.Mtim == b.Mtim && a.Ctim == b.Ctim
}
