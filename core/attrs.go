package core

import (
	"context"
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"

	"sandfs/internal/safeat"
)

// OpChmod and OpChown name failures of Chmod and Chown.
const (
	OpChmod = "chmod"
	OpChown = "chown"
)

// AttrResult says what a Chmod or Chown changed.
type AttrResult struct {
	Path  string   // the API path acted on (a final symlink followed)
	Paths []string // the API paths changed, at most MaxAttrPaths of them
	Count int      // how many entries were changed
}

// MaxAttrPaths bounds AttrResult.Paths; Count goes on counting.
const MaxAttrPaths = 1000

// Chmod sets the permission and special bits (mode&07777) of p, following a
// final symlink of p itself, and with recursive of everything under it.
// Symlinks met inside the tree are left alone (their mode means nothing on
// Linux). Each entry changed is one chmod event (Setattr claims and tells).
//
// Without Options.AllowSetid a mode with setuid or setgid is EPERM for a
// non-directory, and for any recursive Chmod, and nothing changes (setid.go).
func (s *Sandbox) Chmod(ctx context.Context, p string, mode uint32, recursive bool) (AttrResult, error) {
	m := mode & 0o7777
	a := SetAttr{Mode: &m}
	if s.refusesSetid(m) {
		if recursive {
			ap, _ := s.Clean(p)
			return AttrResult{}, setidErr(OpChmod, ap)
		}
		a.setidDirOnly = true
	}
	return s.attrTree(ctx, OpChmod, p, recursive, false, a)
}

// Chown changes the owner (uid >= 0) and group (gid >= 0) of p, following a
// final symlink of p itself, and with recursive of everything under it;
// symlinks inside the tree are changed themselves, never followed (chown -R).
func (s *Sandbox) Chown(ctx context.Context, p string, uid, gid int, recursive bool) (AttrResult, error) {
	var a SetAttr
	if uid >= 0 {
		a.Uid = &uid
	}
	if gid >= 0 {
		a.Gid = &gid
	}
	if a.Uid == nil && a.Gid == nil {
		ap, _ := s.Clean(p)
		return AttrResult{}, PathErr(OpChown, ap, unix.EINVAL)
	}
	return s.attrTree(ctx, OpChown, p, recursive, true, a)
}

func (s *Sandbox) attrTree(ctx context.Context, op, p string, recursive, links bool, a SetAttr) (AttrResult, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return AttrResult{}, err
	}
	if ap, err = s.root.followLeaf(ap); err != nil {
		return AttrResult{}, PathErr(op, ap, err)
	}
	res := AttrResult{Path: ap}
	add := func(p string) {
		res.Count++
		if len(res.Paths) < MaxAttrPaths {
			res.Paths = append(res.Paths, p)
		}
	}
	top, err := s.root.lstat(ap)
	if err != nil {
		return res, PathErr(op, ap, err)
	}
	if err := s.setattr(ctx, ap, a); err != nil {
		return res, relabel(err, op)
	}
	add(ap)
	if !recursive || !top.IsDir() {
		return res, nil
	}
	err = s.Walk(ctx, ap, WalkOptions{}, func(e WalkEntry) error {
		if e.IsSymlink() && !links {
			return nil
		}
		if err := s.setattr(ctx, e.Path, a); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil // gone since the walk saw it
			}
			return err
		}
		add(e.Path)
		return nil
	})
	if err != nil {
		return res, relabel(err, op)
	}
	return res, nil
}

// relabel renames the op of a core path error (setattr → chmod/chown).
func relabel(err error, op string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if pe.Err == ErrSetid {
			return setidErr(op, pe.Path)
		}
		return PathErr(op, pe.Path, pe.Err)
	}
	return err
}

// setattrFd applies a to the file fd (an O_PATH|O_NOFOLLOW handle) without
// telling the journal, for PreserveAttrs, which tells once per entry.
func setattrFd(fd int, a SetAttr) error {
	if a.Uid != nil || a.Gid != nil {
		uid, gid := a.owner()
		if err := safeat.Chown(fd, uid, gid); err != nil && err != unix.EPERM {
			return err // like cp -p, an owner we may not give is not an error
		}
	}
	if a.Mode != nil {
		if err := safeat.Chmod(fd, *a.Mode); err != nil {
			return err
		}
	}
	if a.Atime != nil || a.Mtime != nil {
		if err := safeat.Utimes(fd, a.times()); err != nil {
			return err
		}
	}
	return nil
}
