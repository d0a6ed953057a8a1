package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/apipath"
	"sandfs/core/journal"
)

// RestoreOptions shape a Restore.
type RestoreOptions struct {
	Checkpoint string
	// Paths are API paths, files or subtrees; empty is the whole tree.
	Paths []string
	// Actor limits the restore to the paths that actor changed after the
	// checkpoint: an X-Sandfs-Actor name (origin api), or "fuse:COMM" for
	// the mount's processes of that command name.
	Actor  string
	DryRun bool
	// Unchanged is the checkpoint the caller vouches the root is, as
	// Options.Unchanged: the checkpoint before the restore is its tree,
	// taken without a walk.
	Unchanged *Still
}

// RestoreSkip is a path a restore left as it was, and why.
type RestoreSkip struct {
	Path   string
	Reason string
	By     string // who changed it after the actor: "origin:actor" or "fuse:comm[pid]"
}

// RestoreResult is what a restore did (or, on a dry run, would do).
type RestoreResult struct {
	Checkpoint string
	DryRun     bool
	Undo       string // the checkpoint taken first ("" on a dry run): restoring it undoes this one
	Written    []string
	Removed    []string
	Skipped    []RestoreSkip
}

// RestorePathError is a path in RestoreOptions.Paths refused before
// anything is changed.
type RestorePathError struct {
	Path string // quoted when it is not printable; "" for a host path (never echoed)
	Why  string
}

func (e *RestorePathError) Error() string {
	if e.Path == "" {
		return "restore path: " + e.Why
	}
	return fmt.Sprintf("restore path %s: %s", e.Path, e.Why)
}
func (e *RestorePathError) Unwrap() error { return unix.EINVAL }

// ErrJournalLost is the error of a restore by actor when the journal no
// longer holds every event since the checkpoint (who changed what cannot
// be told).
var ErrJournalLost = errors.New("the journal no longer holds every event since the checkpoint")

// The reasons of a skip.
const (
	skipRaced = "changed during the restore"
)

// RestoreActorPrefix starts the actor a restore's changes carry:
// "restore:<checkpoint id>".
const RestoreActorPrefix = "restore:"

// Restore brings the tree, or the paths asked, back to a checkpoint
// (doc.go, "Restore", has the design).
func Restore(ctx context.Context, s *core.Sandbox, o RestoreOptions) (RestoreResult, error) {
	res := RestoreResult{Checkpoint: o.Checkpoint, DryRun: o.DryRun, Written: []string{}, Removed: []string{}, Skipped: []RestoreSkip{}}
	h, scopes, thd, err := lockedAt(s, o.Checkpoint, o.Paths)
	if err != nil {
		return res, err
	}
	defer h.mu.Unlock()
	var actor *actorChanges
	if o.Actor != "" {
		if actor, err = changesBy(ctx, s, o.Actor, thd.Seq); err != nil {
			return res, err
		}
	}
	target, err := h.treeBefore(thd.ID)
	if err != nil {
		return res, err
	}
	undo, cur, err := h.create(ctx, s, Options{Reason: ReasonBeforeRestore, SkipExcluded: thd.SkipExcluded,
		Name: "before restore of " + thd.ID, Unchanged: o.Unchanged}, !o.DryRun)
	if err != nil {
		if !o.DryRun {
			h.sweep() // what it stored (a full disk, a cancel) no manifest names: it goes
		}
		return res, fmt.Errorf("the checkpoint before the restore: %w", err)
	}
	if !o.DryRun {
		res.Undo = undo.ID
	}
	p := plan(s, scopes, target.files, cur.files, actor, &res)
	if o.DryRun {
		p.report(&res)
		return res, nil
	}
	h.carryOut(ctx, s, RestoreActorPrefix+thd.ID, scopes, p, target.files, cur.files, &res)
	return res, nil
}

// carryOut makes plan p (from target and cur) as actor (origin api),
// under one claim of scopes, and fills res, its lists sorted. What it
// brings back is unbounded by the quota; the usage counts what it changed
// (restore_usage.go). A restore and a merge end with it. h.mu is held.
func (h *cpStore) carryOut(ctx context.Context, s *core.Sandbox, actor string, scopes []string, p *restorePlan, target, cur map[string]cpEntry, res *RestoreResult) {
	actx := core.WithActor(ctx, core.Actor{Origin: journal.API, Name: actor})
	claim := s.Watch().Claim(scopes...)
	defer claim.Done()
	applyCounted(&restorer{s: s, h: h, ctx: actx, claim: claim, res: res}, p, target, cur)
	sort.Strings(res.Written)
	sort.Strings(res.Removed)
	sort.Slice(res.Skipped, func(i, j int) bool { return res.Skipped[i].Path < res.Skipped[j].Path })
}

// maxRestorePaths bounds RestoreOptions.Paths.
const maxRestorePaths = 10_000

// restoreScopes checks every path before anything is done: no NUL, no
// "..", no name over 255 bytes or path over 4096, not the host path of the
// root. Empty is the whole tree. Scopes within another are dropped.
func restoreScopes(s *core.Sandbox, paths []string) ([]string, error) {
	if len(paths) > maxRestorePaths {
		return nil, &RestorePathError{Path: fmt.Sprintf("(%d paths)", len(paths)), Why: fmt.Sprintf("at most %d paths", maxRestorePaths)}
	}
	if len(paths) == 0 {
		return []string{"/"}, nil
	}
	var out []string
	for _, p := range paths {
		bad := func(why string) error { return &RestorePathError{Path: quoteIfOdd(p), Why: why} }
		if why := apipath.Check(p, true); why != apipath.OK {
			return nil, bad(string(why))
		}
		if s.HostRoot() != "/" && (p == s.HostRoot() || strings.HasPrefix(p, s.HostRoot()+"/")) {
			// Not echoed: an answer never names the root's host path.
			return nil, &RestorePathError{Why: "a host path under the sandbox root: give the API path (\"/\" is the root)"}
		}
		ap, err := s.Clean(p)
		if err != nil {
			return nil, bad(err.Error())
		}
		out = append(out, ap)
	}
	sort.Strings(out)
	kept := out[:0]
	for _, ap := range out {
		if len(kept) > 0 && apipath.Within(ap, kept[len(kept)-1]) {
			continue
		}
		kept = append(kept, ap)
	}
	return kept, nil
}

func quoteIfOdd(p string) string {
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return strconv.Quote(p)
		}
	}
	return p
}

// inScope reports whether ap is one of scopes or beneath one.
func inScope(ap string, scopes []string) bool {
	for _, sc := range scopes {
		if apipath.Within(ap, sc) {
			return true
		}
	}
	return false
}

// ancestors calls fn with each directory above ap, nearest first, up to
// "/", until fn returns false.
func ancestors(ap string, fn func(dir string) bool) {
	for ap != "/" {
		ap, _ = apipath.Split(ap)
		if !fn(ap) {
			return
		}
	}
}

// treeBefore is the tree of checkpoint id, taken before a checkpoint the
// caller takes next: that one starts from the newest tree and changes it
// in place, so a tree that is the newest (or the one kept beside it) is
// copied, which is cheaper than reading its manifests again. h.mu is held.
func (h *cpStore) treeBefore(id string) (*cpTree, error) {
	t, err := h.tree(id)
	if err != nil {
		return nil, err
	}
	if t == h.last || t == h.other {
		t = &cpTree{hdr: t.hdr, files: maps.Clone(t.files)}
	}
	return t, nil
}

// lockedAt is how a restore and a merge start: the store, paths checked
// (restoreScopes), and the checkpoint id's header, with h.mu held for the
// caller to unlock (not on an error).
func lockedAt(s *core.Sandbox, id string, paths []string) (*cpStore, []string, cpHeader, error) {
	h, err := storeOf(s)
	if err != nil {
		return nil, nil, cpHeader{}, err
	}
	scopes, err := restoreScopes(s, paths)
	if err != nil {
		return nil, nil, cpHeader{}, err
	}
	h.mu.Lock()
	hd, err := h.header(id)
	if err != nil {
		h.mu.Unlock()
		return nil, nil, cpHeader{}, err
	}
	return h, scopes, hd, nil
}
