package tar

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/apipath"
	"sandfs/core/du"
	"sandfs/core/journal"
	"sandfs/core/quota"
	"sandfs/internal/safeat"
)

// Mode says how an archive meets an existing destination.
type Mode int

const (
	// Merge writes the archive's entries into the destination, replacing
	// files and symlinks of the same name and keeping everything else.
	Merge Mode = iota
	// Rename builds the tree beside the destination and renames it in;
	// an existing destination is EEXIST.
	Rename
)

// Options shape an Extract.
type Options struct {
	Mode     Mode
	MaxPaths int // cap on len(Result.Paths); 0 = no cap
}

// Result reports an extraction.
type Result struct {
	Paths     []string // API paths of the extracted entries, in archive order
	Truncated bool     // Paths stopped at MaxPaths
	Entries   int      // entries extracted
	Bytes     int64    // file bytes extracted
}

// EntryError says why an archive was refused. It unwraps to its errno:
// EINVAL for a hostile or malformed entry, EFBIG for a limit.
type EntryError struct {
	Entry  string
	Reason string
	Errno  unix.Errno
}

func (e *EntryError) Error() string {
	if e.Entry == "" {
		return e.Reason
	}
	return "tar entry " + strconv.Quote(e.Entry) + ": " + e.Reason
}

func (e *EntryError) Unwrap() error { return e.Errno }

func refuse(entry, reason string) error {
	return &EntryError{Entry: entry, Reason: reason, Errno: unix.EINVAL}
}

// Extract extracts the uncompressed tar stream r into the directory dest,
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
// size is over what is left of core.Limits.TarBytes is EFBIG before a byte of it
// is written; a GNU sparse entry is written with its holes (tarsparse.go).
func Extract(ctx context.Context, s *core.Sandbox, dest string, r io.Reader, o Options) (Result, error) {
	da, err := s.Clean(dest)
	if err != nil {
		return Result{}, err
	}
	fail := func(err error) (Result, error) {
		var te *EntryError
		if errors.As(err, &te) {
			return Result{}, &os.PathError{Op: OpUntar, Path: da, Err: te}
		}
		return Result{}, core.PathErr(OpUntar, da, err)
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
		base, _ = apipath.Split(base)
	}
	destExists = base == da
	if destExists && o.Mode == Rename {
		return fail(unix.EEXIST)
	}
	basefd, err := s.Root().OpenDir(base)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(basefd)
	stage := core.TempName()
	claim := s.Watch().Claim(da, apipath.Child(base, stage))
	defer claim.Done()
	// The stage is held by its descriptor from its mkdir on, and every
	// change to it (its mode when it becomes dest) goes through that: whoever
	// owns base may rename it and put a symlink in its place.
	stagefd, err := core.MkdirOpen(basefd, stage)
	if err != nil {
		unix.Unlinkat(basefd, stage, unix.AT_REMOVEDIR) // only if empty
		return fail(err)
	}
	defer func() {
		unix.Close(stagefd)
		core.RemoveAllAt(context.WithoutCancel(ctx), basefd, stage)
	}()

	x := extractor{dest: da, stagefd: stagefd, limits: s.Limits(), files: map[string]bool{}, isDir: map[string]bool{}, isLink: map[string]bool{}}
	names, err := x.run(ctx, r)
	if err != nil {
		return fail(err)
	}

	// The archive's usage, reserved before it moves in (core/quota): all of
	// the stage when it becomes dest, else what the merge adds beyond what
	// it replaces.
	uop := s.Quota().Begin()
	var grew quota.Count
	moving, merged := false, false
	defer func() {
		if !merged {
			grew = quota.Count{}
			if moving {
				s.Quota().OutsideChange() // a merge cut short: a scan counts what moved
			}
		}
		uop.End(grew.Bytes, grew.Entries)
	}()
	if destExists {
		destfd, err := s.Root().OpenDir(da)
		if err != nil {
			return fail(err)
		}
		grew, err = mergeUsage(du.NewMeasurer(ctx), stagefd, destfd)
		unix.Close(destfd)
		if err != nil {
			return fail(err)
		}
	} else {
		grew, _ = du.NewMeasurer(ctx).Dir(dupDir(stagefd))
		grew.Entries++ // the stage itself, as dest
	}
	if err := uop.Reserve(OpUntar, da, grew.Bytes, grew.Entries); err != nil {
		return Result{}, err
	}
	moving = true

	// Move the staged tree in.
	madeDest := false
	if !destExists {
		dir, name := apipath.Split(da)
		if err := s.MkdirAll(ctx, dir, 0o755); err != nil {
			return Result{}, err
		}
		dirfd, err := s.Root().OpenDir(dir)
		if err != nil {
			return fail(err)
		}
		safeat.Chmod(stagefd, 0o755)
		err = core.RenameNoReplace(basefd, stage, dirfd, name)
		unix.Close(dirfd)
		if err == unix.EEXIST && o.Mode == Merge {
			destExists = true // someone made it meanwhile: merge into it
		} else if err != nil {
			return fail(err)
		} else {
			madeDest = true
		}
	}
	if destExists {
		destfd, err := s.Root().OpenDir(da)
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

	merged = true
	res := Result{Entries: len(names), Bytes: x.bytes}
	if madeDest {
		s.Tell(ctx, journal.Create, da, "", true)
	}
	for _, n := range x.created {
		p := apipath.Child(da, n)
		isDir := x.isDir[n]
		s.Tell(ctx, journal.Create, p, "", isDir)
		if !isDir && !x.isLink[n] {
			s.Tell(ctx, journal.Write, p, "", false)
		}
	}
	for _, n := range names {
		p := apipath.Child(da, n)
		if o.MaxPaths > 0 && len(res.Paths) >= o.MaxPaths {
			res.Truncated = true
			break
		}
		res.Paths = append(res.Paths, p)
	}
	return res, nil
}
