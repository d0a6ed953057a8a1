package fusefs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Set-id bits on writes (FUSE_HANDLE_KILLPRIV_V2). A write, a truncate or
// an O_TRUNC open by a process without CAP_FSETID clears a file's setuid
// bit, and its setgid bit where the group may execute it. Without
// KILLPRIV_V2 the kernel does it through the daemon: before every such
// write it asks GETXATTR security.capability and, for a set-id file,
// GETATTR and SETATTR mode. With it, the kernel tells the daemon instead
// (a flag on WRITE, OPEN and SETATTR) and skips those requests,
// and rawFS clears the bits itself, through the node's Setattr on the
// same handle (claimed and told as chmod by the writer, as the kernel's
// SETATTR was).
//
// A write in passthrough never reaches the daemon, and the kernel wants
// every open of an inode in passthrough once one is (a direct or cached
// open beside it fails with EIO), so a set-id file opened for writing in
// passthrough by a caller other than root has its bits cleared at the
// open: earlier than the kernel would (at its first write), never later.
// uid 0 stands for CAP_FSETID, which a request does not carry. The mirror
// keeps no attributes of a set-id file (coherence.go), so the kernel asks
// for them after a clear made behind its back.

// killpriv are the capabilities the mount asks for: the kernel leaves the
// set-id bits to the daemon, and lets a direct-I/O handle be mmap'd.
const killpriv = fuse.CAP_HANDLE_KILLPRIV_V2 | fuse.CAP_DIRECT_IO_ALLOW_MMAP

// Open opens as ever, then clears the bits where afterOpen says.
func (r *rawFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	st := r.RawFileSystem.Open(cancel, in, out)
	if st == fuse.OK {
		r.afterOpen(cancel, &in.InHeader, in.Flags, in.Mode, out)
	}
	return st
}

// Create makes the file as ever. The kernel sends CREATE for a name it
// holds missing, and a file made keeps the mode it was made with, set-id
// bits included (an O_TRUNC of it truncates nothing). Its writes must
// clear them as any write does, so a set-id file made for a caller other
// than root in passthrough gets a direct-I/O handle instead: its writes
// come through the daemon flagged. The inode is new, no other open holds
// it in passthrough, and later opens may still take passthrough beside a
// direct one.
func (r *rawFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	st := r.RawFileSystem.Create(cancel, in, name, out)
	if st == fuse.OK && setID(in.Mode) && in.Caller.Uid != 0 && out.OpenFlags&fuse.FOPEN_PASSTHROUGH != 0 {
		out.OpenFlags &^= fuse.FOPEN_PASSTHROUGH | fuse.FOPEN_KEEP_CACHE
		out.OpenFlags |= fuse.FOPEN_DIRECT_IO
		out.BackingID = 0
	}
	return st
}

// afterOpen clears the bits of a set-id file opened for writing where
// its writes will not come through the daemon (passthrough) and the caller
// is not root, or where the kernel flagged an O_TRUNC.
func (r *rawFS) afterOpen(cancel <-chan struct{}, hdr *fuse.InHeader, flags, openFlags uint32, out *fuse.OpenOut) {
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return
	}
	trunc := openFlags&fuse.OPEN_KILL_SUIDGID != 0 && flags&syscall.O_TRUNC != 0
	direct := out.OpenFlags&fuse.FOPEN_PASSTHROUGH != 0 && hdr.Caller.Uid != 0
	if !trunc && !direct {
		return
	}
	if a, ok := r.attr(cancel, hdr, out.Fh); ok && setID(a.Mode) {
		r.kill(cancel, hdr, out.Fh, a)
	}
}

// Writev (the server's WRITE; Write on ENOSYS) clears the bits first when
// the kernel flagged the write.
func (r *rawFS) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	r.killForWrite(cancel, in)
	return r.RawFileSystem.Writev(cancel, in, data)
}

// Write is Writev of one piece.
func (r *rawFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	r.killForWrite(cancel, in)
	return r.RawFileSystem.Write(cancel, in, data)
}

// killForWrite clears the bits of the file a flagged WRITE is about to
// change. A WRITE the server retries as Write after Writev's ENOSYS
// finds them cleared already.
func (r *rawFS) killForWrite(cancel <-chan struct{}, in *fuse.WriteIn) {
	if in.WriteFlags&fuse.WRITE_KILL_SUIDGID == 0 {
		return
	}
	if a, ok := r.attr(cancel, &in.InHeader, in.Fh); ok && setID(a.Mode) {
		r.kill(cancel, &in.InHeader, in.Fh, a)
	}
}

// SetAttr clears the bits in the same call when the kernel flagged a
// truncate.
func (r *rawFS) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if in.Valid&fuse.FATTR_KILL_SUIDGID != 0 && in.Valid&fuse.FATTR_MODE == 0 {
		var fh uint64
		if in.Valid&fuse.FATTR_FH != 0 {
			fh = in.Fh
		}
		if a, ok := r.attr(cancel, &in.InHeader, fh); ok {
			if cleared := killed(a, in.Caller); cleared != a.Mode {
				own := *in
				own.Valid |= fuse.FATTR_MODE
				own.Mode = cleared
				return r.RawFileSystem.SetAttr(cancel, &own, out)
			}
		}
	}
	return r.RawFileSystem.SetAttr(cancel, in, out)
}

// attr is the file's attributes, through the handle fh where there is one.
func (r *rawFS) attr(cancel <-chan struct{}, hdr *fuse.InHeader, fh uint64) (fuse.Attr, bool) {
	in := fuse.GetAttrIn{InHeader: *hdr}
	if fh != 0 {
		in.Flags_, in.Fh_ = fuse.FUSE_GETATTR_FH, fh
	}
	var out fuse.AttrOut
	if r.RawFileSystem.GetAttr(cancel, &in, &out) != fuse.OK {
		return fuse.Attr{}, false
	}
	return out.Attr, true
}

// kill clears what a write by the caller of hdr clears of the file a,
// through the handle fh, and returns the mode it leaves.
func (r *rawFS) kill(cancel <-chan struct{}, hdr *fuse.InHeader, fh uint64, a fuse.Attr) uint32 {
	cleared := killed(a, hdr.Caller)
	if cleared == a.Mode {
		return a.Mode
	}
	in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: *hdr, Valid: fuse.FATTR_MODE, Mode: cleared}}
	if fh != 0 {
		in.Valid |= fuse.FATTR_FH
		in.Fh = fh
	}
	var out fuse.AttrOut
	if r.RawFileSystem.SetAttr(cancel, &in, &out) != fuse.OK {
		return a.Mode
	}
	return out.Mode
}

// killed is the mode of a less what a write by c clears, where c lacks
// CAP_FSETID (the kernel's setattr_should_drop_suidgid): setuid always;
// setgid where the group may execute, or where c is not of the file's
// group (its groups read from /proc; where they cannot be read, it is
// taken as not of the group, and the bit goes).
func killed(a fuse.Attr, c fuse.Caller) uint32 {
	mode := a.Mode
	if mode&syscall.S_IFMT != syscall.S_IFREG {
		return mode
	}
	mode &^= syscall.S_ISUID
	if mode&syscall.S_ISGID != 0 && (mode&syscall.S_IXGRP != 0 || c.Gid != a.Gid && !inGroup(c.Pid, a.Gid)) {
		mode &^= syscall.S_ISGID
	}
	return mode
}

// setID reports whether mode has the setuid or setgid bit.
func setID(mode uint32) bool { return mode&(syscall.S_ISUID|syscall.S_ISGID) != 0 }
