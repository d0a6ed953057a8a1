package core

import (
	"context"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/internal/safeat"
)

// maxXattrValue is the largest value the kernel takes (XATTR_SIZE_MAX).
const maxXattrValue = 64 << 10

// Xattrs returns the extended attributes of the file at p (following a
// final symlink within the root): every one when name is "", else just
// that one (ENODATA when it is missing). The xattr calls of internal/safeat
// take the O_PATH descriptor and reach the very file it holds through its
// /proc/self/fd magic link, never a host path, so no rename racing the
// request can redirect them. The daemon's own attribute (MarkXattr) is
// neither listed nor read, nor changed by SetXattr and RemoveXattr (EPERM).
func (s *Sandbox) Xattrs(ctx context.Context, p, name string) (string, map[string][]byte, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return "", nil, err
	}
	fd, err := s.root.openPath(ap, true)
	if err != nil {
		return ap, nil, PathErr(OpXattr, ap, err)
	}
	defer unix.Close(fd)
	out := map[string][]byte{}
	if reservedXattr(name) {
		return ap, nil, PathErr(OpXattr, ap, unix.ENODATA)
	}
	if name != "" {
		v, err := safeat.XattrValue(fd, name)
		if err != nil {
			return ap, nil, PathErr(OpXattr, ap, err)
		}
		out[name] = v
		return ap, out, nil
	}
	names, err := safeat.XattrNames(fd)
	if err != nil {
		return ap, nil, PathErr(OpXattr, ap, err)
	}
	for _, n := range names {
		if reservedXattr(n) {
			continue
		}
		v, err := safeat.XattrValue(fd, n)
		if err == unix.ENODATA {
			continue // removed meanwhile
		}
		if err != nil {
			return ap, nil, PathErr(OpXattr, ap, err)
		}
		out[n] = v
	}
	return ap, out, nil
}

// SetXattr sets one extended attribute of the file at p and reports a
// chmod event (an attribute change, as inotify's IN_ATTRIB tells it).
func (s *Sandbox) SetXattr(ctx context.Context, p, name string, value []byte) (string, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return "", err
	}
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return ap, PathErr(OpXattr, ap, unix.EINVAL)
	}
	if len(value) > maxXattrValue {
		return ap, PathErr(OpXattr, ap, unix.E2BIG)
	}
	if reservedXattr(name) {
		return ap, PathErr(OpXattr, ap, unix.EPERM)
	}
	return ap, s.changeXattr(ctx, ap, true, func(fd int) error { return safeat.Setxattr(fd, name, value, 0) })
}

// RemoveXattr removes one extended attribute of the file at p (ENODATA when
// it is missing) and reports a chmod event.
func (s *Sandbox) RemoveXattr(ctx context.Context, p, name string) (string, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return "", err
	}
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return ap, PathErr(OpXattr, ap, unix.EINVAL)
	}
	if reservedXattr(name) {
		return ap, PathErr(OpXattr, ap, unix.EPERM)
	}
	return ap, s.changeXattr(ctx, ap, true, func(fd int) error { return safeat.Removexattr(fd, name) })
}

// changeXattr runs change on the /proc/self/fd name of the file at the
// clean API path ap (follow false: a final symlink is the file itself, the
// mirror's view), under a claim, and reports a chmod event (an attribute
// change, as inotify's IN_ATTRIB tells it). The REST routes and the mirror
// both change attributes through it.
func (s *Sandbox) changeXattr(ctx context.Context, ap string, follow bool, change func(fd int) error) error {
	fd, err := s.root.openPath(ap, follow)
	if err != nil {
		return PathErr(OpXattr, ap, err)
	}
	defer unix.Close(fd)
	return s.changeXattrFd(ctx, ap, fd, change)
}

// changeXattrFd is changeXattr on the file fd holds, known as ap.
func (s *Sandbox) changeXattrFd(ctx context.Context, ap string, fd int, change func(fd int) error) error {
	claim := s.watch.Claim(ap)
	defer claim.Done()
	if err := change(fd); err != nil {
		return PathErr(OpXattr, ap, err)
	}
	s.quota.MayCopyUp() // it may have copied a fork's lower file up (core/quota, "Forks")
	s.tellFd(ctx, journal.Chmod, ap, fd)
	return nil
}
