package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"sandfs/core"
	"sandfs/core/linediff"
	"sandfs/core/precond"
)

// The diffs of a merge's conflicts: from ours to theirs, for two text
// files (no NUL in the first 8 KiB, valid UTF-8), each side read now up to
// maxConflictInput; a diff is cut at maxConflictDiff (at a line's end)
// and the diffs of one merge add up to at most maxConflictDiffs, so a
// merge's answer is bounded by what the fork changed.
const (
	maxConflictInput = 1 << 20
	maxConflictDiff  = 64 << 10
	maxConflictDiffs = 4 << 20
)

// describe is the conflicts as the answer tells them: each side, and
// the diff of two text files.
func (m *merger) describe(ctx context.Context, ours, fork *core.Sandbox) []MergeConflict {
	out := make([]MergeConflict, 0, len(m.conflicts))
	budget := maxConflictDiffs
	for _, cf := range m.conflicts {
		b, inB := m.base[cf.ap]
		t, inT := m.theirs(cf.ap)
		c, inC := m.cur[cf.ap]
		mc := MergeConflict{Path: cf.ap, Why: cf.why, Took: cf.took,
			Base: side(cf.ap, b, inB, false), Ours: side(cf.ap, c, inC, true), Theirs: side(cf.ap, t, inT, true)}
		if inC && inT && c.Kind == kindFile && t.Kind == kindFile {
			if budget <= 0 {
				mc.DiffUnavailable = fmt.Sprintf("the diffs of this merge passed %d bytes", maxConflictDiffs)
			} else {
				mc.Diff, mc.DiffUnavailable = conflictDiff(ctx, cf.ap, ours, fork)
				if len(mc.Diff) > maxConflictDiff {
					mc.Diff, mc.DiffTruncated = mc.Diff[:strings.LastIndexByte(mc.Diff[:maxConflictDiff], '\n')+1], true
				}
				budget -= len(mc.Diff)
			}
		}
		out = append(out, mc)
	}
	return out
}

// side is an entry as a conflict tells it; etag adds its ETag (a side
// that is there now).
func side(ap string, e cpEntry, ok, etag bool) *MergeSide {
	if !ok {
		return nil
	}
	pe := e.public(ap)
	s := &MergeSide{Type: pe.Type, Mode: pe.Mode, Uid: e.Uid, Gid: e.Gid, Size: e.Size, Hash: e.Hash, Target: e.Target}
	if etag {
		s.ETag = precond.IdentityETag(e.Ino, e.Size, e.Mtime)
	}
	return s
}

// conflictDiff is the diff of ap from ours to theirs, or why there is none.
func conflictDiff(ctx context.Context, ap string, ours, fork *core.Sandbox) (string, string) {
	a, why := readSide(ctx, ours, ap, "in the sandbox merged into")
	if why != "" {
		return "", why
	}
	b, why := readSide(ctx, fork, ap, "in the fork")
	if why != "" {
		return "", why
	}
	if linediff.IsBinary(a) || linediff.IsBinary(b) {
		return "", "binary"
	}
	d, err := linediff.Unified(ctx, "a"+ap, "b"+ap, a, b)
	switch {
	case errors.Is(err, linediff.ErrTooLarge):
		return "", "diff too large: the two sides differ in too many places to diff within the bound"
	case err != nil:
		return "", "the request ended before the diff did"
	}
	return d, ""
}

// readSide reads the file ap of s, up to maxConflictInput.
func readSide(ctx context.Context, s *core.Sandbox, ap, where string) ([]byte, string) {
	f, _, err := s.OpenFile(ctx, ap)
	if err != nil {
		return nil, "cannot be read " + where + ": " + core.ErrnoOf(err).Error()
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConflictInput+1))
	switch {
	case err != nil:
		return nil, "cannot be read " + where
	case len(b) > maxConflictInput:
		return nil, fmt.Sprintf("larger than %d bytes %s", maxConflictInput, where)
	}
	return b, ""
}
