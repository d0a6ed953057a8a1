package tar

import (
	"context"

	"golang.org/x/sys/unix"

	"sandfs/core/du"
	"sandfs/core/quota"
	"sandfs/internal/dirent"
	"sandfs/internal/safeat"
)

// mergeCheck walks the staged tree against dest and refuses, before anything
// moves, a staged non-directory that would replace an existing directory.
func mergeCheck(src, dst int) error {
	return forEachEntry(src, func(name string, srcIsDir bool) error {
		var st unix.Stat_t
		if unix.Fstatat(dst, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return nil
		}
		dstIsDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		switch {
		case !srcIsDir && dstIsDir:
			return refuse(name, "would replace an existing directory")
		case srcIsDir && dstIsDir:
			return withDirs(src, dst, name, mergeCheck)
		}
		return nil
	})
}

// merge moves the staged tree into dest: a name missing in dest moves by one
// rename (a whole subtree at once); a directory present in both is merged;
// a file or symlink replaces what dest had (a symlink in dest is replaced,
// never followed).
func merge(ctx context.Context, src, dst int) error {
	return forEachEntry(src, func(name string, srcIsDir bool) error {
		var st unix.Stat_t
		err := unix.Fstatat(dst, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		dstIsDir := err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
		switch {
		case err != nil:
			return unix.Renameat(src, name, dst, name)
		case srcIsDir && dstIsDir:
			// The mode goes through the descriptor of the directory merged
			// into: whoever owns dst may swap the name for a symlink
			// meanwhile.
			return withDirs(src, dst, name, func(s, d int) error {
				if err := merge(ctx, s, d); err != nil {
					return err
				}
				var sst unix.Stat_t
				if unix.Fstat(s, &sst) == nil {
					safeat.Chmod(d, sst.Mode&0o777)
				}
				return nil
			})
		case srcIsDir:
			if err := unix.Unlinkat(dst, name, 0); err != nil {
				return err
			}
			return unix.Renameat(src, name, dst, name)
		default:
			return unix.Renameat(src, name, dst, name)
		}
	})
}

func withDirs(src, dst int, name string, f func(s, d int) error) error {
	s, err := unix.Openat(src, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	d, err := unix.Openat(dst, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	return f(s, d)
}

// forEachEntry calls f for each entry of the directory dirfd (an O_PATH fd).
func forEachEntry(dirfd int, f func(name string, isDir bool) error) error {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	ents, err := dirent.All(fd)
	unix.Close(fd)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := f(e.Name, e.IsDir()); err != nil {
			return err
		}
	}
	return nil
}

// mergeUsage is what merging the staged tree src into dst adds to usage
// (negative: frees), counted as merge moves it: a name missing in dst adds
// its subtree; a file replacing a file adds the difference; a directory
// replacing a file adds its subtree less the file; directories in both
// are merged.
func mergeUsage(m *du.Measurer, src, dst int) (quota.Count, error) {
	var u quota.Count
	err := forEachEntry(src, func(name string, srcIsDir bool) error {
		var st unix.Stat_t
		err := unix.Fstatat(dst, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		dstIsDir := err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
		if err == nil && srcIsDir && dstIsDir {
			return withDirs(src, dst, name, func(s, d int) error {
				in, err := mergeUsage(m, s, d)
				u.Add(in)
				return err
			})
		}
		c, err2 := m.Entry(src, name, nil)
		if err2 != nil {
			return err2
		}
		u.Add(c)
		if err == nil {
			u.Entries--
			if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink <= 1 {
				u.Bytes -= st.Size
			}
		}
		return nil
	})
	return u, err
}

// dupDir opens the directory fd (O_PATH) again for reading its entries
// (-1 on failure, which the reader then reports).
func dupDir(fd int) int {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return d
}
