package core

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Root is the tree a sandbox serves, held by one directory descriptor.
// Every name an operation takes is resolved beneath it (resolve.go: as
// if the root were "/"; resolve_strict.go: following no symlink at all),
// never through a host path, so a symlink or a rename racing a request
// can redirect it only within the tree.
type Root struct {
	fd      int
	openat2 bool // RESOLVE_IN_ROOT works here; else the walk of resolve.go
}

// Root is the sandbox's tree, for the subpackages and the mirror that
// resolve beneath it as core does.
func (s *Sandbox) Root() *Root { return &s.root }

// Openat2 reports whether resolution goes through openat2 or the walk.
func (r *Root) Openat2() bool { return r.openat2 }

func probeOpenat2(root int) bool {
	fd, err := unix.Openat2(root, ".", &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// Sync is syncfs(2) on the root's filesystem.
func (r *Root) Sync() error { return unix.Syncfs(r.fd) }

// Statfs reports the filesystem holding the root.
func (r *Root) Statfs(st *unix.Statfs_t) error { return unix.Fstatfs(r.fd, st) }

// FSType is the filesystem type (statfs f_type) of the root.
func (r *Root) FSType() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(r.fd, &st); err != nil {
		return 0, err
	}
	return st.Type, nil
}

// lstat describes the file at the clean API path ap, a final symlink
// itself, with the error of a stat.
func (r *Root) lstat(ap string) (Info, error) {
	st, err := r.statPath(ap, false)
	if err != nil {
		return Info{}, PathErr(OpStat, ap, err)
	}
	return InfoFrom(ap, &st), nil
}

// statPath is fstat(2) of the file at the clean API path ap, opened O_PATH
// beneath the root (follow: through a final symlink, within the root) and
// closed again. Its error is the bare errno.
func (r *Root) statPath(ap string, follow bool) (unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := r.openPath(ap, follow)
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	return st, unix.Fstat(fd, &st)
}

// identity is the root directory's device and inode: the manifest
// records it, to know the tree it describes (manifest.go).
func (r *Root) identity() (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(r.fd, &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}
