package core

import (
	"context"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/du"
	"sandfs/core/journal"
	"sandfs/core/precond"
	"sandfs/core/quota"
	"sandfs/internal/safeat"
)

// OpCopy names copy failures.
const OpCopy = "copy"

// CopyOptions shape a Copy.
type CopyOptions struct {
	Overwrite    bool // replace an existing destination (a directory with all under it)
	MkdirParents bool // create the destination's missing parents
	// Pre is what the destination must be, checked before the copy starts
	// and again just before the rename (precondition.go).
	Pre precond.Precondition
}

// CopyStats says what a Copy made.
type CopyStats struct {
	Entries int   // files, directories and symlinks created
	Bytes   int64 // bytes of regular files copied
}

// copied is one entry a Copy created, relative to the destination.
type copied struct {
	rel   string
	isDir bool
	file  bool
}

// Copy copies from to to. Neither final component is followed: a symlink is
// copied as a symlink, at the top as anywhere below. A regular file's data
// is cloned (FICLONE, a reflink where the filesystem shares extents) or
// copied in the kernel (copy_file_range), and its mode is kept less setuid
// and setgid (dropped as GNU cp drops them; setid.go); a directory is copied
// whole, entries walked by fd with O_NOFOLLOW; FIFOs, sockets and
// devices inside a tree are skipped (at the top they are EINVAL).
//
// The copy is built under a temp name beside the destination and renamed
// into place, so the destination appears whole or not at all. Without
// Overwrite an existing destination is EEXIST and nothing changes
// (renameat2 RENAME_NOREPLACE at the end, so a destination created during
// the copy is not clobbered either); with it the old destination is
// replaced. Copying a directory into itself or onto the root is EINVAL.
// New entries are given to the owner in ctx (owner.go).
func (s *Sandbox) Copy(ctx context.Context, from, to string, o CopyOptions) (CopyStats, error) {
	var stats CopyStats
	fa, err := s.Clean(from)
	if err != nil {
		return stats, err
	}
	ta, err := s.Clean(to)
	if err != nil {
		return stats, err
	}
	if fa == "/" || ta == "/" || fa == ta || apipath.Under(ta, fa) {
		return stats, PathErr(OpCopy, fa, unix.EINVAL)
	}
	if o.MkdirParents {
		dir, _ := apipath.Split(ta)
		if err := s.mkdirAllFor(ctx, dir, 0o755, 1); err != nil {
			return stats, err
		}
	}
	fdir, fname, err := s.root.parent(fa)
	if err != nil {
		return stats, PathErr(OpCopy, fa, err)
	}
	defer unix.Close(fdir)
	var sst unix.Stat_t
	if err := unix.Fstatat(fdir, fname, &sst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return stats, PathErr(OpCopy, fa, err)
	}
	switch sst.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR, unix.S_IFLNK:
	default:
		return stats, PathErr(OpCopy, fa, unix.EINVAL)
	}
	tdir, tname, err := s.root.parent(ta)
	if err != nil {
		return stats, PathErr(OpCopy, ta, err)
	}
	defer unix.Close(tdir)
	if err := checkAt(OpCopy, ta, o.Pre, tdir, tname); err != nil {
		return stats, err // before EEXIST: a failed precondition is told as one
	}
	var dst unix.Stat_t
	if unix.Fstatat(tdir, tname, &dst, unix.AT_SYMLINK_NOFOLLOW) == nil {
		if !o.Overwrite {
			return stats, PathErr(OpCopy, ta, unix.EEXIST)
		}
		if err := replaceable(&sst, &dst, tdir, tname); err != nil {
			return stats, PathErr(OpReplace, ta, err) // before a byte is copied
		}
	}

	claim := s.watch.Claim(ta)
	defer claim.Done()
	parentAP, _ := apipath.Split(ta)
	tmp := TempName()
	claim.Add(apipath.Child(parentAP, tmp))
	// The copy's usage: the source's, reserved before a byte is copied,
	// then what the copy holds, less what it replaces (core/quota).
	uop := s.quota.Begin()
	var grew quota.Count
	defer func() { uop.End(grew.Bytes, grew.Entries) }()
	var old quota.Count
	if o.Overwrite {
		old = s.replaced(ctx, tdir, tname, ta)
	}
	src := du.MeasureAt(ctx, fdir, fname)
	if err := uop.Reserve(OpCopy, ta, src.Bytes-old.Bytes, src.Entries-old.Entries); err != nil {
		return CopyStats{}, err
	}
	var made []copied
	c := &copier{ctx: ctx, stats: &stats, made: &made}
	if err := c.entry(fdir, fname, &sst, tdir, tmp, ""); err != nil {
		RemoveAllAt(context.WithoutCancel(ctx), tdir, tmp)
		return CopyStats{}, PathErr(OpCopy, fa, err)
	}
	// What the copy holds, as the copier counted it (it makes no hard
	// links and skips what a walk would not count): no second walk.
	built := quota.Count{Bytes: stats.Bytes, Entries: int64(stats.Entries)}
	if err := uop.Reserve(OpCopy, ta, built.Bytes-src.Bytes, built.Entries-src.Entries); err != nil {
		RemoveAllAt(context.WithoutCancel(ctx), tdir, tmp)
		return CopyStats{}, err // the source grew while it was copied
	}
	unlock := locks.lock(ta)
	err = checkAt(OpCopy, ta, o.Pre, tdir, tname)
	if err == nil {
		err = RenameNoReplace(tdir, tmp, tdir, tname)
	}
	var was replacement
	if err == unix.EEXIST && o.Overwrite {
		was, err = s.replaceAt(ctx, tdir, tmp, tdir, tname, ta)
		old = was.usage
	}
	unlock()
	if errors.Is(err, precond.ErrFailed) {
		RemoveAllAt(context.WithoutCancel(ctx), tdir, tmp)
		return CopyStats{}, err
	}
	if err != nil {
		RemoveAllAt(context.WithoutCancel(ctx), tdir, tmp)
		return CopyStats{}, replaceErr(OpCopy, ta, ta, err)
	}
	grew = quota.Count{Bytes: built.Bytes - old.Bytes, Entries: built.Entries - old.Entries}
	if was.found {
		s.Tell(ctx, journal.Remove, ta, "", was.isDir)
	}
	for _, m := range made {
		p := ta
		if m.rel != "" {
			p = ta + "/" + m.rel
		}
		s.Tell(ctx, journal.Create, p, "", m.isDir)
		if m.file {
			s.Tell(ctx, journal.Write, p, "", false)
		}
	}
	return stats, nil
}

type copier struct {
	ctx   context.Context
	stats *CopyStats
	made  *[]copied
}

// entry copies sname in sdir (described by st) to dname in ddir, which must
// not exist. rel is its path below the copy's top ("" for the top).
func (c *copier) entry(sdir int, sname string, st *unix.Stat_t, ddir int, dname, rel string) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	// Without PreserveAttrs a copy drops setuid and setgid, as GNU cp does:
	// the copy is the daemon's (or the context's owner's), not the source
	// owner's, and root must not hand out its own set-id files.
	mode := st.Mode & 0o7777 &^ (unix.S_ISUID | unix.S_ISGID)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		n, err := copyFileAt(c.ctx, sdir, sname, ddir, dname, mode)
		if err != nil {
			return err
		}
		c.stats.Bytes += n
		*c.made = append(*c.made, copied{rel: rel, file: true})
	case unix.S_IFLNK:
		target, err := Readlinkat(sdir, sname)
		if err != nil {
			return err
		}
		if err := unix.Symlinkat(target, ddir, dname); err != nil {
			return err
		}
		if err := chownNewAt(c.ctx, ddir, dname); err != nil {
			return err
		}
		*c.made = append(*c.made, copied{rel: rel})
	case unix.S_IFDIR:
		// Everything after the mkdir goes through the descriptor of the
		// directory made: whoever owns ddir may swap the name for a symlink
		// meanwhile (the chmod once followed it out of the root).
		dfd, err := MkdirOpen(ddir, dname)
		if err != nil {
			return err
		}
		defer unix.Close(dfd)
		*c.made = append(*c.made, copied{rel: rel, isDir: true})
		if err := c.dir(sdir, sname, dfd, rel); err != nil {
			return err
		}
		if err := chownNewFd(c.ctx, dfd); err != nil {
			return err
		}
		if err := safeat.Chmod(dfd, mode); err != nil {
			return err
		}
	default:
		return nil // FIFO, socket, device: skipped inside a tree
	}
	c.stats.Entries++
	return nil
}

// dir copies the entries of the directory sname in sdir into the directory
// dfd holds.
func (c *copier) dir(sdir int, sname string, dfd int, rel string) error {
	sfd, err := unix.Openat(sdir, sname, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	sd := os.NewFile(uintptr(sfd), sname)
	defer sd.Close()
	for {
		names, rerr := sd.Readdirnames(512)
		for _, n := range names {
			var st unix.Stat_t
			if unix.Fstatat(sfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue // gone since readdir
			}
			r := n
			if rel != "" {
				r = rel + "/" + n
			}
			if err := c.entry(sfd, n, &st, dfd, n, r); err != nil {
				return err
			}
		}
		if rerr == io.EOF || len(names) == 0 {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// copyPiece is how much of a file a copy moves between two looks at its
// context: at this machine's slowest disk speed (100 MB/s) 0.17 s.
const copyPiece = 16 << 20

// copyFileAt copies the regular file sname in sdir to a new file dname in
// ddir with the given mode: a reflink where the filesystem can, else
// copy_file_range (io.Copy between two *os.File uses it), else read/write.
func copyFileAt(ctx context.Context, sdir int, sname string, ddir int, dname string, mode uint32) (int64, error) {
	sfd, err := unix.Openat(sdir, sname, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	src := os.NewFile(uintptr(sfd), sname)
	defer src.Close()
	dfd, err := unix.Openat(ddir, dname, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return 0, err
	}
	dst := os.NewFile(uintptr(dfd), dname)
	defer dst.Close()
	var n int64
	if unix.IoctlFileClone(dfd, sfd) == nil {
		var st unix.Stat_t
		if err := unix.Fstat(dfd, &st); err == nil {
			n = st.Size
		}
	} else {
		// In pieces, so an abandoned copy of a big file stops within one
		// piece; io.CopyN still reaches copy_file_range (os.File.ReadFrom
		// takes the *io.LimitedReader apart).
		for {
			k, err := io.CopyN(dst, src, copyPiece)
			n += k
			if err == io.EOF {
				break
			}
			if err != nil {
				return 0, err
			}
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := chownNewFd(ctx, dfd); err != nil {
		return 0, err
	}
	if err := unix.Fchmod(dfd, mode); err != nil {
		return 0, err
	}
	return n, dst.Close()
}

// MkdirOpen makes the directory name in dirfd (0700) and opens it
// (O_PATH|O_NOFOLLOW), refusing with EEXIST a directory this process did
// not make: one whoever owns dirfd put there between the mkdir and the open
// (no one but root can make a directory the daemon's; a daemon that is not
// root acts only as itself). Later changes go through the descriptor.
func MkdirOpen(dirfd int, name string) (int, error) {
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil {
		return -1, err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR {
			err = unix.EEXIST
		}
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if int(st.Uid) != daemonUid || st.Mode&0o777 != 0o700 {
		unix.Close(fd)
		return -1, unix.EEXIST
	}
	return fd, nil
}
