package changes

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/core/journal"
)

// Changes since a point (doc.go has the rules): the journal folded per
// path (fold.go), checked against the tree, with diffs (diff.go).

// The kinds of a Row.
const (
	Added    = "added"
	Modified = "modified"
	Deleted  = "deleted"
	Renamed  = "renamed"
)

const (
	// DefaultLimit is the rows of a Query without Limit.
	DefaultLimit = 10_000
	// MaxLimit is the most rows one answer holds.
	MaxLimit = 100_000
)

// Query says what changed since when, and which rows to give.
type Query struct {
	// The start point: at most one is set (all zero: the oldest event the
	// journal keeps).
	SinceSeq        uint64
	SinceTime       time.Time
	SinceCheckpoint string
	SinceFork       *Fork // since the sandbox, a fork, was made: its whole journal

	Path   string         // API path: only rows at or under it (a renamed row also by its old path)
	Actor  string         // only rows some event of which is by this who-label (Row.Actors)
	Origin journal.Origin // only rows some event of which has this origin; "" any

	Diff         bool // a unified diff of each text file's row
	MaxDiffBytes int  // per row; 0 DefaultMaxDiffBytes
	Limit        int  // rows; 0 DefaultLimit
}

// Fork is where a fork's tree came from. A fork's journal begins when it
// is made, so its events since seq 0 are its changes; what was there
// before them is its parent's checkpoint, which the fork never holds:
// the caller, who knows the forks, names it.
type Fork struct {
	From       string        // the parent sandbox's name
	Parent     *core.Sandbox // nil when the parent is not served: no start content is known
	Checkpoint string        // the parent's checkpoint the fork was made from
}

// Row is the net change of one path.
type Row struct {
	Path        string
	Change      string // Added, Modified, Deleted, Renamed
	RenamedFrom string // Renamed: the path it had at the start point
	IsDir       bool
	Size        int64 // now; 0 when deleted

	First, Last journal.Event // the first and last event that made this row
	Events      int           // how many events made it
	Actors      []string      // distinct who-labels, in order of appearance

	Diff            string // unified diff (Query.Diff), "" when none or unchanged
	DiffTruncated   bool   // Diff was cut at MaxDiffBytes (at a line's end)
	Binary          bool   // not text: no diff
	DiffUnavailable string // why there is no diff, when one was asked and none could be made

	maybeExisted bool // added by a rename onto a path the fold had not seen: a checkpoint may say it existed
}

// Set is the answer of Changes.
type Set struct {
	SinceSeq, UntilSeq uint64 // the events folded are those in (SinceSeq, UntilSeq]
	SinceTime          time.Time
	SinceCheckpoint    string // since a checkpoint, its id; since a fork, the parent's it was made from
	SinceFork          string // since a fork: the parent's name
	// Lost: events after SinceSeq are no longer kept, so the set may miss
	// changes.
	Lost      bool
	Rows      []Row // by path
	Truncated bool  // more rows than Limit
}

// ErrQuery: a Query names more than one start point, or a
// limit out of range.
var ErrQuery = errors.New("invalid changes query")

// Changes is the net change set since q's start point (see above).
func Since(ctx context.Context, s *core.Sandbox, q Query) (Set, error) {
	if err := q.check(); err != nil {
		return Set{}, err
	}
	var out Set
	var cp *checkpoint.Checkpoint
	start := q.SinceSeq
	if q.SinceCheckpoint != "" {
		c, err := checkpoint.ByID(s, q.SinceCheckpoint)
		if err != nil {
			return Set{}, fmt.Errorf("since checkpoint %q: %w", q.SinceCheckpoint, err)
		}
		cp, start = &c, c.Seq
		out.SinceCheckpoint = c.ID
	}
	if q.SinceFork != nil {
		out.SinceCheckpoint, out.SinceFork = q.SinceFork.Checkpoint, q.SinceFork.From
	}
	if q.Path != "" {
		ap, err := s.Clean(q.Path)
		if err != nil {
			return Set{}, err
		}
		q.Path = ap
	}
	f := newFolder(&q)
	byTime := !q.SinceTime.IsZero()
	oldest := q.SinceSeq == 0 && !byTime && cp == nil && q.SinceFork == nil
	first, kept, until, tail, n := uint64(0), uint64(0), start, start, 0
	var err error
	lost, scanErr := s.Journal().Scan(ctx, start, func(e journal.Event) bool {
		if n++; n&4095 == 0 {
			if err = ctx.Err(); err != nil {
				return false
			}
		}
		if kept == 0 {
			kept = e.Seq
		}
		tail = e.Seq
		if e.Type == "" || byTime && first == 0 && e.Time.Before(q.SinceTime) {
			return true
		}
		if first == 0 {
			first = e.Seq
		}
		until = e.Seq
		f.add(&e)
		return true
	})
	if err == nil {
		err = scanErr
	}
	if err != nil {
		return Set{}, err
	}
	out.SinceSeq, out.UntilSeq, out.Lost = start, until, lost
	switch {
	case oldest:
		// Since the oldest kept event: nothing before it was asked for.
		if first > 0 {
			out.SinceSeq = first - 1
		}
		out.Lost = false
	case byTime:
		out.SinceTime = q.SinceTime
		if first > 0 {
			out.SinceSeq = first - 1
			// Dropped events are older than every kept one: they may be
			// at or after the time only when no kept one is before it.
			out.Lost = lost && first == kept
		} else {
			out.SinceSeq, out.UntilSeq = tail, tail
			out.Lost = false // every kept event is before the time, so none after it was dropped
		}
	}
	// What the kernel watch cannot hear is lost too: the scan says so of a
	// loss mark in the range (the journal marks a hole when it is made),
	// and a directory still unwatched (the inotify limit), at, above or
	// under the path asked about, makes every range up to now lost.
	scope := q.Path
	if scope == "" {
		scope = "/"
	}
	out.Lost = out.Lost || s.Watch().UnheardNear(scope)
	rows := f.rows()
	out.Rows, out.Truncated = checkRows(ctx, s, rows, &q)
	var sc *startContent
	startOf := func() *startContent {
		switch {
		case sc != nil:
		case q.SinceFork != nil:
			sc = forkContentOf(q.SinceFork)
		default:
			sc = startContentOf(ctx, s, cp, out.SinceSeq)
		}
		return sc
	}
	for i := range out.Rows {
		if r := &out.Rows[i]; r.maybeExisted && r.Change == Added && startOf().existed(r.Path) {
			r.Change = Modified // saved by a rename over itself
		}
	}
	if q.Diff {
		diffRows(ctx, s, out.Rows, &q, startOf)
	}
	return out, nil
}

func (q *Query) check() error {
	n := 0
	if q.SinceSeq != 0 {
		n++
	}
	if !q.SinceTime.IsZero() {
		n++
	}
	if q.SinceCheckpoint != "" {
		n++
	}
	if q.SinceFork != nil {
		n++
	}
	if n > 1 {
		return fmt.Errorf("%w: more than one start point", ErrQuery)
	}
	if q.Limit < 0 || q.Limit > MaxLimit || q.MaxDiffBytes < 0 {
		return fmt.Errorf("%w: limit out of range", ErrQuery)
	}
	switch q.Origin {
	case "", journal.API, journal.Mirror, journal.External:
	default:
		return fmt.Errorf("%w: origin is not api, fuse or external", ErrQuery)
	}
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	if q.MaxDiffBytes == 0 {
		q.MaxDiffBytes = DefaultMaxDiffBytes
	}
	return nil
}

// checkRows filters rows by q.Path, checks them against the tree (see the
// rules above), sorts them by path and keeps q.Limit; truncated says more
// were left.
func checkRows(ctx context.Context, s *core.Sandbox, rows []Row, q *Query) ([]Row, bool) {
	sort.Slice(rows, func(i, j int) bool { return rows[i].Path < rows[j].Path })
	has := make(map[string]bool, len(rows))
	for _, r := range rows {
		has[r.Path] = true
	}
	out := make([]Row, 0, min(len(rows), q.Limit))
	var moved []Row // renamed rows whose path is gone: deleted at their old path
	truncated := false
	for _, r := range rows {
		if q.Path != "" && !atOrUnder(r.Path, q.Path) && (r.RenamedFrom == "" || !atOrUnder(r.RenamedFrom, q.Path)) {
			continue
		}
		if len(out)+len(moved) >= q.Limit {
			truncated = true
			break
		}
		info, err := s.Lstat(ctx, r.Path)
		switch {
		case err == nil && r.Change == Deleted:
			r.Change = Modified
			fallthrough
		case err == nil:
			r.IsDir, r.Size = info.IsDir(), info.Size
		case !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR):
			// Unknown (EACCES, say): the journal's word stands.
		case r.Change == Added:
			continue
		case r.Change == Renamed:
			if !has[r.RenamedFrom] {
				r.Path, r.RenamedFrom, r.Change, r.Size = r.RenamedFrom, "", Deleted, 0
				moved = append(moved, r)
			}
			continue
		default:
			r.Change, r.Size = Deleted, 0
		}
		out = append(out, r)
	}
	if len(moved) > 0 {
		out = append(out, moved...)
		sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	}
	return out, truncated
}

// atOrUnder reports whether API path p is dir or below it.
func atOrUnder(p, dir string) bool {
	if dir == "/" || p == dir {
		return true
	}
	return len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/'
}
