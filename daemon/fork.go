package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/internal/overlay"
	"sandfs/internal/statedir"
	"sandfs/rest"
)

// A fork is a sandbox whose root is a kernel overlay (or, where none can
// be, a copy: fork_copy.go): beneath, a
// checkpoint of its parent made whole once (checkpoint.Materialize, its
// contents read from the parent's store); above, the fork's own writes.
// Making one costs the same whatever the tree's size, once the checkpoint
// is made. It lives in STATE/forks/NAME: fork.json (what it was made
// from), upper/ and work/ (the overlay's), root/ (the mountpoint served).
// A fork is served only while root/ is its overlay: after a reboot took
// the mount it is mounted again before it is served, and one that cannot
// be is not served (an empty root/ served would read as every file
// removed). Its usage is its upper's (core.Options.Upper): what it wrote,
// not the tree it shares.

// overlayMagic is statfs's f_type of an overlay (OVERLAYFS_SUPER_MAGIC).
const overlayMagic = 0x794c7630

// forkFile is a fork's record in its directory.
const forkFile = "fork.json"

// forkRecord is fork.json.
type forkRecord struct {
	Name       string    `json:"name"`
	From       string    `json:"from"`
	Checkpoint string    `json:"checkpoint"`
	Lower      string    `json:"lower,omitempty"` // the made tree (in the parent's state); none for a copy
	Data       string    `json:"data,omitempty"`  // the parent's store; none for a copy
	Created    time.Time `json:"created"`
	// Made is set once the fork was served: a record without it is a
	// fork a crash stopped half made, removed at the next start.
	Made bool `json:"made"`
	// Copy: root/ is a copy of the checkpoint's tree, no overlay (no
	// Lower, Data, upper/ or work/); CopyWhy says why (fork_copy.go).
	Copy    bool   `json:"copy,omitempty"`
	CopyWhy string `json:"copyWhy,omitempty"`
}

// forksDir is STATE/forks.
func (h *Host) forksDir() string { return filepath.Join(h.cfg.State, "forks") }

// Fork makes the sandbox name from sandbox from at its checkpoint cp (""
// takes one now) and serves it. It needs from to keep state (its
// checkpoints); where the overlay cannot be (copyWhy, or its mount
// refused) the fork is a copy.
func (h *Host) Fork(ctx context.Context, name, from, cp string, q core.Quota) (rest.ForkMade, error) {
	if err := core.CheckSandboxName(name); err != nil {
		return rest.ForkMade{}, fmt.Errorf("%w: %v", fs.ErrInvalid, err)
	}
	if h.cfg.State == "" || !h.cfg.History {
		return rest.ForkMade{}, fmt.Errorf("forks need the daemon's state (--state, history on): %w", errors.ErrUnsupported)
	}
	if sb, _ := h.Get(name); sb != nil {
		return rest.ForkMade{}, fmt.Errorf("sandbox %s: %w", name, fs.ErrExist)
	}
	parent, _ := h.Get(from)
	if parent == nil {
		return rest.ForkMade{}, fmt.Errorf("sandbox %s: %w", from, errNoParent)
	}
	if cp == "" {
		c, err := checkpoint.Create(ctx, parent, checkpoint.Options{Name: "fork " + name})
		if err != nil {
			return rest.ForkMade{}, fmt.Errorf("checkpoint of %s: %w", from, err)
		}
		cp = c.ID
	}
	lower, why, err := h.lowerOrWhy(ctx, parent, cp)
	if err != nil {
		return rest.ForkMade{}, err
	}
	base := filepath.Join(h.forksDir(), name)
	if err := os.MkdirAll(h.forksDir(), 0o700); err != nil {
		return rest.ForkMade{}, err
	}
	if err := unix.Mkdir(base, 0o700); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return rest.ForkMade{}, fmt.Errorf("sandbox %s: %w (a fork of that name is left in %s)", name, fs.ErrExist, base)
		}
		return rest.ForkMade{}, err
	}
	rec := forkRecord{Name: name, From: from, Checkpoint: cp, Lower: lower.Path, Data: lower.Data, Created: time.Now().UTC(),
		Copy: why != "", CopyWhy: why}
	// A state left under the name (a sandbox of DIR removed by hand while
	// the daemon was down) is another's: archived, so the fork gets a
	// token, a quota and a journal of its own (incarnation.go).
	if _, err := os.Lstat(filepath.Join(statedir.Sandbox(h.cfg.State, name), statedir.TokenFile)); err == nil {
		if err := h.archiveState(name); err != nil {
			unix.Rmdir(base)
			return rest.ForkMade{}, err
		}
	}
	made := false
	defer func() {
		if !made {
			h.dropFork(name)
			_ = removeState(h.cfg.State, name)
			_ = checkpoint.Unpin(parent, cp, name)
		}
	}()
	// The record first, unmade: whatever a crash leaves after it, the
	// next start finds and removes (StartForks).
	if err := writeRecord(base, rec); err != nil {
		return rest.ForkMade{}, err
	}
	// The checkpoint outlives the fork that reads its tree: neither a
	// DELETE nor the schedule's pruning takes it while pinned.
	if err := checkpoint.Pin(parent, cp, name); err != nil {
		return rest.ForkMade{}, err
	}
	if err := h.makeRoot(ctx, parent, &rec); err != nil {
		return rest.ForkMade{}, err
	}
	if q != (core.Quota{}) {
		if err := keepQuota(h.cfg.State, name, q); err != nil {
			return rest.ForkMade{}, err
		}
	}
	// The checkpoint's directories, read before the overlay is served:
	// its kernel watch places itself from them.
	dirs, err := checkpoint.Dirs(parent, cp)
	if err != nil {
		return rest.ForkMade{}, err
	}
	sb, err := h.startFork(rec, dirs)
	if err != nil {
		return rest.ForkMade{}, err
	}
	// Answered once its kernel watch has walked the tree: a process that
	// writes the fork's root after the answer is then heard (until then a
	// change in a directory not yet watched goes unheard), so the fork's
	// journal names all it changed, which its merges and its changes
	// since the fork read.
	h.waitWatched(ctx, sb, name, "the fork")
	rec.Made = true
	if err := writeRecord(base, rec); err != nil {
		h.Stop(context.WithoutCancel(ctx), name, false)
		return rest.ForkMade{}, err
	}
	made = true
	h.log.Info("forked sandbox "+name+" from "+from, "sandbox", name, "from", from, "checkpoint", cp, "copy", rec.Copy)
	return rest.ForkMade{Token: h.Token(name), Checkpoint: cp, Quota: q, Copy: rec.Copy, CopyWhy: rec.CopyWhy}, nil
}

// overlayDirs makes the fork's upper/ (given the made tree's root's
// mode, owner and mtime), work/ and root/, for its overlay.
func (h *Host) overlayDirs(rec forkRecord) error {
	base := filepath.Join(h.forksDir(), rec.Name)
	for _, d := range []string{"upper", "work", "root"} {
		if err := unix.Mkdir(filepath.Join(base, d), 0o700); err != nil {
			return err
		}
	}
	return likeRoot(filepath.Join(base, "upper"), rec.Lower)
}

var errNoParent = fmt.Errorf("no such sandbox to fork: %w", fs.ErrNotExist)

// likeRoot gives the upper directory the mode and owner of the made
// tree's root: the overlay's root takes the upper's.
func likeRoot(upper, lower string) error {
	var st unix.Stat_t
	if err := unix.Lstat(lower, &st); err != nil {
		return err
	}
	if err := unix.Lchown(upper, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := unix.Chmod(upper, st.Mode&0o7777); err != nil {
		return err
	}
	return unix.UtimesNano(upper, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, st.Mtim})
}

// writeRecord replaces the fork.json of dir (synced, then renamed over
// the old one).
func writeRecord(dir string, rec forkRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0) // Replace fsyncs it
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return statedir.Replace(fd, forkFile, string(b)+"\n")
}

// mountFork mounts rec's overlay on its root/, unless it is mounted.
func (h *Host) mountFork(rec forkRecord) error {
	base := filepath.Join(h.forksDir(), rec.Name)
	if isOverlay(filepath.Join(base, "root")) {
		return nil
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	hold := func(p string) (int, error) {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			fds = append(fds, fd)
		}
		return fd, err
	}
	var l overlay.Layers
	var target int
	var err error
	for _, s := range []struct {
		p  string
		to *int
	}{{filepath.Join(base, "root"), &target}, {filepath.Join(base, "upper"), &l.Upper}, {filepath.Join(base, "work"), &l.Work}} {
		if *s.to, err = hold(s.p); err != nil {
			return fmt.Errorf("fork %s: %w", rec.Name, err)
		}
	}
	lower, err := hold(rec.Lower)
	if err != nil {
		return fmt.Errorf("fork %s: its checkpoint's tree: %w", rec.Name, err)
	}
	data, err := hold(rec.Data)
	if err != nil {
		return fmt.Errorf("fork %s: its parent's store: %w", rec.Name, err)
	}
	l.Lower, l.Data = []int{lower}, []int{data}
	return overlay.Mount(target, l)
}

// isOverlay says whether p is an overlay's root: an overlay mounted on
// p, not a directory of an overlay the state itself is on (a container's
// root), which statfs alone would take for one.
func isOverlay(p string) bool {
	var st unix.Statfs_t
	if unix.Statfs(p, &st) != nil || st.Type != overlayMagic {
		return false
	}
	var sx, up unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE, &sx) != nil {
		return false
	}
	if sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	}
	// A kernel that does not say (before 5.8): a mount's root is on
	// another device than its parent.
	if unix.Statx(unix.AT_FDCWD, filepath.Dir(p), unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE, &up) != nil {
		return false
	}
	return sx.Dev_major != up.Dev_major || sx.Dev_minor != up.Dev_minor
}

// startFork serves the fork of rec, whose root must be its overlay (a
// copy's: a directory, no mount); made, for a fork made now, lists its
// tree's directories (core.Options.Made), nil for one served again.
func (h *Host) startFork(rec forkRecord, made map[string][]string) (*core.Sandbox, error) {
	root := filepath.Join(h.forksDir(), rec.Name, "root")
	if rec.Copy {
		if err := plainDir(root); err != nil {
			return nil, fmt.Errorf("fork %s, a copy: %w: not served", rec.Name, err)
		}
	} else if !isOverlay(root) {
		return nil, fmt.Errorf("fork %s: %s is not its overlay: not served", rec.Name, root)
	}
	open := func(o core.Options) (*core.Sandbox, error) {
		if !rec.Copy { // a copy's tree is all its own: counted as any root
			o.Upper = h.forkUpper(rec.Name)
		}
		o.Made = made
		return core.Open(rec.Name, root, o)
	}
	return h.start(rec.Name, rec.Name, open, false, core.Quota{}, true)
}

// forkUpper opens the upper directory of the fork name for its usage
// (core.Options.Upper): beneath the state directory, through no symlink,
// at each call (a usage scan's walk takes its own; the sandbox holds one
// for what a removal frees, closed with it).
func (h *Host) forkUpper(name string) func() (int, error) {
	return func() (int, error) {
		state, err := unix.Open(h.cfg.State, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		defer unix.Close(state)
		return unix.Openat2(state, filepath.Join("forks", name, "upper"), &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
	}
}

// isFork says whether name is a fork of this host's state.
func (h *Host) isFork(name string) bool {
	_, err := h.forkRecord(name)
	return err == nil
}

// Discard stops serving the fork name, unmounts it and removes what it
// wrote, its state and its token, then takes back its pin of the parent's
// checkpoint. The parent and the checkpoint's made tree stay.
func (h *Host) Discard(ctx context.Context, name string) error {
	rec, err := h.forkRecord(name)
	if err != nil {
		return fmt.Errorf("sandbox %s is not a fork: %w", name, fs.ErrNotExist)
	}
	if _, err := h.Stop(ctx, name, false); err != nil {
		return err
	}
	if err := h.dropFork(name); err != nil {
		return err
	}
	if err := removeState(h.cfg.State, name); err != nil {
		return err
	}
	if parent, _ := h.Get(rec.From); parent != nil {
		return checkpoint.Unpin(parent, rec.Checkpoint, name)
	}
	return nil
}

// abandonFork removes a fork a crash stopped half made: its mount, its
// directory, its state and its pin of the parent's checkpoint.
func (h *Host) abandonFork(rec forkRecord) {
	err := h.dropFork(rec.Name)
	if err == nil {
		err = removeState(h.cfg.State, rec.Name)
	}
	if parent, _ := h.Get(rec.From); err == nil && parent != nil {
		err = checkpoint.Unpin(parent, rec.Checkpoint, rec.Name)
	}
	if err != nil {
		h.log.Error("a fork left half made by a crash could not be removed", "sandbox", rec.Name, "err", err)
		return
	}
	h.log.Info("removed a fork left half made by a crash", "sandbox", rec.Name, "from", rec.From)
}

// ForkOf is the parent and checkpoint of the fork name, from its record;
// false when name is no fork, or one a crash left half made.
func (h *Host) ForkOf(name string) (from, cp string, ok bool) {
	rec, err := h.forkRecord(name)
	if err != nil || !rec.Made {
		return "", "", false
	}
	return rec.From, rec.Checkpoint, true
}

// forkRecord reads the fork.json of name.
func (h *Host) forkRecord(name string) (forkRecord, error) {
	var rec forkRecord
	if h.cfg.State == "" || core.CheckSandboxName(name) != nil {
		return rec, fs.ErrNotExist
	}
	b, err := os.ReadFile(filepath.Join(h.forksDir(), name, forkFile))
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err == nil && rec.Name != name {
		err = fmt.Errorf("fork.json names %q", rec.Name)
	}
	return rec, err
}

// forksOf are the forks made from sandbox name.
func (h *Host) forksOf(name string) []string {
	ents, _ := os.ReadDir(h.forksDir())
	var out []string
	for _, e := range ents {
		if rec, err := h.forkRecord(e.Name()); err == nil && rec.From == name {
			out = append(out, rec.Name)
		}
	}
	return out
}

// errHasForks refuses to remove a sandbox whose forks read its
// checkpoints.
var errHasForks = fmt.Errorf("it has forks: discard them first: %w", unix.EBUSY)

// dropFork unmounts the fork's overlay and removes its directory.
func (h *Host) dropFork(name string) error {
	base := filepath.Join(h.forksDir(), name)
	root := filepath.Join(base, "root")
	if isOverlay(root) {
		if err := unix.Unmount(root, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
			return fmt.Errorf("fork %s: unmounting: %w", name, err)
		}
	}
	fd, err := unix.Open(h.forksDir(), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return core.RemoveAllAt(context.Background(), fd, name)
}

// StartForks mounts (when a reboot took their mounts) and serves every
// fork of the state, a copy as it is; one that cannot be is logged and left.
func (h *Host) StartForks() {
	if h.cfg.State == "" || !h.cfg.History {
		return
	}
	ents, err := os.ReadDir(h.forksDir())
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		rec, err := h.forkRecord(name)
		if err == nil && !rec.Made {
			h.abandonFork(rec)
			continue
		}
		if errors.Is(err, fs.ErrNotExist) && e.IsDir() && core.CheckSandboxName(name) == nil {
			// Fork makes the directory, then its record: none there is
			// a fork a crash stopped before it took a pin or a state.
			if err := h.dropFork(name); err != nil {
				h.log.Error("a fork left without its record by a crash could not be removed", "sandbox", name, "err", err)
			} else {
				h.log.Info("removed a fork left without its record by a crash", "sandbox", name)
			}
			continue
		}
		if err == nil && !rec.Copy { // a copy is served as it is
			err = h.mountFork(rec)
		}
		if err == nil {
			_, err = h.startFork(rec, nil)
		}
		if err != nil {
			h.log.Error("fork not served", "sandbox", name, "err", err)
		}
	}
}
