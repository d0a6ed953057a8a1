package core

import (
	"context"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/internal/safeat"
)

// OpPreserve names failures of PreserveAttrs.
const OpPreserve = "preserve"

// PreserveAttrs gives every entry of the tree at to (a copy of from, as Copy
// made it) the owner, group, mode, access and modification times and
// extended attributes of its counterpart in from (cp -p with xattrs). Entries
// of to that from lacks are left alone. A non-directory's setuid and setgid
// bits are copied only with Options.AllowSetid (setid.go). An owner the daemon may not give
// (EPERM when not root) is skipped, as cp -p does. Times are set children
// first, so a directory keeps its own. Each entry changed is one chmod event.
func (s *Sandbox) PreserveAttrs(ctx context.Context, from, to string) error {
	fa, ta, err := s.cleanBoth(from, to)
	if err != nil {
		return err
	}
	rels := []string{""}
	if st, err := s.root.lstat(fa); err != nil {
		return PathErr(OpPreserve, fa, err)
	} else if st.IsDir() {
		err := s.Walk(ctx, fa, WalkOptions{}, func(e WalkEntry) error {
			rels = append(rels, e.Rel)
			return nil
		})
		if err != nil {
			return err
		}
	}
	claim := s.watch.Claim(ta)
	defer claim.Done()
	// Walk is depth first, parents before children: go backwards so that a
	// directory's times are set after its entries are touched.
	for i := len(rels) - 1; i >= 0; i-- {
		sp, dp := fa, ta
		if rels[i] != "" {
			sp, dp = fa+"/"+rels[i], ta+"/"+rels[i]
		}
		if err := s.preserveOne(sp, dp); err != nil {
			if err == unix.ENOENT {
				continue // gone from one side since the walk
			}
			return PathErr(OpPreserve, dp, err)
		}
	}
	for _, r := range rels {
		dp := ta
		if r != "" {
			dp = ta + "/" + r
		}
		s.Tell(ctx, journal.Chmod, dp, "", false)
	}
	return nil
}

func (s *Sandbox) preserveOne(sp, dp string) error {
	sfd, err := s.root.openPath(sp, false)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	dfd, err := s.root.openPath(dp, false)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var st, dt unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil {
		return err
	}
	if err := unix.Fstat(dfd, &dt); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != dt.Mode&unix.S_IFMT {
		return nil // not the counterpart any more
	}
	link := st.Mode&unix.S_IFMT == unix.S_IFLNK
	uid, gid := int(st.Uid), int(st.Gid)
	a := SetAttr{Uid: &uid, Gid: &gid}
	if !link {
		mode := st.Mode & 0o7777
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			mode = s.KeptMode(mode) // setid.go
		}
		a.Mode = &mode
		if err := copyXattrs(sfd, dfd); err != nil {
			return err
		}
	}
	atime, mtime := st.Atim, st.Mtim
	a.Atime, a.Mtime = &atime, &mtime
	return setattrFd(dfd, a)
}

// copyXattrs copies the extended attributes of the file sfd to dfd (both
// O_PATH handles on non-symlinks). A filesystem without xattrs is fine; a
// namespace the daemon may not write (trusted.*, security.* when not root)
// is skipped, and so is an attribute removed since the list was read. A
// value that grows between reads is read whole (safeat.XattrValue).
func copyXattrs(sfd, dfd int) error {
	names, err := safeat.XattrNames(sfd)
	if err == unix.EOPNOTSUPP || err == unix.ENOTSUP {
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range names {
		if name == "" || reservedXattr(name) {
			continue // a copy of the root is not the root
		}
		val, err := safeat.XattrValue(sfd, name)
		if err != nil {
			continue
		}
		if err := safeat.Setxattr(dfd, name, val, 0); err != nil {
			if err == unix.EPERM || err == unix.EACCES || err == unix.EOPNOTSUPP {
				continue
			}
			return err
		}
	}
	return nil
}
