package changes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/core/journal"
	"sandfs/core/linediff"
)

// The diffs of changes-since. A row's diff is the unified diff (udiff.go)
// of its content at the start point against the file now, for regular
// files whose both sides are text: no NUL in the first 8 KiB and valid
// UTF-8. The new side is read now, beneath the root, never through a
// symlink; a deleted row's is empty. The old side is empty for an added
// row; otherwise it is a checkpoint's copy of the path (a renamed row's old
// path): since a checkpoint, that checkpoint's; since a seq or a time, the
// newest checkpoint at or before the start point, when no event touched the
// path between it and the start point (else nothing is known of it); since
// a fork, the parent's checkpoint it was made from, read from the parent's
// store (the fork's own overlay is never looked at). Each
// side is read up to 1 MiB; a diff is cut at MaxDiffBytes (at a line's
// end, DiffTruncated), and the diffs of one answer add up to at most
// MaxDiffTotal: rows past it say so in DiffUnavailable.

const (
	// DefaultMaxDiffBytes is a row's diff bound without MaxDiffBytes.
	DefaultMaxDiffBytes = 64 << 10
	// MaxDiffTotal bounds the diffs of one answer, all rows together.
	MaxDiffTotal = 4 << 20
	// maxDiffInput is the most read of each side of a diff.
	maxDiffInput = 1 << 20
)

// startContent is where the content of the start point is known.
type startContent struct {
	s       *core.Sandbox          // whose store holds cp: the sandbox, or a fork's parent
	cp      *checkpoint.Checkpoint // nil: nowhere, why says
	why     string                 // why nothing is known, when cp is nil
	touched map[string]bool        // paths an event touched between cp.Seq and the start point
	dirs    []string               // directories removed or renamed then: all below them is touched
}

// diffRows fills the diff of each row that is not a directory.
func diffRows(ctx context.Context, s *core.Sandbox, rows []Row, q *Query, startOf func() *startContent) {
	var old *startContent
	budget := MaxDiffTotal
	for i := range rows {
		r := &rows[i]
		if r.IsDir || ctx.Err() != nil {
			continue
		}
		if budget <= 0 {
			r.DiffUnavailable = fmt.Sprintf("the answer's diffs reached their bound of %d bytes", MaxDiffTotal)
			continue
		}
		if old == nil && r.Change != Added {
			old = startOf()
		}
		diffRow(ctx, s, r, old, min(q.MaxDiffBytes, budget))
		budget -= len(r.Diff)
	}
}

func diffRow(ctx context.Context, s *core.Sandbox, r *Row, old *startContent, max int) {
	var a, b []byte
	var why string
	if r.Change != Deleted {
		if b, why = readNow(s, r.Path); why != "" {
			r.DiffUnavailable = why
			return
		}
	}
	from := r.Path
	if r.RenamedFrom != "" {
		from = r.RenamedFrom
	}
	if r.Change != Added {
		if a, why = old.read(from); why != "" {
			r.DiffUnavailable = why
			return
		}
	}
	if linediff.IsBinary(a) || linediff.IsBinary(b) {
		r.Binary = true
		return
	}
	d, err := linediff.Unified(ctx, "a"+from, "b"+r.Path, a, b)
	switch {
	case errors.Is(err, linediff.ErrTooLarge):
		r.DiffUnavailable = "diff too large: the two sides differ in too many places to diff within the bound"
		return
	case err != nil:
		r.DiffUnavailable = "the request ended before the diff did"
		return
	}
	if len(d) > max {
		cut := strings.LastIndexByte(d[:max], '\n') + 1
		d, r.DiffTruncated = d[:cut], true
	}
	r.Diff = d
}

// readNow reads the regular file at ap, not through a symlink, up to
// maxDiffInput; why says why not.
func readNow(s *core.Sandbox, ap string) (b []byte, why string) {
	fd, err := s.Root().OpenBeneath(ap, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, "a symlink now"
	case err != nil:
		return nil, "cannot be read now: " + core.ErrnoOf(err).Error()
	}
	f := os.NewFile(uintptr(fd), ap)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, "not a regular file now"
	}
	return readCapped(f, "now")
}

func readCapped(r io.Reader, when string) ([]byte, string) {
	b, err := io.ReadAll(io.LimitReader(r, maxDiffInput+1))
	switch {
	case err != nil:
		return nil, "cannot be read " + when
	case len(b) > maxDiffInput:
		return nil, fmt.Sprintf("larger than %d bytes %s", maxDiffInput, when)
	}
	return b, ""
}

// startContentOf finds where the start point's content is kept: the
// checkpoint of the start point, else the newest at or before it, with the
// paths touched between the two.
func startContentOf(ctx context.Context, s *core.Sandbox, cp *checkpoint.Checkpoint, start uint64) *startContent {
	c := &startContent{s: s, cp: cp}
	if cp != nil {
		return c
	}
	cps, err := checkpoint.List(s)
	if errors.Is(err, checkpoint.ErrNoState) {
		c.why = "no content known at the start point: this sandbox keeps no checkpoints (no state directory)"
		return c
	}
	if err != nil {
		c.why = "no content known at the start point: the checkpoints cannot be read"
		return c
	}
	var best *checkpoint.Checkpoint
	for i := range cps {
		if cps[i].Seq <= start && (best == nil || cps[i].Seq > best.Seq) {
			best = &cps[i]
		}
	}
	if best == nil {
		c.why = fmt.Sprintf("no content known at the start point: no checkpoint at or before seq %d", start)
		return c
	}
	if best.Seq < start {
		c.touched = map[string]bool{}
		lost, err := s.Journal().Scan(ctx, best.Seq, func(e journal.Event) bool {
			if e.Seq > start {
				return false
			}
			c.touched[e.Path] = true
			if e.OldPath != "" {
				c.touched[e.OldPath] = true
			}
			if e.IsDir && (e.Type == journal.Remove || e.Type == journal.Rename) {
				c.dirs = append(c.dirs, e.Path, e.OldPath)
			}
			return true
		})
		if lost || err != nil {
			c.why = fmt.Sprintf("no content known at the start point: the events between checkpoint %s (seq %d) and it are no longer kept", best.ID, best.Seq)
			return c
		}
	}
	c.cp = best
	return c
}

// forkContentOf is a fork's start content: its parent's checkpoint.
func forkContentOf(f *Fork) *startContent {
	c := &startContent{s: f.Parent}
	if f.Parent == nil {
		c.why = fmt.Sprintf("no content known at the fork point: its parent %s is not served", f.From)
		return c
	}
	cp, err := checkpoint.ByID(f.Parent, f.Checkpoint)
	if err != nil {
		c.why = fmt.Sprintf("no content known at the fork point: checkpoint %s of %s cannot be read", f.Checkpoint, f.From)
		return c
	}
	c.cp = &cp
	return c
}

// read is the start point's content of ap; why says why it is not known.
func (c *startContent) read(ap string) (b []byte, why string) {
	if c.cp == nil {
		return nil, c.why
	}
	if c.touched[ap] || c.underDir(ap) {
		return nil, fmt.Sprintf("no content known at the start point: changed between checkpoint %s (seq %d) and it", c.cp.ID, c.cp.Seq)
	}
	rc, ent, err := checkpoint.OpenFile(c.s, c.cp.ID, ap)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Sprintf("not in checkpoint %s", c.cp.ID)
	case err != nil:
		return nil, fmt.Sprintf("checkpoint %s cannot be read", c.cp.ID)
	}
	defer rc.Close()
	switch ent.Type {
	case "dir", "directory", "symlink":
		return nil, fmt.Sprintf("a %s in checkpoint %s", ent.Type, c.cp.ID)
	}
	return readCapped(rc, "at the start point")
}

// existed reports whether ap is known to have existed at the start point.
func (c *startContent) existed(ap string) bool {
	if c.cp == nil || c.touched[ap] || c.underDir(ap) {
		return false
	}
	_, err := checkpoint.Lookup(c.s, c.cp.ID, ap)
	return err == nil
}

func (c *startContent) underDir(ap string) bool {
	for _, d := range c.dirs {
		if d != "" && d != ap && atOrUnder(ap, d) {
			return true
		}
	}
	return false
}
