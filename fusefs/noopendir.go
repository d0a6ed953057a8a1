package fusefs

import (
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Directories without OPENDIR. A directory's open and close cost the
// daemon two requests (OPENDIR, RELEASEDIR) for every listing, even one
// the kernel answers from its cache: half the requests of a warm walk and
// nearly all of a `git status`. Where the kernel offers
// FUSE_NO_OPENDIR_SUPPORT, the first OPENDIR of a directory the journal
// hears (one the mirror would let the kernel cache) is answered ENOSYS;
// from then on the kernel opens every directory of the mount itself, with
// FOPEN_KEEP_CACHE|FOPEN_CACHE_DIR, and sends READDIR and FSYNCDIR with
// no handle. rawFS serves those through a handle of its own for the one
// request, with the node's Opendir (the same descriptor checks as any
// open), so nothing of the directory is held between requests and the
// offset the kernel sends is the native one (seekable, as telldir gives).
//
// The kernel checks a cached listing against the directory's mtime when
// it reads it from the start, and the journal's invalidations drop it
// on every change it tells (coherence.go). A directory the watch does not
// cover (before the first walk is done, or past the inotify watch limit)
// has its attributes never cached, so each listing from the start asks
// GETATTR and is read again when the mtime moved: an outside change that
// leaves the directory's mtime as it was (two changes within one tick of
// the filesystem's clock) may be missing from the next listing until the
// mtime moves again. With --mount-cache 0 nothing is cacheable, ENOSYS is
// never answered, and every listing is opened and read anew.
type rawFS struct {
	fuse.RawFileSystem
	server atomic.Pointer[fuse.Server] // set before it serves
}

// OpenDir opens the directory as ever, then, where the kernel offers to go
// without and the mirror would let it cache this listing (the node's
// flags say FOPEN_CACHE_DIR), lets the handle go and answers ENOSYS.
func (r *rawFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	st := r.RawFileSystem.OpenDir(cancel, in, out)
	if st != fuse.OK || out.OpenFlags&fuse.FOPEN_CACHE_DIR == 0 || !r.kernelOffers() {
		return st
	}
	r.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: in.InHeader, Fh: out.Fh})
	*out = fuse.OpenOut{}
	return fuse.ENOSYS // the kernel sends no OPENDIR to this mount again
}

// kernelOffers reports whether the kernel said, at INIT, that it takes
// ENOSYS for OPENDIR as "go without".
func (r *rawFS) kernelOffers() bool {
	s := r.server.Load()
	return s != nil && s.KernelSettings().Flags&fuse.CAP_NO_OPENDIR_SUPPORT != 0
}

// ReadDir serves a handle-less read through a handle of its own.
func (r *rawFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if in.Fh != 0 {
		return r.RawFileSystem.ReadDir(cancel, in, out)
	}
	return r.withHandle(cancel, &in.InHeader, func(fh uint64) fuse.Status {
		own := *in
		own.Fh = fh
		return r.RawFileSystem.ReadDir(cancel, &own, out)
	})
}

// FsyncDir serves a handle-less fsync of a directory through a handle of
// its own.
func (r *rawFS) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if in.Fh != 0 {
		return r.RawFileSystem.FsyncDir(cancel, in)
	}
	return r.withHandle(cancel, &in.InHeader, func(fh uint64) fuse.Status {
		own := *in
		own.Fh = fh
		return r.RawFileSystem.FsyncDir(cancel, &own)
	})
}

// withHandle opens the directory of hdr, runs do with the handle, and
// releases it.
func (r *rawFS) withHandle(cancel <-chan struct{}, hdr *fuse.InHeader, do func(fh uint64) fuse.Status) fuse.Status {
	var oo fuse.OpenOut
	if st := r.RawFileSystem.OpenDir(cancel, &fuse.OpenIn{InHeader: *hdr}, &oo); st != fuse.OK {
		return st
	}
	defer r.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: *hdr, Fh: oo.Fh})
	return do(oo.Fh)
}
