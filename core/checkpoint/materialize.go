package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint/cas"
	"sandfs/internal/overlay"
)

// A checkpoint's tree made whole on disk, once, in the sandbox's state
// directory (lower/<id>): what a fork's overlay reads beneath its own
// writes. Its files are the store's objects (lowerobject.go), or hold
// metadata only (size, mode, owner, mtime) and the overlay xattrs that
// send their reads to the store's object (the store's objects/ is the
// overlay's data-only layer), so no content is copied and none is kept
// twice. It is built under a temporary name and renamed into
// place, so a crash leaves either nothing or the whole tree, never half of
// one; the leftovers of a build that did not finish are removed by the
// next. Nothing writes a made tree again: an overlay copies a file up
// before it changes it.

// lowerDir is the state directory's directory of made trees.
const lowerDir = "lower"

// lowerTemp starts the name of a tree being built.
const lowerTemp = ".tmp-"

// Lower is a checkpoint's made tree: an overlay of Path as its lower
// layer and Data as its data-only layer reads as the checkpoint.
type Lower struct {
	Path    string // its host path (a directory of the state)
	Data    string // the store's objects (a directory of the state)
	Made    bool   // made by this call (false: it was there)
	Entries int    // entries in the tree, the root included
}

// Materialize makes the tree of checkpoint id whole in the sandbox's
// state directory, unless it already is, and answers where it is:
// directories, symlinks, objects and metacopy files with the modes, owners and
// modification times the checkpoint recorded (package overlay). It needs
// CAP_SYS_ADMIN (trusted.* xattrs). ctx ends a build (what was built is
// removed).
func Materialize(ctx context.Context, s *core.Sandbox, id string) (Lower, error) {
	h, err := storeOf(s)
	if err != nil {
		return Lower{}, err
	}
	h.mat.Lock() // one build at a time per sandbox: a second waits, then finds the tree
	defer h.mat.Unlock()
	if err := unix.Mkdirat(h.state, lowerDir, 0o700); err != nil && err != unix.EEXIST {
		return Lower{}, fmt.Errorf("materialize %s: %w", id, err)
	}
	lfd, err := unix.Openat(h.state, lowerDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Lower{}, fmt.Errorf("materialize %s: %w", id, err)
	}
	defer unix.Close(lfd)
	out := Lower{Path: path.Join(s.StateDir(), lowerDir, id), Data: path.Join(s.StateDir(), objectsDir)}

	if out.Entries, err = h.treeLen(id); err != nil {
		return Lower{}, err
	}
	var st unix.Stat_t
	if unix.Fstatat(lfd, id, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return out, nil // made before: nothing of the tree is copied
	}
	files, err := h.treeFiles(id)
	if err != nil {
		return Lower{}, err
	}
	removeLeftovers(ctx, lfd)

	tmp := lowerTemp + id + "-" + randomSuffix()
	if err := unix.Mkdirat(lfd, tmp, 0o700); err != nil {
		return Lower{}, fmt.Errorf("materialize %s: %w", id, err)
	}
	b := &lowerBuild{s: s, content: metacopy(h.store), from: h.newestMade(lfd, id), objects: h.store}
	defer b.from.close()
	err = b.build(ctx, lfd, tmp, files)
	if err == nil {
		err = unix.Renameat2(lfd, tmp, lfd, id, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		_ = core.RemoveAllAt(context.WithoutCancel(ctx), lfd, tmp)
		return Lower{}, fmt.Errorf("materialize %s: %w", id, err)
	}
	if dfd, err := unix.Openat(h.state, lowerDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Fsync(dfd) // the rename, kept
		unix.Close(dfd)
	}
	out.Made = true
	return out, nil
}

// treeFiles is a copy of the entries of checkpoint id's tree (an id of
// no checkpoint, or not of an id's shape, is ErrUnknown): the store's
// trees change under its lock, and a build runs outside it.
func (h *cpStore) treeFiles(id string) (map[string]cpEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, err := h.tree(id)
	if err != nil {
		return nil, err
	}
	return maps.Clone(t.files), nil
}

// treeLen is how many entries checkpoint id's tree holds.
func (h *cpStore) treeLen(id string) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, err := h.tree(id)
	if err != nil {
		return 0, err
	}
	return len(t.files), nil
}

// Dirs is the directories of checkpoint id's tree: each directory's API
// path to the names of the directories it holds, read from the
// checkpoint, not from a disk. A root made now from that tree (a fork's)
// has exactly these, so its kernel watch places itself from them
// (core.Options.Made) instead of reading every directory.
func Dirs(s *core.Sandbox, id string) (map[string][]string, error) {
	h, err := storeOf(s)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t, err := h.tree(id)
	if err != nil {
		return nil, err
	}
	return dirsOf(t.files), nil
}

// dirsOf is the directories of files, each with its subdirectories'
// names ("/" always).
func dirsOf(files map[string]cpEntry) map[string][]string {
	out := map[string][]string{"/": nil}
	for p, e := range files {
		if e.Kind != kindDir || p == "/" {
			continue
		}
		parent, name := path.Split(p)
		parent = path.Clean(parent)
		out[parent] = append(out[parent], name)
		if _, ok := out[p]; !ok {
			out[p] = nil
		}
	}
	return out
}

// removeLower removes the made tree of checkpoint id, if any.
func (h *cpStore) removeLower(id string) error {
	lfd, err := unix.Openat(h.state, lowerDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(lfd)
	return core.RemoveAllAt(context.Background(), lfd, id)
}

// removeLeftovers removes the trees a build left when it was stopped.
func removeLeftovers(ctx context.Context, lfd int) {
	fd, err := unix.Openat(lfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), lowerDir)
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		if strings.HasPrefix(n, lowerTemp) {
			_ = core.RemoveAllAt(ctx, lfd, n)
		}
	}
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// metacopy makes a made tree's file: its size and attributes here, its
// bytes the store's object, which the overlay reads through its data
// layer.
func metacopy(store *cas.Store) func(int, cpEntry) error {
	return func(fd int, e cpEntry) error {
		if !store.Has(e.Hash) {
			return unix.ENOENT
		}
		d, n := cas.Split(e.Hash)
		if err := unix.Ftruncate(fd, e.Size); err != nil {
			return err
		}
		if err := unix.Fsetxattr(fd, overlay.XattrMetacopy, nil, 0); err != nil {
			return err
		}
		return unix.Fsetxattr(fd, overlay.XattrRedirect, []byte("/"+d+"/"+n), 0)
	}
}

func (b *lowerBuild) dirAttrs(p string, e cpEntry) error {
	fd, err := b.openDir(p)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return setFileAttrs(b.s, fd, e)
}
