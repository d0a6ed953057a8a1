package tar

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/apipath"
	"sandfs/internal/safeat"
	"sandfs/internal/xdev"
)

// extractor stages one archive under stagefd.
type extractor struct {
	dest    string // API path of the destination, for the length of entries' paths
	stagefd int
	limits  core.Limits
	bytes   int64
	files   map[string]bool // non-directories extracted so far, for hard links
	isDir   map[string]bool
	isLink  map[string]bool // symlinks
	created []string        // every name made, implicit parents included, in order
	dirs    []dirMeta
}

type dirMeta struct {
	name string
	mode uint32
	hdr  *tar.Header
}

func (x *extractor) run(ctx context.Context, r io.Reader) ([]string, error) {
	tr := tar.NewReader(r)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, refuse("", "malformed archive: "+err.Error())
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return nil, err
		}
		if name == "" {
			continue // "." or "./": the destination itself
		}
		if len(apipath.Child(x.dest, name)) >= unix.PathMax {
			// Every other route refuses such a path: the archive may not
			// make one either.
			return nil, &EntryError{Entry: hdr.Name, Reason: fmt.Sprintf("path in the sandbox is longer than %d bytes", unix.PathMax-1), Errno: unix.ENAMETOOLONG}
		}
		if len(names) >= x.limits.TarEntries {
			return nil, &EntryError{Entry: hdr.Name, Reason: "archive has more than the allowed entries", Errno: unix.EFBIG}
		}
		if err := x.entry(tr, hdr, name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	// Directory modes last, deepest first, so a read-only directory does not
	// stop its own entries from being written.
	// Each is opened anew, one component at a time and never through a
	// symlink, and changed through its descriptor.
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		fd, err := x.openStaged(d.name)
		if err != nil {
			continue // not the directory staged any more: not ours to change
		}
		safeat.Chmod(fd, d.mode)
		if ts, ok := tarTimes(d.hdr); ok {
			safeat.Utimes(fd, ts)
		}
		unix.Close(fd)
	}
	return names, nil
}

// openStaged opens (O_PATH) the staged directory name, a path below the
// stage, following no symlink (core.OpenBelow).
func (x *extractor) openStaged(name string) (int, error) { return xdev.OpenBelow(x.stagefd, name) }

// entryName validates and cleans an archive member's name.
func entryName(n string) (string, error) {
	if strings.HasPrefix(n, "/") {
		return "", refuse(n, "absolute name")
	}
	if why := apipath.Check(n, true); why != apipath.OK && why != apipath.Empty {
		return "", refuse(n, "member name "+string(why))
	}
	c := path.Clean(n)
	if c == "." {
		return "", nil
	}
	return c, nil
}

func (x *extractor) entry(tr *tar.Reader, hdr *tar.Header, name string) error {
	dir, base := path.Split(name)
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeRegA, tar.TypeGNUSparse, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
	case tar.TypeChar, tar.TypeBlock:
		return refuse(hdr.Name, "device nodes are not allowed")
	case tar.TypeFifo:
		return refuse(hdr.Name, "FIFOs are not allowed")
	default:
		return refuse(hdr.Name, "unsupported entry type "+strconv.Quote(string(hdr.Typeflag)))
	}
	parent, err := x.parentDir(hdr.Name, dir)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	perm := uint32(hdr.Mode) & 0o777

	// A later entry of the same name replaces an earlier one, as tar does;
	// a directory stays and is merged into.
	if hdr.Typeflag != tar.TypeDir {
		if err := unix.Unlinkat(parent, base, 0); err != nil && err != unix.ENOENT {
			return refuse(hdr.Name, "replaces a directory")
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		switch err := unix.Mkdirat(parent, base, 0o700); err {
		case nil:
			x.created = append(x.created, name)
		case unix.EEXIST:
		default:
			return err
		}
		fd, err := openStagedDir(parent, base, hdr.Name)
		if err != nil {
			return err
		}
		unix.Close(fd)
		x.dirs = append(x.dirs, dirMeta{name: name, mode: perm, hdr: hdr})
		x.isDir[name] = true
		return nil
	case tar.TypeSymlink:
		if err := checkSymlink(hdr.Name, name, hdr.Linkname); err != nil {
			return err
		}
		if err := unix.Symlinkat(hdr.Linkname, parent, base); err != nil {
			return err
		}
		x.isLink[name] = true
	case tar.TypeLink:
		target, err := entryName(hdr.Linkname)
		if err != nil || target == "" || !x.files[target] {
			return refuse(hdr.Name, "hard link to "+strconv.Quote(hdr.Linkname)+", which is not an earlier file of this archive")
		}
		if err := unix.Linkat(x.stagefd, target, parent, base, 0); err != nil {
			return err
		}
	default: // regular file, sparse or not
		// Refused on its declared size before a byte is written: a sparse
		// entry of a few KiB may declare a terabyte (tarsparse.go).
		budget := x.limits.TarBytes - x.bytes
		if hdr.Size > budget {
			return &EntryError{Entry: hdr.Name, Errno: unix.EFBIG,
				Reason: fmt.Sprintf("declares %d bytes, more than the %d left of the archive's limit of %d extracted bytes", hdr.Size, budget, x.limits.TarBytes)}
		}
		fd, err := unix.Openat(parent, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), name)
		var n int64
		if isSparse(hdr) {
			n, err = copyHoles(f, io.LimitReader(tr, budget+1))
		} else {
			n, err = io.Copy(f, io.LimitReader(tr, budget+1))
		}
		x.bytes += n
		if err == nil && n > budget {
			err = &EntryError{Entry: hdr.Name, Reason: "archive extracts to more than the allowed bytes", Errno: unix.EFBIG}
		}
		if err == nil {
			err = unix.Fchmod(fd, perm)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return refuse(hdr.Name, "archive ends inside this file")
			}
			return err
		}
	}
	x.files[name] = true
	x.created = append(x.created, name)
	setTimes(parent, base, hdr)
	return nil
}

// parentDir opens (creating as needed) the staged directory dir, one
// component at a time, refusing to pass through anything that is not a
// directory made by this archive: an entry is never written through a
// symlink.
func (x *extractor) parentDir(entry, dir string) (int, error) {
	fd, err := unix.Dup(x.stagefd)
	if err != nil {
		return -1, err
	}
	prefix := ""
	for _, c := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if c == "" {
			continue
		}
		prefix = path.Join(prefix, c)
		switch err := unix.Mkdirat(fd, c, 0o755); err {
		case nil:
			x.created = append(x.created, prefix)
			x.isDir[prefix] = true
		case unix.EEXIST:
		default:
			unix.Close(fd)
			return -1, err
		}
		next, err := openStagedDir(fd, c, entry)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

func openStagedDir(parent int, c, entry string) (int, error) {
	fd, err := unix.Openat(parent, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch err {
	case nil:
		return fd, nil
	case unix.ELOOP, unix.ENOTDIR:
		return -1, refuse(entry, "would be written through a symlink or file "+strconv.Quote(c))
	}
	return -1, err
}

// checkSymlink refuses a symlink whose target is absolute or leaves the
// destination. ".." may only lead the target (it then climbs real staged
// directories, at most as deep as the link sits); a ".." after a name could
// climb out of a directory reached through another symlink.
func checkSymlink(entry, name, target string) error {
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return refuse(entry, "symlink with an empty or NUL target")
	}
	if strings.HasPrefix(target, "/") {
		return refuse(entry, "symlink to an absolute path "+strconv.Quote(target))
	}
	depth := strings.Count(name, "/") // directories above the link
	leading := true
	for _, c := range strings.Split(target, "/") {
		switch {
		case c == "..":
			if !leading {
				return refuse(entry, "symlink target "+strconv.Quote(target)+" has .. after a name")
			}
			depth--
			if depth < 0 {
				return refuse(entry, "symlink target "+strconv.Quote(target)+" leaves the destination")
			}
		case c == "" || c == ".":
		default:
			leading = false
		}
	}
	return nil
}

// setTimes gives name (one component) in dirfd the entry's modification
// time; a symlink is changed itself.
func setTimes(dirfd int, name string, hdr *tar.Header) {
	if ts, ok := tarTimes(hdr); ok {
		safeat.LutimesAt(dirfd, name, ts)
	}
}

// tarTimes is the atime and mtime an entry gives (its mtime for both).
func tarTimes(hdr *tar.Header) ([]unix.Timespec, bool) {
	if hdr.ModTime.IsZero() {
		return nil, false
	}
	t := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	return []unix.Timespec{t, t}, true
}
