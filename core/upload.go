package core

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/journal"
	"sandfs/core/precond"
	"sandfs/core/quota"
)

// OpUpload names upload failures.
const OpUpload = "upload"

// UploadPrefix starts the name of an upload's spool file beside its target:
// ".sandfs-upload-<id>.part". Watchers see it (it is not excluded).
const UploadPrefix = TempPrefix + "upload-"

// UploadOptions shape an Upload.
type UploadOptions struct {
	// Pre is what the target must be, checked before the body is read and
	// again just before the rename (precondition.go).
	Pre precond.Precondition
	// ETag, when not nil, receives the ETag of the file written.
	ETag *string
}

// Upload streams r into the file at p through a spool file
// ".sandfs-upload-<id>.part" in the same directory (missing parents are
// created), which is fsynced and renamed over the target, so a reader of p
// sees the old file or the whole new one. Like the AIO daemon, it reports
// the spool file's life in the journal as the kernel saw it: create, write
// and chmod on the .part name, then a rename onto p with old_path the .part.
// An existing target's mode (less setuid and setgid, setid.go) and, where
// the daemon may, owner are kept; a
// new file is 0644, owned by the owner in ctx when there is one. It returns
// the API path written and its size. On any error, r failing half-way
// included, a failed precondition too, the old content stays whole and the
// spool file is removed.
func (s *Sandbox) Upload(ctx context.Context, p string, r io.Reader, o UploadOptions) (string, int64, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return "", 0, err
	}
	if ap, err = s.root.followLeaf(ap); err != nil {
		return "", 0, PathErr(OpUpload, ap, err)
	}
	dir, name := apipath.Split(ap)
	if name == "" {
		return "", 0, PathErr(OpUpload, ap, unix.EISDIR)
	}
	if err := s.mkdirAllFor(ctx, dir, 0o755, 1); err != nil {
		return "", 0, err
	}
	dirfd, err := s.root.OpenDir(dir)
	if err != nil {
		return "", 0, PathErr(OpUpload, ap, err)
	}
	defer unix.Close(dirfd)

	mode := uint32(0o644)
	owner, group := -1, -1
	existed := false
	var freed int64 // the bytes of the file replaced (core/quota)
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return "", 0, PathErr(OpUpload, ap, unix.EISDIR)
	case err == nil && NotRegular(st.Mode):
		return "", 0, PathErr(OpUpload, ap, unix.EINVAL)
	case err == nil:
		mode = s.KeptMode(st.Mode & 0o7777)
		owner, group = int(st.Uid), int(st.Gid)
		existed, freed = true, s.freedBy(ctx, ap, &st).Bytes
	case err != unix.ENOENT:
		return "", 0, PathErr(OpUpload, ap, err)
	}
	if err := checkAt(OpUpload, ap, o.Pre, dirfd, name); err != nil {
		return "", 0, err
	}
	uop := s.quota.Begin()
	defer uop.End(0, 0) // a failed upload: its reservation released
	if !existed {
		if err := uop.Reserve(OpUpload, ap, 0, 1); err != nil {
			return "", 0, err
		}
	}

	claim := s.watch.ClaimLanding(ap)
	defer claim.End()
	var part string
	var fd int
	for tries := 0; ; tries++ {
		part = uploadName()
		claim.Temp(apipath.Child(dir, part))
		fd, err = unix.Openat(dirfd, part, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST && tries < 16 {
			continue
		}
		break
	}
	if err != nil {
		return "", 0, PathErr(OpUpload, ap, err)
	}
	partPath := apipath.Child(dir, part)
	f := os.NewFile(uintptr(fd), partPath)
	fail := func(err error) (string, int64, error) {
		f.Close()
		unix.Unlinkat(dirfd, part, 0)
		s.Tell(ctx, journal.Remove, partPath, "", false)
		return "", 0, PathErr(OpUpload, ap, err)
	}
	s.Tell(ctx, journal.Create, partPath, "", false)
	n, err := copySparse(f, &quota.Reader{R: r, Need: func(n int64) error { return uop.ReserveTo(OpUpload, ap, n-freed) }})
	if err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	s.Tell(ctx, journal.Write, partPath, "", false)
	if owner >= 0 {
		_ = f.Chown(owner, group)
	} else if err := chownNewFd(ctx, fd); err != nil {
		return fail(err)
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return fail(err)
	}
	s.Tell(ctx, journal.Chmod, partPath, "", false)
	if _, err := tellETag(f, o.ETag, false); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		unix.Unlinkat(dirfd, part, 0)
		s.Tell(ctx, journal.Remove, partPath, "", false)
		return "", 0, PathErr(OpUpload, ap, err)
	}
	if err := renameChecked(OpUpload, ap, o.Pre, dirfd, part, name); err != nil {
		unix.Unlinkat(dirfd, part, 0)
		s.Tell(ctx, journal.Remove, partPath, "", false)
		return "", 0, err
	}
	claim.Land()
	if existed {
		uop.End(n-freed, 0)
	} else {
		uop.End(n, 1)
	}
	s.Tell(ctx, journal.Rename, ap, partPath, false)
	return ap, n, nil
}

// uploadName is ".sandfs-upload-<16 hex>.part".
func uploadName() string {
	var b [8]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return UploadPrefix + hex.EncodeToString(b[:]) + ".part"
}

// sparseBlock is the unit copySparse reads and tests for zeros.
const sparseBlock = 256 << 10

var zeroBlock = make([]byte, sparseBlock)

// copySparse copies r into the new, empty file f and leaves holes where
// whole blocks are zero, as cp --sparse=auto does: the content is the same,
// disk images cost only their data, and memory is one block.
func copySparse(f *os.File, r io.Reader) (int64, error) {
	buf := make([]byte, sparseBlock)
	var n int64
	hole := false
	for {
		k, rerr := io.ReadFull(r, buf)
		if k > 0 {
			if k == sparseBlock && bytes.Equal(buf, zeroBlock) {
				if _, err := f.Seek(int64(k), io.SeekCurrent); err != nil {
					return n, err
				}
				hole = true
			} else {
				if _, err := f.Write(buf[:k]); err != nil {
					return n, err
				}
				hole = false
			}
			n += int64(k)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return n, rerr
		}
	}
	if hole {
		// A trailing hole: the size comes from the length, not a write.
		if err := f.Truncate(n); err != nil {
			return n, err
		}
	}
	return n, nil
}
