package checkpoint

import (
	"fmt"
	"io/fs"
	"maps"
	"path"

	"sandfs/core"
)

// A checkpoint made elsewhere whose tree is one this store holds with some
// paths changed (a sandbox moved back to a host that kept its store: the
// fleet's manifest is a chain of deltas down to a checkpoint this host
// holds) comes in as those changes: ImportDelta checks them against the
// base's tree and records them as a delta of it, so that taking the
// sandbox back reads, checks and writes about the changes, not the tree.
// The record is Imported, as Import's: its new entries carry no stat
// identity.

// ImportDelta records cp as the tree of the checkpoint base, which the
// store holds, with the entries set put in and the paths del taken out (a
// path both set and deleted is set; one the base lacks is nothing to take
// out). The objects of set must all be in the store (PutObject). A base
// the store lacks is ErrUnknown; otherwise it answers as Import: an id the
// store has is fs.ErrExist, a change that is malformed, or that would
// leave a path without its directory, fs.ErrInvalid.
func ImportDelta(s *core.Sandbox, cp Checkpoint, base string, set []Entry, del []string) (Checkpoint, error) {
	invalid := func(format string, a ...any) (Checkpoint, error) {
		return Checkpoint{}, fmt.Errorf("checkpoint %s: %s: %w", cp.ID, fmt.Sprintf(format, a...), fs.ErrInvalid)
	}
	if !validID(cp.ID) {
		return Checkpoint{}, fmt.Errorf("checkpoint id %q: %w", cp.ID, fs.ErrInvalid)
	}
	if err := CheckChanges(set, del); err != nil {
		return invalid("%v", err)
	}
	body := cpBody{Set: make(map[string]cpEntry, len(set))}
	for _, e := range set {
		body.Set[e.Path] = entryFrom(e)
	}
	h, err := importing(s, cp.ID)
	if err != nil {
		return Checkpoint{}, err
	}
	defer h.mu.Unlock()
	bhd, err := h.header(base)
	if err != nil {
		return Checkpoint{}, err
	}
	t, err := h.tree(base)
	if err != nil {
		return Checkpoint{}, err
	}
	for _, p := range del {
		if _, isSet := body.Set[p]; !isSet {
			if _, had := t.files[p]; had {
				body.Del = append(body.Del, p)
			}
		}
	}
	files := maps.Clone(t.files) // the base's tree is the cache's, and stays its
	apply(files, body)
	if err := checkShape(t.files, files, body); err != nil {
		return invalid("%v", err)
	}
	if err := h.lacking(body.Set); err != nil {
		return Checkpoint{}, err
	}
	return h.imported(cp, files, &bhd, body)
}

// CheckChanges says what is wrong with changes from elsewhere, before
// the tree they change is looked at (nil: nothing): each entry as
// CheckEntries checks it, named once, and each path removed clean and not
// the root.
func CheckChanges(set []Entry, del []string) error {
	seen := make(map[string]bool, len(set))
	for _, e := range set {
		if err := checkEntry(e); err != nil {
			return err
		}
		if seen[e.Path] {
			return fmt.Errorf("entry %q: named twice", e.Path)
		}
		seen[e.Path] = true
	}
	for _, p := range del {
		if !CleanPath(p) || p == "/" {
			return fmt.Errorf("removed %q: not a clean path beneath the root", p)
		}
	}
	return nil
}

// checkShape says what is wrong with files, the tree of base with body
// applied: the root a directory, the directory of every path set one of
// the tree, and, when a directory of base went (removed, or set as
// another kind), every path's directory one of the tree.
func checkShape(base, files map[string]cpEntry, body cpBody) error {
	if files["/"].Kind != kindDir {
		return fmt.Errorf("the tree has no root directory")
	}
	dirGone := false
	for p, e := range body.Set {
		if p != "/" && !isDir(files, path.Dir(p)) {
			return fmt.Errorf("entry %q: its directory is not a directory of the tree", p)
		}
		dirGone = dirGone || e.Kind != kindDir && base[p].Kind == kindDir
	}
	for _, p := range body.Del {
		dirGone = dirGone || base[p].Kind == kindDir
	}
	if !dirGone {
		return nil
	}
	for p := range files {
		if p != "/" && !isDir(files, path.Dir(p)) {
			return fmt.Errorf("entry %q: its directory is not a directory of the tree", p)
		}
	}
	return nil
}

func isDir(files map[string]cpEntry, p string) bool {
	e, ok := files[p]
	return ok && e.Kind == kindDir
}
