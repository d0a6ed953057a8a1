package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"time"

	"sandfs/core"

	"golang.org/x/sys/unix"
)

// Checkpoint is one recorded state of the tree (doc.go has the
// design).
type Checkpoint struct {
	ID       string // "cp_" + 12 lowercase hex
	Name     string // the caller's, may be ""
	Reason   string // "manual", "scheduled", "before-restore"
	Seq      uint64 // journal seq it is consistent with: every event <= Seq is reflected in it
	Created  time.Time
	Files    int64
	Dirs     int64 // the root not counted
	Symlinks int64
	Bytes    int64 // logical bytes of file contents
	NewBytes int64 // content bytes this checkpoint added to the store (0 when all were known)
	// SkipExcluded: the default excludes were left out.
	SkipExcluded bool
	// Identity is the sandbox's (core.Sandbox.Identity) when it was
	// taken: a root rebuilt from it elsewhere is marked with it
	// (core.MarkRoot) to be the sandbox's root again. "" in a checkpoint
	// of before identities.
	Identity string
}

// Entry is one path as a checkpoint recorded it.
type Entry struct {
	Path   string
	Type   string // "file", "dir", "symlink"
	Mode   fs.FileMode
	Uid    uint32
	Gid    uint32
	Mtime  time.Time
	Size   int64
	Target string // symlink
	Hash   string // hex sha256 of the content, files
}

// The reasons a checkpoint is taken.
const (
	ReasonManual        = "manual"
	ReasonScheduled     = "scheduled"
	ReasonBeforeRestore = "before-restore"
)

// ErrUnknown is (wrapped) the error for an id no checkpoint has.
var ErrUnknown = errors.New("unknown checkpoint")

// ErrNoState is the error of every checkpoint operation of a sandbox
// opened without Options.StateDir.
var ErrNoState = errors.New("this sandbox keeps no state")

// ErrKeptChanging is why a checkpoint failed on a file that changed each
// of the 4 times it was read (it unwraps to EAGAIN: try again later).
var ErrKeptChanging error = keptChanging{}

type keptChanging struct{}

func (keptChanging) Error() string {
	return "changed each of the 4 times it was read; the checkpoint records no torn file, try again"
}
func (keptChanging) Unwrap() error { return unix.EAGAIN }

// Options shape a CreateCheckpoint.
type Options struct {
	Name   string
	Reason string // default "manual"
	// SkipExcluded leaves out the default excludes (.git, node_modules,
	// ...); by default they are kept.
	SkipExcluded bool
	// FromJournal: the caller vouches that every change since the newest
	// checkpoint went through the sandbox's own calls, each in its
	// journal (a restore of a root no kernel watch covers yet, nothing
	// else writing it), so only the paths the journal names are looked at
	// again, as when the watch runs; what else changed is the next walk's.
	FromJournal bool
	// Unchanged: the caller vouches that the root is the tree of a
	// checkpoint, the newest made here, while the journal's newest seq is
	// the one it names (a root a kernel watch covered without a gap from
	// that checkpoint on, its journal holding nothing since but what the
	// caller numbered): the checkpoint is that tree, the root not looked
	// at. Naming any other checkpoint, or the journal past that seq, it is
	// found as without.
	Unchanged *Still
}

// Still names a checkpoint whose tree the root still is while the
// journal's newest seq is Seq (Options.Unchanged).
type Still struct {
	Checkpoint string
	Seq        uint64
}

// maxCheckpointName bounds a checkpoint's name.
const maxCheckpointName = 256

// CreateCheckpoint records the tree as it is now.
func Create(ctx context.Context, s *core.Sandbox, o Options) (Checkpoint, error) {
	if len(o.Name) > maxCheckpointName {
		return Checkpoint{}, fmt.Errorf("checkpoint name longer than %d bytes: %w", maxCheckpointName, unix.EINVAL)
	}
	if o.Reason == "" {
		o.Reason = ReasonManual
	}
	h, err := storeOf(s)
	if err != nil {
		return Checkpoint{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	cp, _, err := h.create(ctx, s, o, true)
	if err != nil {
		// What it stored before it failed (a full disk, a cancel) is
		// named by no manifest: it goes, or it would fill the disk.
		h.sweep()
	}
	return cp, err
}

// Checkpoints lists the checkpoints, oldest first.
func List(s *core.Sandbox) ([]Checkpoint, error) {
	h, err := storeOf(s)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hdrs, err := h.headers()
	if err != nil {
		return nil, err
	}
	out := make([]Checkpoint, 0, len(hdrs))
	for _, hd := range hdrs {
		out = append(out, hd.Checkpoint)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Seq < out[j].Seq
	})
	return out, nil
}

// byID is the store for an operation on the checkpoint id: a sandbox
// without state has no checkpoint, so every id is unknown (and no state).
func byID(s *core.Sandbox, id string) (*cpStore, error) {
	h, err := storeOf(s)
	if errors.Is(err, ErrNoState) {
		return nil, fmt.Errorf("%q: %w (%w)", id, ErrUnknown, ErrNoState)
	}
	return h, err
}

// CheckpointByID is the checkpoint id.
func ByID(s *core.Sandbox, id string) (Checkpoint, error) {
	h, err := byID(s, id)
	if err != nil {
		return Checkpoint{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hd, err := h.header(id)
	return hd.Checkpoint, err
}

// DeleteCheckpoint removes the checkpoint id, its made tree
// (materialize.go), and from the store every object no other checkpoint
// names. A checkpoint a fork reads is ErrPinned (pin.go).
func Delete(s *core.Sandbox, id string) error {
	h, err := byID(s, id)
	if err != nil {
		return err
	}
	h.mat.Lock() // not while its tree is being made
	defer h.mat.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pinned(id) {
		return fmt.Errorf("checkpoint %s: %w", id, ErrPinned)
	}
	if err := h.delete(id); err != nil {
		return err
	}
	return h.removeLower(id)
}

// Lookup is the path apiPath as the checkpoint id recorded it
// (fs.ErrNotExist when it has no such path).
func Lookup(s *core.Sandbox, id, apiPath string) (Entry, error) {
	ap, err := s.Clean(apiPath)
	if err != nil {
		return Entry{}, err
	}
	h, err := byID(s, id)
	if err != nil {
		return Entry{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t, err := h.tree(id)
	if err != nil {
		return Entry{}, err
	}
	e, ok := t.files[ap]
	if !ok {
		return Entry{}, core.PathErr("checkpoint entry", ap, unix.ENOENT)
	}
	return e.public(ap), nil
}

// OpenCheckpointFile opens the content of the file apiPath as the
// checkpoint id recorded it (EISDIR, EINVAL for a directory or symlink).
func OpenFile(s *core.Sandbox, id, apiPath string) (io.ReadCloser, Entry, error) {
	e, err := Lookup(s, id, apiPath)
	if err != nil {
		return nil, e, err
	}
	switch e.Type {
	case "dir":
		return nil, e, core.PathErr("checkpoint file", e.Path, unix.EISDIR)
	case "symlink":
		return nil, e, core.PathErr("checkpoint file", e.Path, unix.EINVAL)
	}
	h, _ := storeOf(s)
	f, err := h.store.OpenObject(e.Hash)
	if err != nil {
		return nil, e, core.PathErr("checkpoint file", e.Path, err)
	}
	return f, e, nil
}
