package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// TreeUsage counts the tree under dir the way a sandbox's quota does
// (core/quota), independently of core, for tests to hold usage to: every
// name but dir itself an entry, each regular file's inode's size once (a
// hard link is an entry and no bytes), nothing followed.
func TreeUsage(dir string) (bytes, entries int64, err error) {
	seen := map[uint64]bool{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		entries++
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if ino := fi.Sys().(*syscall.Stat_t).Ino; fi.Mode().IsRegular() && !seen[ino] {
			seen[ino] = true
			bytes += fi.Size()
		}
		return nil
	})
	return bytes, entries, err
}

// UpperUsage counts an overlay's upper directory the way a fork's quota
// does (core/usage_upper.go): as TreeUsage, but a whiteout (a character
// device 0:0) is no entry, and a metacopy file (trusted.overlay.metacopy)
// an entry of no bytes.
func UpperUsage(dir string) (bytes, entries int64, err error) {
	seen := map[uint64]bool{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode()&os.ModeCharDevice != 0 && st.Rdev == 0 {
			return nil
		}
		entries++
		if !fi.Mode().IsRegular() || seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		if _, err := unix.Lgetxattr(p, "trusted.overlay.metacopy", nil); err == nil {
			return nil
		}
		bytes += fi.Size()
		return nil
	})
	return bytes, entries, err
}
