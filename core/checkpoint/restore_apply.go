package checkpoint

import (
	"context"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/apipath"
	"sandfs/core/journal"
	"sandfs/internal/safeat"
)

// restorer makes a plan's steps. Every name is reached by strictParent
// (no symlink followed on the way) and changed by an *at call or through a
// descriptor; before each change the name's stat identity is compared with
// what the plan saw, and a name that changed meanwhile is skipped.
type restorer struct {
	s     *core.Sandbox
	h     *cpStore
	ctx   context.Context // stamped with the restore's actor
	claim *core.Claim
	res   *RestoreResult
	bad   map[string]bool // paths whose step failed: what is beneath is skipped
}

// restoreBatch is how many files are staged (temp written, held open by
// their directory fd) before one syncfs and their renames.
const restoreBatch = 256

func (r *restorer) apply(p *restorePlan) {
	r.bad = map[string]bool{}
	r.res.Skipped = append(r.res.Skipped, p.skipped...)
	for _, st := range p.remove {
		r.remove(st)
	}
	for _, st := range p.mkdir {
		r.mkdir(st)
	}
	for i := 0; i < len(p.write); i += restoreBatch {
		batch := p.write[i:min(i+restoreBatch, len(p.write))]
		staged := make([]*staged, 0, len(batch))
		for _, st := range batch {
			if sg := r.stage(st); sg != nil {
				staged = append(staged, sg)
			}
		}
		_ = r.s.Root().Sync() // the temps' bytes durable before any rename names them
		for _, sg := range staged {
			r.commit(sg)
		}
	}
	for _, st := range p.dirs {
		r.dirAttrs(st)
	}
}

// skip records ap as not restored.
func (r *restorer) skip(ap, reason string) {
	r.bad[ap] = true
	r.res.Skipped = append(r.res.Skipped, RestoreSkip{Path: ap, Reason: reason})
}

func (r *restorer) fail(ap string, err error) { r.skip(ap, core.PathErr("restore", ap, err).Error()) }

// blocked reports (and records) a step beneath a path that failed.
func (r *restorer) blocked(ap string) bool {
	b := false
	ancestors(ap, func(d string) bool { b = r.bad[d]; return !b })
	if b {
		r.bad[ap] = true
	}
	return b
}

// parent is the directory of a step's path (strictParent), or false when
// the step is not made: beneath a path that failed, or unreachable (told).
func (r *restorer) parent(ap string) (int, string, bool) {
	if r.blocked(ap) {
		return -1, "", false
	}
	dirfd, name, err := r.s.Root().StrictParent(ap)
	if err != nil {
		r.fail(ap, err)
		return -1, "", false
	}
	return dirfd, name, true
}

// unchanged reports whether name in dirfd is what the plan saw: c (inC),
// or nothing.
func unchanged(dirfd int, name string, c cpEntry, inC bool) bool {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if !inC {
		return err == unix.ENOENT
	}
	if err != nil || st.Dev != c.Dev || st.Ino != c.Ino {
		return false
	}
	switch c.Kind {
	case kindFile:
		return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == c.Size && st.Mtim.Nano() == c.Mtime && st.Ctim.Nano() == c.Ctime
	case kindLink:
		return st.Mode&unix.S_IFMT == unix.S_IFLNK
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR
}

func (r *restorer) remove(st step) {
	dirfd, name, ok := r.parent(st.ap)
	if !ok {
		return
	}
	defer unix.Close(dirfd)
	var err error
	if !unchanged(dirfd, name, st.c, true) {
		r.skip(st.ap, skipRaced)
		return
	}
	if st.c.Kind == kindDir {
		err = core.RemoveAllAt(r.ctx, dirfd, name)
	} else {
		err = unix.Unlinkat(dirfd, name, 0)
	}
	if err != nil {
		r.fail(st.ap, err)
		return
	}
	if !st.inT {
		r.res.Removed = append(r.res.Removed, st.ap)
	}
	r.s.Tell(r.ctx, journal.Remove, st.ap, "", st.c.Kind == kindDir)
}

func (r *restorer) mkdir(st step) {
	dirfd, name, ok := r.parent(st.ap)
	if !ok {
		return
	}
	defer unix.Close(dirfd)
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil {
		if err == unix.EEXIST {
			r.skip(st.ap, skipRaced)
		} else {
			r.fail(st.ap, err)
		}
		return
	}
	r.s.Tell(r.ctx, journal.Create, st.ap, "", true)
}

// staged is a file or symlink written to a temp beside its target,
// waiting for its rename (or, attrs, only the step).
type staged struct {
	st    step
	dirfd int
	name  string
	tmp   string // "" for an attrs step
}

// stage writes the new file or symlink to a temp beside the target, with
// the checkpoint's mode, owner and mtime.
func (r *restorer) stage(st step) *staged {
	dirfd, name, ok := r.parent(st.ap)
	if !ok {
		return nil
	}
	var err error
	sg := &staged{st: st, dirfd: dirfd, name: name}
	if st.attrs {
		return sg
	}
	dir, _ := apipath.Split(st.ap)
	sg.tmp = core.TempName()
	r.claim.Add(apipath.Child(dir, sg.tmp))
	if st.t.Kind == kindLink {
		err = r.stageLink(sg)
	} else {
		err = r.stageFile(sg)
	}
	if err != nil {
		unix.Unlinkat(dirfd, sg.tmp, 0)
		unix.Close(dirfd)
		r.fail(st.ap, err)
		return nil
	}
	return sg
}

func (r *restorer) stageLink(sg *staged) error {
	t := sg.st.t
	if err := unix.Symlinkat(t.Target, sg.dirfd, sg.tmp); err != nil {
		return err
	}
	_ = safeat.LchownAt(sg.dirfd, sg.tmp, int(t.Uid), int(t.Gid)) // as root; others keep their own
	return safeat.LutimesAt(sg.dirfd, sg.tmp, times(t.Mtime))
}

func (r *restorer) stageFile(sg *staged) error {
	t := sg.st.t
	fd, err := unix.Openat(sg.dirfd, sg.tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, err := r.h.store.CopyTo(fd, t.Hash); err != nil {
		return err
	}
	return setFileAttrs(r.s, fd, t)
}

// setFileAttrs gives the file fd the checkpoint's owner (where the daemon
// may), mode (set-id bits only where allowed) and mtime.
func setFileAttrs(s *core.Sandbox, fd int, t cpEntry) error {
	_ = safeat.Chown(fd, int(t.Uid), int(t.Gid))
	mode := t.Perm
	if t.Kind == kindFile {
		mode = s.KeptMode(mode)
	}
	if t.Kind != kindLink {
		if err := safeat.Chmod(fd, mode); err != nil {
			return err
		}
	}
	return safeat.Utimes(fd, times(t.Mtime))
}

func times(mtime int64) []unix.Timespec {
	return []unix.Timespec{{Sec: 0, Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime)}
}

// commit renames a staged temp over its target if the target is still
// what the plan saw (an attrs step sets them on the file itself).
func (r *restorer) commit(sg *staged) {
	defer unix.Close(sg.dirfd)
	st := sg.st
	if !unchanged(sg.dirfd, sg.name, st.c, st.inC) {
		if sg.tmp != "" {
			unix.Unlinkat(sg.dirfd, sg.tmp, 0)
		}
		r.skip(st.ap, skipRaced)
		return
	}
	if sg.tmp == "" {
		fd, err := unix.Openat(sg.dirfd, sg.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			err = setFileAttrs(r.s, fd, st.t)
			unix.Close(fd)
		}
		if err != nil {
			r.fail(st.ap, err)
			return
		}
		r.res.Written = append(r.res.Written, st.ap)
		r.s.Tell(r.ctx, journal.Chmod, st.ap, "", false)
		return
	}
	if err := unix.Renameat(sg.dirfd, sg.tmp, sg.dirfd, sg.name); err != nil {
		unix.Unlinkat(sg.dirfd, sg.tmp, 0)
		r.fail(st.ap, err)
		return
	}
	r.res.Written = append(r.res.Written, st.ap)
	if !st.inC || st.t.Kind == kindLink {
		r.s.Tell(r.ctx, journal.Create, st.ap, "", false)
	}
	if st.t.Kind == kindFile {
		r.s.Tell(r.ctx, journal.Write, st.ap, "", false)
	}
}

// dirAttrs gives a directory the checkpoint's mode, owner and mtime (last,
// deepest first: what was made in it changed its mtime).
func (r *restorer) dirAttrs(st step) {
	dirfd, name, ok := r.parent(st.ap)
	if !ok {
		return
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		r.fail(st.ap, err)
		return
	}
	defer unix.Close(fd)
	if err := setFileAttrs(r.s, fd, st.t); err != nil {
		r.fail(st.ap, err)
		return
	}
	if st.listed {
		r.res.Written = append(r.res.Written, st.ap)
		r.s.Tell(r.ctx, journal.Chmod, st.ap, "", true)
	}
}
