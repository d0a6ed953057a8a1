package fusefs

import (
	"context"
	"os"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/journal"
)

// file is an open handle: a descriptor on the backing file, resolved under
// the root at open. Reads, locks, seeks and fsync go straight to it (the
// embedded LoopbackFile); writes are remembered and told once at flush or
// release.
type file struct {
	*fs.LoopbackFile
	f      *os.File
	m      *Mirror
	pathOf func() string
	opener core.Actor  // who opened it: RELEASE carries no pid
	claim  *core.Claim // held from open-for-write until release

	mu      sync.Mutex
	wrote   bool        // a WRITE or fallocate went through the daemon
	flushed bool        // a flush (a close) came since the last WRITE
	told    bool        // a change was told (the file is not as opened)
	seen    unix.Stat_t // size and times when last told (or at open)
}

var (
	_ = (fs.FileWriter)((*file)(nil))
	_ = (fs.FileFlusher)((*file)(nil))
	_ = (fs.FileReleaser)((*file)(nil))
	_ = (fs.FileAllocater)((*file)(nil))
	_ = (fs.FileGetattrer)((*file)(nil))
	_ = (fs.FileFsyncer)((*file)(nil))
)

// newFile makes the handle of f. A handle with a claim (open for writing)
// remembers f's stat to tell changes by: st when the caller has it, else
// taken here.
func (m *Mirror) newFile(f *os.File, pathOf func() string, a core.Actor, claim *core.Claim, st *unix.Stat_t) *file {
	h := &file{LoopbackFile: fs.NewLoopbackFileFromOS(f), f: f, m: m, pathOf: pathOf, opener: a, claim: claim}
	switch {
	case claim == nil:
	case st != nil:
		h.seen = *st
	default:
		unix.Fstat(int(f.Fd()), &h.seen)
	}
	return h
}

// PassthroughFd offers the backing descriptor to the kernel for FUSE
// passthrough, unless the mirror was told not to.
func (h *file) PassthroughFd() (int, bool) {
	if h.m.noPassthrough {
		return 0, false
	}
	return h.LoopbackFile.PassthroughFd()
}

// changed reports whether the backing file's size or times moved since
// last told: with passthrough the daemon sees no WRITE requests.
func (h *file) changed() bool {
	if h.claim == nil {
		return false
	}
	var st unix.Stat_t
	if unix.Fstat(int(h.f.Fd()), &st) != nil {
		return false
	}
	moved := !sameContent(&st, &h.seen)
	h.seen = st
	return moved
}

func (h *file) fd() int { return int(h.f.Fd()) }

func (h *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, errno := h.LoopbackFile.Write(ctx, data, off)
	if n > 0 {
		h.noteWrite()
	}
	return n, errno
}

// noteWrite remembers a change made through the daemon (WRITE, fallocate).
func (h *file) noteWrite() {
	h.mu.Lock()
	h.wrote, h.flushed = true, false
	h.mu.Unlock()
}

func (h *file) Allocate(ctx context.Context, off uint64, sz uint64, mode uint32) syscall.Errno {
	errno := h.LoopbackFile.Allocate(ctx, off, sz, mode)
	if errno == 0 {
		h.noteWrite()
	}
	return errno
}

// tell appends the write event if the file changed since it last told. At
// RELEASE (release), a change since the last flush that did not come
// through the daemon is not the handle's: every descriptor of it was closed
// by then, each close a flush that told what it wrote. It is an outside
// writer's, whose own inotify event the handle's claim swallowed (RELEASE
// reaches the daemon after close() has returned), so it is told as
// external, which also makes the mirror invalidate the kernel's caches.
func (h *file) tell(ctx context.Context, release bool) {
	h.mu.Lock()
	changed, wrote, flushed := h.changed(), h.wrote, h.flushed
	h.wrote = false
	h.flushed = !release
	h.told = h.told || changed || wrote
	h.mu.Unlock()
	if !changed && !wrote {
		return
	}
	a := h.opener
	if release && flushed && !wrote {
		a = core.Actor{Origin: journal.External}
	} else if c, ok := fuse.FromContext(ctx); ok && c.Pid != 0 {
		a.Pid, a.Uid = c.Pid, c.Uid
	}
	h.m.sb.Emit(core.WithActor(ctx, a), journal.Write, h.pathOf(), "")
}

// Flush tells what the handle wrote. Where the backing filesystem acts at
// close (flushesAtClose) it also closes a duplicate of the backing
// descriptor, as the loopback does, so that filesystem flushes and reports
// its errors at the caller's close.
func (h *file) Flush(ctx context.Context) syscall.Errno {
	var errno syscall.Errno
	if h.m.flushBacking {
		errno = h.LoopbackFile.Flush(ctx)
	}
	h.tell(ctx, false)
	return errno
}

// noCloseWork are the filesystems whose files do nothing at close but at
// the last one (no ->flush: ext2/3/4, xfs, btrfs, tmpfs): closing a
// duplicate descriptor there is two syscalls that change nothing (the
// daemon holds no locks on backing files: see Locks in doc.go). Any other
// (NFS writes back and reports errors at close, overlayfs passes the close
// down, FUSE asks its daemon) gets the duplicate closed.
var noCloseWork = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:  true,
	unix.XFS_SUPER_MAGIC:   true,
	unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC:       true,
}

// flushesAtClose reports whether the filesystem of sb's root may act when
// a descriptor of one of its files is closed (unknown: yes).
func flushesAtClose(sb *core.Sandbox) bool {
	typ, err := sb.FSType()
	return err != nil || !noCloseWork[typ]
}

// Release ends the claim before it looks at the file: a change after the
// sentinel is told by the kernel watch, a change before it by tell. An
// outside write landing between the two is told twice, never lost (with
// the sentinel last, one landing between tell's fstat and the sentinel was
// seen by neither). A handle that left the file as it was opened ends the
// claim at its last echo (DoneEcho: a create's, no sentinel needed).
func (h *file) Release(ctx context.Context) syscall.Errno {
	if h.claim != nil {
		if h.untouched() {
			h.claim.DoneEcho()
		} else {
			h.claim.Done()
		}
	}
	h.tell(ctx, true)
	return h.LoopbackFile.Release(ctx)
}

// untouched reports whether the file is as the handle opened it: nothing
// written or told, size and times as at open (a change after our fstat at
// open gets a ctime of its own: the kernel's timestamps are fine-grained
// once queried).
func (h *file) untouched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	var st unix.Stat_t
	if h.wrote || h.told || unix.Fstat(h.fd(), &st) != nil {
		return false
	}
	return sameContent(&st, &h.seen)
}

// sameContent reports whether two stats of one file show it unchanged:
// the same size, mtime and ctime.
func sameContent(a, b *unix.Stat_t) bool {
	return a.Size == b.Size && a.Mtim == b.Mtim && a.Ctim == b.Ctim
}
