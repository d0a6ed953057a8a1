package core

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/internal/safeat"
)

// TarMode says how an archive meets an existing destination.
type TarMode int

const (
	// TarMerge writes the archive's entries into the destination, replacing
	// files and symlinks of the same name and keeping everything else.
	TarMerge TarMode = iota
	// TarRename builds the tree beside the destination and renames it in;
	// an existing destination is EEXIST.
	TarRename
)

// TarOptions shape an ExtractTar.
type TarOptions struct {
	Mode     TarMode
	MaxPaths int // cap on len(TarResult.Paths); 0 = no cap
}

// TarResult reports an extraction.
type TarResult struct {
	Paths     []string // API paths of the extracted entries, in archive order
	Truncated bool     // Paths stopped at MaxPaths
	Entries   int      // entries extracted
	Bytes     int64    // file bytes extracted
}

// TarEntryError says why an archive was refused. It unwraps to its errno:
// EINVAL for a hostile or malformed entry, EFBIG for a limit.
type TarEntryError struct {
	Entry  string
	Reason string
	Errno  unix.Errno
}

func (e *TarEntryError) Error() string {
	if e.Entry == "" {
		return e.Reason
	}
	return "tar entry " + quote(e.Entry) + ": " + e.Reason
}

func (e *TarEntryError) Unwrap() error { return e.Errno }

func refuse(entry, reason string) error {
	return &TarEntryError{Entry: entry, Reason: reason, Errno: unix.EINVAL}
}

// ExtractTar extracts the uncompressed tar stream r into the directory dest,
// creating it (and its parents) if missing. The archive is staged in a
// ".sandfs-<random>.part" directory in dest, or beside it in the nearest
// existing ancestor when dest is missing, and each entry is checked as it
// comes: a name that is absolute or has a ".." component, a device node,
// FIFO or other special type, a symlink that is absolute or climbs out of
// dest, a hard link to anything but an earlier entry, or an entry that would
// be written through a symlink refuses the whole archive, and the staging
// directory goes with nothing written to dest. A valid archive then moves
// in: by one rename when dest did not exist, else merged entry by entry.
// File modes keep their permission bits (no setuid, setgid or sticky), and
// modification times are kept; owners are not. A file entry whose declared
// size is over what is left of Limits.TarBytes is EFBIG before a byte of it
// is written; a GNU sparse entry is written with its holes (tarsparse.go).
func (s *Sandbox) ExtractTar(ctx context.Context, dest string, r io.Reader, o TarOptions) (TarResult, error) {
	da, err := s.Clean(dest)
	if err != nil {
		return TarResult{}, err
	}
	fail := func(err error) (TarResult, error) {
		var te *TarEntryError
		if errors.As(err, &te) {
			return TarResult{}, &os.PathError{Op: OpUntar, Path: da, Err: te}
		}
		return TarResult{}, pathErr(OpUntar, da, err)
	}

	// Where to stage: in dest when it exists, else in its nearest existing
	// ancestor (same filesystem, so the final move is a rename).
	base := da
	destExists := false
	for {
		info, err := s.Stat(ctx, base)
		if err == nil {
			if !info.IsDir() {
				return fail(unix.ENOTDIR)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) || base == "/" {
			return fail(err)
		}
		base, _ = split(base)
	}
	destExists = base == da
	if destExists && o.Mode == TarRename {
		return fail(unix.EEXIST)
	}
	basefd, err := s.openDir(base)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(basefd)
	stage := tempName()
	claim := s.Claim(da, join(base, stage))
	defer claim.Done()
	// The stage is held by its descriptor from its mkdir on, and every
	// change to it (its mode when it becomes dest) goes through that: whoever
	// owns base may rename it and put a symlink in its place.
	stagefd, err := mkdirOpen(basefd, stage)
	if err != nil {
		unix.Unlinkat(basefd, stage, unix.AT_REMOVEDIR) // only if empty
		return fail(err)
	}
	defer func() {
		unix.Close(stagefd)
		removeAllAt(context.WithoutCancel(ctx), basefd, stage)
	}()

	x := extractor{dest: da, stagefd: stagefd, limits: s.limits, files: map[string]bool{}, isDir: map[string]bool{}, isLink: map[string]bool{}}
	names, err := x.run(ctx, r)
	if err != nil {
		return fail(err)
	}

	// Move the staged tree in.
	madeDest := false
	if !destExists {
		dir, name := split(da)
		if err := s.mkdirAll(ctx, dir, 0o755); err != nil {
			return TarResult{}, err
		}
		dirfd, err := s.openDir(dir)
		if err != nil {
			return fail(err)
		}
		safeat.Chmod(stagefd, 0o755)
		err = renameNoReplace(basefd, stage, dirfd, name)
		unix.Close(dirfd)
		if err == unix.EEXIST && o.Mode == TarMerge {
			destExists = true // someone made it meanwhile: merge into it
		} else if err != nil {
			return fail(err)
		} else {
			madeDest = true
		}
	}
	if destExists {
		destfd, err := s.openDir(da)
		if err != nil {
			return fail(err)
		}
		err = mergeCheck(stagefd, destfd)
		if err == nil {
			err = merge(ctx, stagefd, destfd)
		}
		unix.Close(destfd)
		if err != nil {
			return fail(err)
		}
	}

	res := TarResult{Entries: len(names), Bytes: x.bytes}
	if madeDest {
		s.emit(ctx, journal.Create, da, "", true)
	}
	for _, n := range x.created {
		p := join(da, n)
		isDir := x.isDir[n]
		s.emit(ctx, journal.Create, p, "", isDir)
		if !isDir && !x.isLink[n] {
			s.emit(ctx, journal.Write, p, "", false)
		}
	}
	for _, n := range names {
		p := join(da, n)
		if o.MaxPaths > 0 && len(res.Paths) >= o.MaxPaths {
			res.Truncated = true
			break
		}
		res.Paths = append(res.Paths, p)
	}
	return res, nil
}

// extractor stages one archive under stagefd.
type extractor struct {
	dest    string // API path of the destination, for the length of entries' paths
	stagefd int
	limits  Limits
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
		if len(join(x.dest, name)) >= unix.PathMax {
			// Every other route refuses such a path: the archive may not
			// make one either.
			return nil, &TarEntryError{Entry: hdr.Name, Reason: fmt.Sprintf("path in the sandbox is longer than %d bytes", unix.PathMax-1), Errno: unix.ENAMETOOLONG}
		}
		if len(names) >= x.limits.TarEntries {
			return nil, &TarEntryError{Entry: hdr.Name, Reason: "archive has more than the allowed entries", Errno: unix.EFBIG}
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
// stage, one component at a time with O_NOFOLLOW.
func (x *extractor) openStaged(name string) (int, error) {
	fd, err := unix.Dup(x.stagefd)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(name, "/") {
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// entryName validates and cleans an archive member's name.
func entryName(n string) (string, error) {
	switch {
	case strings.IndexByte(n, 0) >= 0:
		return "", refuse(n, "name has a NUL byte")
	case strings.HasPrefix(n, "/"):
		return "", refuse(n, "absolute name")
	}
	for _, c := range strings.Split(n, "/") {
		if c == ".." {
			return "", refuse(n, "name climbs out with ..")
		}
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
		return refuse(hdr.Name, "unsupported entry type "+quote(string(hdr.Typeflag)))
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
			return refuse(hdr.Name, "hard link to "+quote(hdr.Linkname)+", which is not an earlier file of this archive")
		}
		if err := unix.Linkat(x.stagefd, target, parent, base, 0); err != nil {
			return err
		}
	default: // regular file, sparse or not
		// Refused on its declared size before a byte is written: a sparse
		// entry of a few KiB may declare a terabyte (tarsparse.go).
		budget := x.limits.TarBytes - x.bytes
		if hdr.Size > budget {
			return &TarEntryError{Entry: hdr.Name, Errno: unix.EFBIG,
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
			err = &TarEntryError{Entry: hdr.Name, Reason: "archive extracts to more than the allowed bytes", Errno: unix.EFBIG}
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
		return -1, refuse(entry, "would be written through a symlink or file "+quote(c))
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
		return refuse(entry, "symlink to an absolute path "+quote(target))
	}
	depth := strings.Count(name, "/") // directories above the link
	leading := true
	for _, c := range strings.Split(target, "/") {
		switch {
		case c == "..":
			if !leading {
				return refuse(entry, "symlink target "+quote(target)+" has .. after a name")
			}
			depth--
			if depth < 0 {
				return refuse(entry, "symlink target "+quote(target)+" leaves the destination")
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
	dir := os.NewFile(uintptr(fd), ".")
	defer dir.Close()
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := f(e.Name(), e.IsDir()); err != nil {
			return err
		}
	}
	return nil
}
