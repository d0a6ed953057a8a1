package core

import (
	"context"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/journal"
	"sandfs/core/precond"
	"sandfs/core/quota"
)

// MoveOptions shape a Move.
type MoveOptions struct {
	Overwrite    bool // replace an existing destination as rename(2) does
	MkdirParents bool // create the destination's missing parents
	// Pre is what the source must be, checked just before the rename
	// (precondition.go).
	Pre precond.Precondition
}

// Move renames from to to. Neither final component is followed: a symlink
// moves as itself. Without Overwrite an existing destination is EEXIST and
// nothing changes (renameat2 RENAME_NOREPLACE). With it, the destination is
// replaced as rename(2) replaces it, and never more: a file (or symlink)
// may replace a file, a directory an empty directory; a directory onto a
// non-empty one is ENOTEMPTY, a file onto a directory EISDIR, a directory
// onto a file ENOTDIR, and nothing changes. What was replaced is told
// removed before the rename. The root cannot be moved or replaced, nor a
// directory moved into itself or over one of its ancestors (EINVAL).
func (s *Sandbox) Move(ctx context.Context, from, to string, o MoveOptions) error {
	fa, ta, err := s.cleanBoth(from, to)
	if err != nil {
		return err
	}
	if fa == "/" || ta == "/" || apipath.Under(fa, ta) || apipath.Under(ta, fa) {
		return PathErr(OpMove, fa, unix.EINVAL)
	}
	if o.MkdirParents {
		dir, _ := apipath.Split(ta)
		if err := s.MkdirAll(ctx, dir, 0o755); err != nil {
			return err
		}
	}
	fdir, fname, tdir, tname, err := s.root.renameParents(fa, ta)
	if err != nil {
		return err
	}
	defer unix.Close(fdir)
	defer unix.Close(tdir)

	claim := s.watch.Claim(fa, ta)
	defer claim.Done()
	unlock := locks.lock(fa, ta)
	defer unlock()
	s.watch.DirMoved() // it may be a directory the mirror holds (dir_guard.go)
	if err := checkAt(OpMove, fa, o.Pre, fdir, fname); err != nil {
		return err
	}
	uop := s.quota.Begin() // a move frees what it replaces, and adds nothing
	var gone quota.Count
	defer func() { uop.End(-gone.Bytes, -gone.Entries) }()
	err = RenameNoReplace(fdir, fname, tdir, tname)
	if err == unix.EEXIST && o.Overwrite {
		if fa == ta {
			return nil // rename(2) of a name onto itself does nothing
		}
		var was replacement
		if was, err = s.replaceAt(ctx, fdir, fname, tdir, tname, ta); err == nil {
			gone = was.usage
			if was.found {
				s.Tell(ctx, journal.Remove, ta, "", was.isDir)
			}
		}
	}
	if err == unix.ENOENT {
		// Say which side is missing.
		var st unix.Stat_t
		if unix.Fstatat(fdir, fname, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return PathErr(OpMove, fa, err)
		}
		return PathErr(OpMove, ta, err)
	}
	if err != nil {
		return replaceErr(OpMove, fa, ta, err)
	}
	s.Tell(ctx, journal.Rename, ta, fa, false)
	return nil
}

// OpReplace names the refusals of a replace that rename(2) would refuse:
// a non-empty directory (ENOTEMPTY), a directory by a file (EISDIR), a
// file by a directory (ENOTDIR). They are conflicts with what the
// destination holds, not bad paths.
const OpReplace = "replace"

// replacement is what a replacing rename replaced.
type replacement struct {
	found bool        // something was there (else the name was free by then)
	isDir bool        // an empty directory
	usage quota.Count // what it held (core/quota)
}

// replaceAt renames fname in fdir onto tname in tdir (API path ta),
// replacing what is there as rename(2) does and no more: rename(2) itself
// refuses a non-empty directory, a directory by a file and a file by a
// directory.
func (s *Sandbox) replaceAt(ctx context.Context, fdir int, fname string, tdir int, tname, ta string) (replacement, error) {
	var st unix.Stat_t
	if unix.Fstatat(tdir, tname, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return replacement{}, RenameNoReplace(fdir, fname, tdir, tname) // gone meanwhile
	}
	was := replacement{found: true, isDir: st.Mode&unix.S_IFMT == unix.S_IFDIR, usage: s.replaced(ctx, tdir, tname, ta)}
	if err := unix.Renameat(fdir, fname, tdir, tname); err != nil {
		return replacement{}, err
	}
	return was, nil
}

// replaceable says what rename(2) would say of replacing dst (a name in
// tdir) by an entry like src: EISDIR, ENOTDIR, ENOTEMPTY, or nil. A copy
// asks before it copies a byte; the rename still has the last word.
func replaceable(src, dst *unix.Stat_t, tdir int, tname string) error {
	srcDir, dstDir := src.Mode&unix.S_IFMT == unix.S_IFDIR, dst.Mode&unix.S_IFMT == unix.S_IFDIR
	switch {
	case dstDir && !srcDir:
		return unix.EISDIR
	case srcDir && !dstDir:
		return unix.ENOTDIR
	case dstDir && hasEntriesAt(tdir, tname):
		return unix.ENOTEMPTY
	}
	return nil
}

// hasEntriesAt reports whether the directory name in dirfd holds an entry
// (one that cannot be read is taken to hold some).
func hasEntriesAt(dirfd int, name string) bool {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err != unix.ENOENT
	}
	dir := os.NewFile(uintptr(fd), name)
	defer dir.Close()
	names, err := dir.Readdirnames(1)
	return len(names) > 0 || (err != nil && err != io.EOF)
}

// replaceErr is the error of a move or copy (op) from fa to ta that failed
// with err: a refusal of rename(2)'s is the destination's (OpReplace), an
// existing destination EEXIST, anything else the source's.
func replaceErr(op, fa, ta string, err error) error {
	switch err {
	case unix.ENOTEMPTY, unix.EISDIR, unix.ENOTDIR:
		return PathErr(OpReplace, ta, err)
	case unix.EEXIST:
		return PathErr(op, ta, err)
	}
	return PathErr(op, fa, err)
}

// renameParents resolves the directories of both ends of a rename (clean
// API paths), for the *at syscalls; on error nothing is left open.
func (r *Root) renameParents(fa, ta string) (fdir int, fname string, tdir int, tname string, err error) {
	if fdir, fname, err = r.parent(fa); err != nil {
		return -1, "", -1, "", PathErr(OpMove, fa, err)
	}
	if tdir, tname, err = r.parent(ta); err != nil {
		unix.Close(fdir)
		return -1, "", -1, "", PathErr(OpMove, ta, err)
	}
	return fdir, fname, tdir, tname, nil
}

// RenameNoReplace is renameat2(RENAME_NOREPLACE), with a check-then-rename
// fallback for filesystems that do not support the flag.
func RenameNoReplace(fdir int, fname string, tdir int, tname string) error {
	err := unix.Renameat2(fdir, fname, tdir, tname, unix.RENAME_NOREPLACE)
	if err != unix.EINVAL && err != unix.ENOSYS {
		return err
	}
	var st unix.Stat_t
	if unix.Fstatat(tdir, tname, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return unix.EEXIST
	}
	return unix.Renameat(fdir, fname, tdir, tname)
}

// replaced is what name in dirfd (API path ap) holds, which a move or
// copy is about to replace: its bytes (as quota.State.FreedBy counts a
// file; in a fork, its upper's) and entries.
func (s *Sandbox) replaced(ctx context.Context, dirfd int, name, ap string) quota.Count {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return quota.Count{}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return s.measureFreed(ctx, dirfd, name, ap)
	}
	return s.freedBy(ctx, ap, &st)
}
