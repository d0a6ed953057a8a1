package core

import (
	"context"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// MoveOptions shape a Move.
type MoveOptions struct {
	Overwrite    bool // replace an existing destination (a directory with all under it)
	MkdirParents bool // create the destination's missing parents
	// Pre is what the source must be, checked just before the rename
	// (precondition.go).
	Pre Precondition
}

// Move renames from to to. Neither final component is followed: a symlink
// moves as itself. Without Overwrite an existing destination is EEXIST and
// nothing changes (renameat2 RENAME_NOREPLACE). The root cannot be moved or
// replaced, nor a directory moved into itself or over one of its ancestors
// (EINVAL).
func (s *Sandbox) Move(ctx context.Context, from, to string, o MoveOptions) error {
	fa, ta, err := s.cleanBoth(from, to)
	if err != nil {
		return err
	}
	if fa == "/" || ta == "/" || isUnder(fa, ta) || isUnder(ta, fa) {
		return pathErr(OpMove, fa, unix.EINVAL)
	}
	if o.MkdirParents {
		dir, _ := dirAndName(ta)
		if err := s.mkdirAll(ctx, dir, 0o755); err != nil {
			return err
		}
	}
	fdir, fname, tdir, tname, err := s.renameParents(fa, ta)
	if err != nil {
		return err
	}
	defer unix.Close(fdir)
	defer unix.Close(tdir)

	claim := s.Claim(fa, ta)
	defer claim.Done()
	unlock := locks.lock(fa, ta)
	defer unlock()
	if err := checkAt(OpMove, fa, o.Pre, fdir, fname); err != nil {
		return err
	}
	uop := s.usageBegin() // a move frees what it replaces, and adds nothing
	var gone usageCount
	defer func() { uop.end(-gone.bytes, -gone.entries) }()
	err = renameNoReplace(fdir, fname, tdir, tname)
	if err == unix.EEXIST && o.Overwrite {
		if fa != ta {
			gone = s.replaced(ctx, tdir, tname)
		}
		// A file over a file, or a directory over an empty one, is one
		// atomic rename; anything else needs the destination gone first.
		err = unix.Renameat(fdir, fname, tdir, tname)
		switch err {
		case unix.ENOTEMPTY, unix.EEXIST, unix.EISDIR, unix.ENOTDIR:
			if err = removeAllAt(ctx, tdir, tname); err == nil {
				err = renameNoReplace(fdir, fname, tdir, tname)
			}
		}
	}
	if err != nil {
		gone = usageCount{}
		if o.Overwrite {
			s.outsideChange() // the destination may be partly gone
		}
	}
	if err == unix.EEXIST || err == unix.ENOTEMPTY {
		return pathErr(OpMove, ta, unix.EEXIST)
	}
	if err == unix.ENOENT {
		// Say which side is missing.
		var st unix.Stat_t
		if unix.Fstatat(fdir, fname, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return pathErr(OpMove, fa, err)
		}
		return pathErr(OpMove, ta, err)
	}
	if err != nil {
		return pathErr(OpMove, fa, err)
	}
	s.emit(ctx, journal.Rename, ta, fa, false)
	return nil
}

// renameParents resolves the directories of both ends of a rename (clean
// API paths), for the *at syscalls; on error nothing is left open.
func (s *Sandbox) renameParents(fa, ta string) (fdir int, fname string, tdir int, tname string, err error) {
	if fdir, fname, err = s.parent(fa); err != nil {
		return -1, "", -1, "", pathErr(OpMove, fa, err)
	}
	if tdir, tname, err = s.parent(ta); err != nil {
		unix.Close(fdir)
		return -1, "", -1, "", pathErr(OpMove, ta, err)
	}
	return fdir, fname, tdir, tname, nil
}

// renameNoReplace is renameat2(RENAME_NOREPLACE), with a check-then-rename
// fallback for filesystems that do not support the flag.
func renameNoReplace(fdir int, fname string, tdir int, tname string) error {
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

// isUnder reports whether API path p lies strictly inside directory dir.
func isUnder(p, dir string) bool {
	return dir != "/" && strings.HasPrefix(p, dir+"/")
}

// replaced is what name in dirfd holds, which a move or copy is about to
// replace: its bytes (as freedBy counts a file) and entries.
func (s *Sandbox) replaced(ctx context.Context, dirfd int, name string) usageCount {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return usageCount{}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return s.measureAt(ctx, dirfd, name)
	}
	return usageCount{bytes: s.freedBy(&st), entries: 1}
}
