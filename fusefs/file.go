package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"sandfs/core"
)

// file is an open handle: core's Handle (the backing descriptor, opened
// through a Dir, and the claim and attribution of what it writes) served
// to the kernel. Reads, locks, seeks and fsync go straight to the
// descriptor (the embedded LoopbackFile); writes are noted and told once,
// at flush or release, by the Handle.
type file struct {
	*fs.LoopbackFile
	h *core.Handle
	m *Mirror
}

var (
	_ = (fs.FileWriter)((*file)(nil))
	_ = (fs.FileWritever)((*file)(nil))
	_ = (fs.FileFlusher)((*file)(nil))
	_ = (fs.FileReleaser)((*file)(nil))
	_ = (fs.FileAllocater)((*file)(nil))
	_ = (fs.FileGetattrer)((*file)(nil))
	_ = (fs.FileFsyncer)((*file)(nil))
)

// newFile serves the handle h.
func (m *Mirror) newFile(h *core.Handle) *file {
	return &file{LoopbackFile: fs.NewLoopbackFileFromOS(h.File()), h: h, m: m}
}

// PassthroughFd offers the backing descriptor to the kernel for FUSE
// passthrough, unless the mirror was told not to, or the sandbox has a
// byte quota: its writes must come through the daemon to be checked
// (core.Handle.Passthrough says why reads go through it too). A quota set
// while a file is open in passthrough holds for it once it is closed.
func (f *file) PassthroughFd() (int, bool) {
	if f.m.noPassthrough || !f.h.Passthrough() {
		return 0, false
	}
	return f.LoopbackFile.PassthroughFd()
}

// Write goes through the handle, which reserves the growth against the
// sandbox's quota first (ENOSPC past it, nothing written).
func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, err := f.h.WriteAt(data, off)
	return uint32(max(n, 0)), f.m.toErrno(err)
}

// Writev is Write of data in pieces (the LoopbackFile's own would bypass
// the handle).
func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	if len(data) == 1 {
		return f.Write(ctx, data[0], off)
	}
	n := 0
	for _, d := range data {
		n += len(d)
	}
	buf := make([]byte, 0, n)
	for _, d := range data {
		buf = append(buf, d...)
	}
	return f.Write(ctx, buf, off)
}

// Allocate is fallocate through the handle, its growth reserved first.
// copy_file_range needs nothing of its own: the mirror does not serve
// COPY_FILE_RANGE, so the kernel copies through READ and WRITE.
func (f *file) Allocate(ctx context.Context, off uint64, sz uint64, mode uint32) syscall.Errno {
	return f.m.toErrno(f.h.Allocate(int64(off), int64(sz), mode))
}

// Flush tells what the handle wrote. Where the backing filesystem acts at
// close (flushesAtClose) it also closes a duplicate of the backing
// descriptor, as the loopback does, so that filesystem flushes and reports
// its errors at the caller's close.
func (f *file) Flush(ctx context.Context) syscall.Errno {
	var errno syscall.Errno
	if f.m.flushBacking {
		errno = f.LoopbackFile.Flush(ctx)
	}
	actx, _ := actor(ctx)
	f.h.Flush(actx)
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

// flushesAtClose reports whether the filesystem of root may act when a
// descriptor of one of its files is closed (unknown: yes).
func flushesAtClose(root *core.Root) bool {
	typ, err := root.FSType()
	return err != nil || !noCloseWork[typ]
}

// Release tells what is left to tell (core.Handle.Release), then closes
// the backing descriptor.
func (f *file) Release(ctx context.Context) syscall.Errno {
	actx, _ := actor(ctx)
	f.h.Release(actx)
	return f.LoopbackFile.Release(ctx)
}
