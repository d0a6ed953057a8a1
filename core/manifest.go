package core

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"time"

	"sandfs/core/history"
	"sandfs/core/journal"
)

// What happened while the daemon was down. The durable journal keeps a
// manifest of the tree (path, inode, size, mtime, mode of each entry) with
// the seq it is true at; the events after that seq, replayed over it, are
// the tree as the journal last knew it. At start, once the kernel watch
// covers the tree (so that nothing made from then on goes untold), that
// known tree is compared with a walk of the real one, and each difference
// is told as one event with origin external and FoundAtStart set: create,
// remove (deepest first), write (a file's inode, size or mtime differ) or
// chmod (its mode differs). A difference on a path the journal heard of
// while the walk ran is left to that event. Then the walk is the new
// manifest, and one is written again every ManifestEvery while events come.
//
// The manifest records the root it describes: its device and inode, and
// the sandbox identity the root was marked with (identity.go). A root
// whose device and inode are the manifest's, or whose mark is the
// manifest's identity (a copy or a move of the root, on another
// filesystem or host), is compared; on such a copy the inodes are all new,
// so a file is a change when its size or mtime differ, not its inode.
// A first start (no manifest) tells nothing and writes the first manifest;
// so does a root that is another directory (neither holds): that is
// logged. Names that are not UTF-8 are not compared (the walk skips them,
// names.go).

// ManifestEvery is how often a manifest is written while the tree changes.
var ManifestEvery = 10 * time.Minute

// The manifest's root: its device and inode, and its mark.
const (
	metaRoot     = "root"
	metaIdentity = "identity"
)

// reconcile runs the comparison at start and then keeps the manifest
// fresh until ctx ends.
func (s *Sandbox) reconcile(ctx context.Context, log *slog.Logger) {
	select {
	case <-s.watch.Ready():
	case <-ctx.Done():
		return
	}
	n, err := s.findChangesAtStart(ctx, log)
	switch {
	case err != nil && ctx.Err() == nil:
		log.Error("comparing the tree with the journal's manifest", "sandbox", s.name, "err", err)
	case n > 0:
		log.Info("changes made while the daemon was down", "sandbox", s.name, "count", n)
	}
	close(s.reconciled)
	t := time.NewTicker(ManifestEvery)
	defer t.Stop()
	last := s.journal.Seq()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if seq := s.journal.Seq(); seq != last {
			if _, err := s.saveManifest(ctx); err != nil && ctx.Err() == nil {
				log.Error("writing the journal's manifest", "sandbox", s.name, "err", err)
			}
			last = seq
		}
	}
}

// Reconciled is closed once the comparison at start is done (at once for
// a sandbox that keeps no state).
func (s *Sandbox) Reconciled() <-chan struct{} { return s.reconciled }

// findChangesAtStart tells what changed while the daemon was down and
// writes a new manifest; it returns how many changes it told.
func (s *Sandbox) findChangesAtStart(ctx context.Context, log *slog.Logger) (int, error) {
	h := s.hist
	old, ok, err := h.LoadManifest(ctx)
	if err != nil {
		return 0, err
	}
	var stored map[string]history.Entry // what the journal's store holds: the save writes what differs
	if ok {
		stored = maps.Clone(old.Entries)
	}
	rootID, err := s.root.identity()
	if err != nil {
		return 0, err
	}
	s.id.logRefused(log, s.name, s.hostRoot)
	prev, _ := h.Meta(metaRoot)
	prevID, _ := h.Meta(metaIdentity)
	sameDir := prev == "" || prev == rootID
	sameMark := prevID != "" && s.id.found == prevID
	if ok && !sameDir && !sameMark {
		log.Warn("the root is another directory than the journal's manifest describes; not comparing", "sandbox", s.name, "root", s.hostRoot)
		ok = false
	}
	if ok && !sameDir {
		log.Info("the root carries the sandbox's identity, moved or copied (its device and inode are not the manifest's): comparing it",
			"sandbox", s.name, "root", s.hostRoot)
	}
	known := old.Entries
	from := old.Seq
	if ok {
		if from, err = s.replay(ctx, known, old.Seq); err != nil {
			return 0, err
		}
	}
	seq, now, err := s.walkManifest(ctx)
	if err != nil {
		return 0, err
	}
	told := 0
	if ok {
		heard := map[string]bool{} // paths the journal heard of while the walk ran
		if _, err := s.journal.Scan(ctx, from, func(e journal.Event) bool {
			heard[e.Path], heard[e.OldPath] = true, true
			return true
		}); err != nil {
			return 0, err
		}
		for _, e := range history.DiffManifest(known, now, heard, sameDir, underTemp) {
			s.journal.Append(e)
			told++
		}
	}
	if err := h.SetMeta(metaRoot, rootID); err != nil {
		return told, err
	}
	mark := ""
	if s.id.marked {
		mark = s.id.id
	}
	if err := h.SetMeta(metaIdentity, mark); err != nil {
		return told, err
	}
	return told, h.UpdateManifest(history.Manifest{Seq: seq, Entries: now}, stored)
}

// saveManifest walks the tree and keeps it as the manifest.
func (s *Sandbox) saveManifest(ctx context.Context) (uint64, error) {
	seq, now, err := s.walkManifest(ctx)
	if err != nil {
		return 0, err
	}
	return seq, s.hist.SaveManifest(history.Manifest{Seq: seq, Entries: now})
}

// replay applies the events after seq to known, and returns the last seq
// it applied.
func (s *Sandbox) replay(ctx context.Context, known map[string]history.Entry, seq uint64) (uint64, error) {
	last := seq
	_, err := s.journal.Scan(ctx, seq, func(e journal.Event) bool {
		last = e.Seq
		switch e.Type {
		case journal.Remove:
			history.DropTree(known, e.Path)
		case journal.Rename:
			if e.OldPath != "" {
				history.MoveTree(known, e.OldPath, e.Path)
			}
			fallthrough
		default:
			known[e.Path] = history.Entry{Inode: e.Inode, Size: e.Size, Mtime: e.Mtime, Mode: e.Mode, IsDir: e.IsDir}
		}
		return true
	})
	return last, err
}

// underTemp reports whether API path p is one of the daemon's temp names
// or lies under one (a manifest written before temps were left out may
// hold them).
func underTemp(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if IsTempName(c) {
			return true
		}
	}
	return false
}
