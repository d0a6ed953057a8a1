package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint/cas"
)

// MergeOptions shape a Merge of a fork into the sandbox it was made from.
type MergeOptions struct {
	// Checkpoint is the merge's base: the checkpoint of the sandbox merged
	// into that the fork was made from.
	Checkpoint string
	// Fork is the fork, served: its journal since it was made names what
	// it changed, and its tree holds it.
	Fork *core.Sandbox
	// Name is the fork's name, in the actor of the merge's changes:
	// merge:<Name>.
	Name string
	// Paths limit the merge to these API paths, files or subtrees; empty
	// is the whole tree.
	Paths []string
	// Strategy says what becomes of a path both sides changed differently
	// (StrategyFail when empty).
	Strategy string
	DryRun   bool
}

// The strategies of a merge. With StrategyFail a merge with a conflict
// changes nothing (ErrConflicts); StrategyOurs leaves each conflicting path
// as the sandbox merged into has it; StrategyTheirs gives it the fork's.
const (
	StrategyFail   = "fail"
	StrategyOurs   = "ours"
	StrategyTheirs = "theirs"
)

// MergeActorPrefix starts the actor a merge's changes carry:
// "merge:<fork>".
const MergeActorPrefix = "merge:"

// ReasonBeforeMerge is the reason of the checkpoint a merge takes first:
// restoring it undoes the merge.
const ReasonBeforeMerge = "before-merge"

// MergeSide is one side of a conflict: the base (the checkpoint), ours
// (the sandbox merged into, now) or theirs (the fork, now).
type MergeSide struct {
	Type   string // "file", "dir", "symlink"
	Mode   fs.FileMode
	Uid    uint32
	Gid    uint32
	Size   int64
	Hash   string // hex sha256 of a file's content
	Target string // a symlink's
	ETag   string // ours and theirs: the path's ETag in its sandbox
}

// MergeConflict is a path both sides changed, differently.
type MergeConflict struct {
	Path string
	Why  string
	// Base, Ours and Theirs are nil where that side has no such path.
	Base, Ours, Theirs *MergeSide
	// Took is the side the strategy gave the path ("ours", "theirs"), or
	// "" when it was left as it is (StrategyFail).
	Took string
	// Diff is the unified diff from ours to theirs, when both are text
	// files; DiffUnavailable says why there is none for two files.
	Diff            string
	DiffTruncated   bool // Diff was cut, at a line's end
	DiffUnavailable string
}

// MergeResult is what a merge did (or, on a dry run, would do).
type MergeResult struct {
	Checkpoint string // the base
	Strategy   string
	DryRun     bool
	Undo       string // the checkpoint taken first ("" on a dry run or a failed merge)
	Written    []string
	Removed    []string
	Conflicts  []MergeConflict
	Skipped    []RestoreSkip // paths a writer changed while the merge ran
}

// ErrConflicts is the error of a merge with StrategyFail that met a
// conflict: nothing was changed, and the result names the conflicts.
var ErrConflicts = errors.New("the fork and the sandbox both changed the same paths, differently: nothing was merged (choose a strategy, or leave those paths out)")

// Merge brings into s what the fork changed since it was made from s's
// checkpoint o.Checkpoint, path by path, three ways (doc.go, "Merges").
func Merge(ctx context.Context, s *core.Sandbox, o MergeOptions) (MergeResult, error) {
	if o.Strategy == "" {
		o.Strategy = StrategyFail
	}
	res := MergeResult{Checkpoint: o.Checkpoint, Strategy: o.Strategy, DryRun: o.DryRun,
		Written: []string{}, Removed: []string{}, Conflicts: []MergeConflict{}, Skipped: []RestoreSkip{}}
	switch o.Strategy {
	case StrategyFail, StrategyOurs, StrategyTheirs:
	default:
		return res, fmt.Errorf("merge strategy %q: want fail, ours or theirs: %w", o.Strategy, unix.EINVAL)
	}
	if o.Fork == nil || o.Fork == s {
		return res, fmt.Errorf("a merge needs a fork other than the sandbox merged into: %w", unix.EINVAL)
	}
	h, scopes, bhd, err := lockedAt(s, o.Checkpoint, o.Paths)
	if err != nil {
		return res, err
	}
	defer h.mu.Unlock()
	base, err := h.treeBefore(bhd.ID)
	if err != nil {
		return res, err
	}
	var st *cas.Store
	if !o.DryRun {
		st = h.store // what the fork wrote is staged from the store, as a restore's files are
	}
	theirs, err := h.forkChanges(ctx, o.Fork, base.files, bhd.SkipExcluded, st)
	var undo Checkpoint
	var cur *cpTree
	if err != nil {
		err = fmt.Errorf("what the fork changed: %w", err)
	} else if undo, cur, err = h.create(ctx, s, Options{Reason: ReasonBeforeMerge, SkipExcluded: bhd.SkipExcluded,
		Name: "before merge of " + o.Name}, !o.DryRun); err != nil {
		err = fmt.Errorf("the checkpoint before the merge: %w", err)
	}
	if err != nil {
		if st != nil {
			h.sweep() // what it stored (a full disk, a cancel) no manifest names: it goes
		}
		return res, err
	}
	m := &merger{base: base.files, cur: cur.files, set: theirs.set, del: theirs.del, strategy: o.Strategy}
	m.decide(scopes)
	res.Conflicts = m.describe(ctx, s, o.Fork)
	if o.Strategy == StrategyFail && len(m.conflicts) > 0 {
		if !o.DryRun {
			// Nothing changed: the undo would undo nothing.
			_ = h.delete(undo.ID)
		}
		return res, ErrConflicts
	}
	rres := RestoreResult{Written: []string{}, Removed: []string{}, Skipped: []RestoreSkip{}}
	p := plan(s, scopes, m.target, cur.files, nil, &rres)
	if o.DryRun {
		p.report(&rres)
	} else {
		res.Undo = undo.ID
		h.carryOut(ctx, s, MergeActorPrefix+o.Name, scopes, p, m.target, cur.files, &rres)
	}
	res.Written, res.Removed, res.Skipped = rres.Written, rres.Removed, rres.Skipped
	return res, nil
}

// forkChanges finds how the fork's tree differs from base: the entries it
// changed or made (set) and the paths it removed (del). Its journal since
// it was made names them, so nothing else of the fork is looked at; a
// journal that is not complete (or lost events) makes it walk the fork
// whole, reading every file. What it reads goes into the store (st nil:
// hashed only). h.mu is held.
func (h *cpStore) forkChanges(ctx context.Context, fork *core.Sandbox, base map[string]cpEntry, skip bool, st *cas.Store) (*builder, error) {
	fork.Watch().CatchUp()
	seq := fork.Journal().Seq()
	b := newBuilder(ctx, fork, h, base, skip, st)
	done := false
	if journalComplete(fork) {
		var err error
		if done, err = b.since(0, seq); err != nil {
			return nil, err
		}
	}
	if !done {
		b = newBuilder(ctx, fork, h, base, skip, st)
		if err := b.full(); err != nil {
			return nil, err
		}
	}
	if st != nil && h.size >= 0 {
		h.size += b.newDisk.Load()
	}
	return b, nil
}
