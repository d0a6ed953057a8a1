package core

import (
	"context"
	"io"
	"os"
	"sandfs/core/apipath"
	"sandfs/internal/xdev"
	"sort"

	"golang.org/x/sys/unix"
)

// Op names in the *fs.PathError values core returns. Boundaries may look at
// the op to tell, say, a non-empty directory on delete from one on move.
const (
	OpStat   = "stat"
	OpList   = "list"
	OpOpen   = "open"
	OpWrite  = "write"
	OpMkdir  = "mkdir"
	OpMove   = "move"
	OpRemove = "remove"
)

// Stat describes the file at p, following a final symlink (within the root).
func (s *Sandbox) Stat(ctx context.Context, p string) (Info, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return Info{}, err
	}
	st, err := s.root.statPath(ap, true)
	if err != nil {
		return Info{}, PathErr(OpStat, ap, err)
	}
	return InfoFrom(ap, &st), nil
}

// Lstat describes the file at p without following a final symlink.
func (s *Sandbox) Lstat(ctx context.Context, p string) (Info, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return Info{}, err
	}
	return s.root.lstat(ap)
}

// List describes the entries of the directory at p (following a final
// symlink), sorted by name, each as lstat sees it. At most limit entries are
// returned (limit <= 0: no limit); truncated says whether more were there.
// A name that is not UTF-8 is left out and counted (names.go). Listing a
// non-directory is ENOTDIR.
func (s *Sandbox) List(ctx context.Context, p string, limit int) (entries []Info, truncated bool, err error) {
	ap, err := s.Clean(p)
	if err != nil {
		return nil, false, err
	}
	fd, err := s.root.OpenBeneath(ap, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, false, PathErr(OpList, ap, err)
	}
	dir := os.NewFile(uintptr(fd), ap)
	defer dir.Close()
	for {
		names, err := dir.Readdirnames(1024)
		for _, name := range names {
			if Unreportable(ctx, name) {
				continue // names.go
			}
			if limit > 0 && len(entries) >= limit {
				truncated = true
				break
			}
			var st unix.Stat_t
			if _, err := xdev.LstatAt(fd, name, &st); err != nil {
				continue // removed while we listed
			}
			entries = append(entries, InfoFrom(apipath.Child(ap, name), &st))
		}
		if truncated || err == io.EOF || len(names) == 0 {
			break
		}
		if err != nil {
			return nil, false, PathErr(OpList, ap, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return entries, truncated, nil
}

// OpenFile opens the regular file at p for reading (following a final
// symlink within the root). The *os.File is named by the API path and can be
// handed to http.ServeContent, which sends it with sendfile. A directory is
// EISDIR; a FIFO, socket or device is EINVAL (opening one never blocks).
func (s *Sandbox) OpenFile(ctx context.Context, p string) (*os.File, Info, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return nil, Info{}, err
	}
	fd, err := s.root.OpenBeneath(ap, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, Info{}, PathErr(OpOpen, ap, specialErr(err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, Info{}, PathErr(OpOpen, ap, err)
	}
	info := InfoFrom(ap, &st)
	switch {
	case info.IsDir():
		unix.Close(fd)
		return nil, info, PathErr(OpOpen, ap, unix.EISDIR)
	case !info.IsRegular():
		unix.Close(fd)
		return nil, info, PathErr(OpOpen, ap, unix.EINVAL)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, info, PathErr(OpOpen, ap, err)
	}
	return os.NewFile(uintptr(fd), ap), info, nil
}

// LstatRaw is lstat(2) of p beneath the root, as the kernel reports it.
func (s *Sandbox) LstatRaw(ctx context.Context, p string) (unix.Stat_t, error) {
	var st unix.Stat_t
	ap, err := s.Clean(p)
	if err != nil {
		return st, err
	}
	if st, err = s.root.statPath(ap, false); err != nil {
		return st, PathErr(OpStat, ap, err)
	}
	return st, nil
}

// Readlink returns the target of the symlink at p, as stored (never
// resolved): what ls -l shows after "->". A p that is not a symlink is
// EINVAL, as readlink(2) says.
func (s *Sandbox) Readlink(ctx context.Context, p string) (string, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return "", err
	}
	dirfd, name, err := s.root.parent(ap)
	if err != nil {
		return "", PathErr(OpReadlink, ap, err)
	}
	defer unix.Close(dirfd)
	t, err := Readlinkat(dirfd, name)
	if err != nil {
		return "", PathErr(OpReadlink, ap, err)
	}
	return t, nil
}
