package changes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/core/journal"
	"sandfs/internal/testenv"
)

// ev is an event by api actor "t" unless opts say otherwise: "dir" marks
// it a directory's, "fuse:COMM", "external" and "api:NAME" set who.
func ev(typ journal.Type, p string, opts ...string) journal.Event {
	e := journal.Event{Type: typ, Path: p, Origin: journal.API, Actor: "t"}
	for _, o := range opts {
		switch {
		case o == "dir":
			e.IsDir = true
		case strings.HasPrefix(o, "fuse:"):
			e.Origin, e.Actor, e.Comm, e.Pid = journal.Mirror, "", o[5:], 77
		case o == "external":
			e.Origin, e.Actor = journal.External, ""
		case strings.HasPrefix(o, "api:"):
			e.Actor = o[4:]
		default:
			e.OldPath = o // a rename's source
		}
	}
	return e
}

func mv(from, to string, opts ...string) journal.Event {
	return ev(journal.Rename, to, append([]string{from}, opts...)...)
}

// fmtRows is one line a row: "A /p", "R /b <- /a", with " dir" for a
// directory.
func fmtRows(rows []Row) string {
	var b []string
	for _, r := range rows {
		s := fmt.Sprintf("%c %s", strings.ToUpper(r.Change)[0], r.Path)
		if r.RenamedFrom != "" {
			s += " <- " + r.RenamedFrom
		}
		if r.IsDir {
			s += " dir"
		}
		b = append(b, s)
	}
	return strings.Join(b, "\n")
}

// TestChangesFold: every row kind, rename chains, directory renames and
// removes, the check against the tree, the filters and the limit.
func TestChangesFold(t *testing.T) {
	C, W, X, R := journal.Create, journal.Write, journal.Chmod, journal.Remove
	for _, tc := range []struct {
		name   string
		events []journal.Event
		now    map[string]string // the tree after the events (mk)
		q      Query
		want   string
		trunc  bool
	}{
		{name: "create then remove", events: []journal.Event{ev(C, "/a"), ev(W, "/a"), ev(R, "/a")}, want: ""},
		{name: "create then write", events: []journal.Event{ev(C, "/a"), ev(W, "/a")}, now: map[string]string{"a": "x"}, want: "A /a"},
		{name: "write of a pre-existing file", events: []journal.Event{ev(W, "/a")}, now: map[string]string{"a": "x"}, want: "M /a"},
		{name: "chmod of a pre-existing file", events: []journal.Event{ev(X, "/a")}, now: map[string]string{"a": "x"}, want: "M /a"},
		{name: "remove of a pre-existing file", events: []journal.Event{ev(W, "/a"), ev(R, "/a")}, want: "D /a"},
		{name: "removed then made again", events: []journal.Event{ev(R, "/a"), ev(C, "/a"), ev(W, "/a")}, now: map[string]string{"a": "x"}, want: "M /a"},
		{name: "rename", events: []journal.Event{mv("/a", "/b")}, now: map[string]string{"b": "x"}, want: "R /b <- /a"},
		{name: "rename of an added file", events: []journal.Event{ev(C, "/a"), mv("/a", "/b")}, now: map[string]string{"b": "x"}, want: "A /b"},
		{name: "rename then write", events: []journal.Event{mv("/a", "/b"), ev(W, "/b")}, now: map[string]string{"b": "x"}, want: "R /b <- /a"},
		{name: "rename chain", events: []journal.Event{mv("/a", "/b"), ev(W, "/b"), mv("/b", "/c")}, now: map[string]string{"c": "x"}, want: "R /c <- /a"},
		{name: "away and back", events: []journal.Event{mv("/a", "/b"), mv("/b", "/a")}, now: map[string]string{"a": "x"}, want: ""},
		{name: "swap", events: []journal.Event{mv("/a", "/t"), mv("/b", "/a"), mv("/t", "/b")}, now: map[string]string{"a": "x", "b": "y"},
			want: "R /a <- /b\nR /b <- /a"},
		{name: "atomic save over a file", events: []journal.Event{ev(C, "/.f.swp"), ev(W, "/.f.swp"), mv("/.f.swp", "/f")}, now: map[string]string{"f": "x"},
			want: "A /f"}, // no checkpoint says /f was there: see TestChangesCheckpointSaveByRename
		{name: "vim's save", events: []journal.Event{mv("/f", "/f~"), ev(C, "/f"), ev(W, "/f"), ev(R, "/f~")}, now: map[string]string{"f": "x"},
			want: "M /f"},
		{name: "rename over another file", events: []journal.Event{mv("/a", "/b")}, now: map[string]string{"b": "x"}, want: "R /b <- /a"},
		{name: "rename then remove", events: []journal.Event{mv("/a", "/b"), ev(R, "/b")}, want: "D /a"},
		{name: "rename, its source made again", events: []journal.Event{mv("/a", "/b"), ev(C, "/a")}, now: map[string]string{"a": "", "b": "x"},
			want: "M /a\nR /b <- /a"},
		{name: "unpaired outside rename", events: []journal.Event{ev(R, "/a", "external"), ev(journal.Rename, "/b", "external")}, now: map[string]string{"b": "x"},
			want: "D /a\nA /b"},
		{name: "directory rename moves what is under it",
			events: []journal.Event{ev(W, "/d/x"), ev(C, "/d/y"), ev(W, "/d/sub/z"), mv("/d", "/e", "dir")},
			now:    map[string]string{"e/x": "1", "e/y": "2", "e/sub/z": "3"},
			want:   "R /e <- /d dir\nR /e/sub/z <- /d/sub/z\nR /e/x <- /d/x\nA /e/y"},
		{name: "directory remove removes what is under it",
			events: []journal.Event{ev(W, "/d/x"), ev(C, "/d/y"), ev(R, "/d", "dir")},
			want:   "D /d\nD /d/x"},
		{name: "added directory", events: []journal.Event{ev(C, "/n", "dir"), ev(C, "/n/f"), ev(W, "/n/f")}, now: map[string]string{"n/f": "x"},
			want: "A /n dir\nA /n/f"},
		{name: "tree: added but gone is no row, modified but gone is deleted", events: []journal.Event{ev(C, "/a"), ev(W, "/m")}, want: "D /m"},
		{name: "tree: deleted but there is modified", events: []journal.Event{ev(R, "/a")}, now: map[string]string{"a": "back"}, want: "M /a"},
		{name: "tree: renamed but gone is deleted at its old path", events: []journal.Event{mv("/a", "/b")}, want: "D /a"},
		{name: "filter path", events: []journal.Event{ev(W, "/src/a"), ev(W, "/src2/b"), ev(W, "/c"), mv("/src/old", "/elsewhere")},
			now: map[string]string{"src/a": "", "src2/b": "", "c": "", "elsewhere": ""}, q: Query{Path: "/src"},
			want: "R /elsewhere <- /src/old\nM /src/a"},
		{name: "filter actor", events: []journal.Event{ev(W, "/a", "api:agent-1"), ev(W, "/b", "fuse:vim"), ev(W, "/c", "external"), ev(W, "/d"), ev(W, "/d", "api:agent-1")},
			now: map[string]string{"a": "", "b": "", "c": "", "d": ""}, q: Query{Actor: "agent-1"}, want: "M /a\nM /d"},
		{name: "filter actor fuse:COMM", events: []journal.Event{ev(W, "/a", "api:agent-1"), ev(W, "/b", "fuse:vim"), ev(W, "/c", "fuse:vi")},
			now: map[string]string{"a": "", "b": "", "c": ""}, q: Query{Actor: "fuse:vim"}, want: "M /b"},
		{name: "filter actor follows a rename", events: []journal.Event{ev(W, "/a", "fuse:vim"), mv("/a", "/b")},
			now: map[string]string{"b": ""}, q: Query{Actor: "fuse:vim"}, want: "R /b <- /a"},
		{name: "filter origin", events: []journal.Event{ev(W, "/a", "api:agent-1"), ev(W, "/b", "fuse:vim"), ev(W, "/c", "external")},
			now: map[string]string{"a": "", "b": "", "c": ""}, q: Query{Origin: journal.External}, want: "M /c"},
		{name: "limit", events: []journal.Event{ev(W, "/c"), ev(W, "/a"), ev(W, "/b")},
			now: map[string]string{"a": "", "b": "", "c": ""}, q: Query{Limit: 2}, want: "M /a\nM /b", trunc: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root := openTemp(t)
			mk(t, root, tc.now)
			for _, e := range tc.events {
				s.Journal().Append(e)
			}
			cs, err := Since(ctx, s, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmtRows(cs.Rows); got != tc.want {
				t.Errorf("rows:\n%s\nwant:\n%s", got, tc.want)
			}
			if cs.Truncated != tc.trunc {
				t.Errorf("truncated %v, want %v", cs.Truncated, tc.trunc)
			}
			if cs.SinceSeq != 0 || cs.UntilSeq != uint64(len(tc.events)) || cs.Lost {
				t.Errorf("since %d until %d lost %v, want 0 %d false", cs.SinceSeq, cs.UntilSeq, cs.Lost, len(tc.events))
			}
		})
	}
}

func openTemp(t *testing.T) (*core.Sandbox, string) {
	t.Helper()
	root := t.TempDir()
	s, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, root
}

// TestChangesWho: a row's first and last events, count and actors follow
// its content through vim's save (the file renamed to a backup, written
// anew, the backup removed).
func TestChangesWho(t *testing.T) {
	s, root := openTemp(t)
	mk(t, root, map[string]string{"f": "x", "g": "y"})
	j := s.Journal()
	j.Append(mv("/f", "/f~", "fuse:vim"))
	j.Append(ev(journal.Create, "/f", "fuse:vim"))
	j.Append(ev(journal.Write, "/f", "fuse:vim"))
	j.Append(ev(journal.Write, "/g", "external"))
	j.Append(ev(journal.Remove, "/f~", "fuse:vim"))
	j.Append(ev(journal.Chmod, "/f", "api:agent-1"))
	j.Append(ev(journal.Write, "/f", "fuse:vim"))
	cs, err := Since(ctx, s, Query{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmtRows(cs.Rows); got != "M /f\nM /g" {
		t.Fatalf("rows %q", got)
	}
	f, g := cs.Rows[0], cs.Rows[1]
	if f.First.Seq != 1 || f.Last.Seq != 7 || f.Events != 6 || strings.Join(f.Actors, ",") != "fuse:vim,agent-1" || f.Size != 1 {
		t.Errorf("/f: first %d last %d events %d actors %v size %d", f.First.Seq, f.Last.Seq, f.Events, f.Actors, f.Size)
	}
	if g.First.Seq != 4 || g.Last.Seq != 4 || g.Events != 1 || strings.Join(g.Actors, ",") != "external" {
		t.Errorf("/g: first %d last %d events %d actors %v", g.First.Seq, g.Last.Seq, g.Events, g.Actors)
	}
}

// TestChangesSince: the start points, and what the query refuses.
func TestChangesSince(t *testing.T) {
	s, root := openTemp(t)
	mk(t, root, map[string]string{"a": "", "b": "", "c": ""})
	j := s.Journal()
	j.Append(ev(journal.Write, "/a"))
	mid := j.Append(ev(journal.Write, "/b"))
	j.Append(ev(journal.Write, "/c"))
	for _, tc := range []struct {
		name  string
		q     Query
		want  string
		since uint64
	}{
		{"oldest", Query{}, "M /a\nM /b\nM /c", 0},
		{"seq", Query{SinceSeq: 1}, "M /b\nM /c", 1},
		{"time", Query{SinceTime: mid.Time}, "M /b\nM /c", 1},
		{"time after all", Query{SinceTime: mid.Time.Add(24 * 3600e9)}, "", 3},
		{"seq at the end", Query{SinceSeq: 3}, "", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := Since(ctx, s, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmtRows(cs.Rows); got != tc.want || cs.SinceSeq != tc.since || cs.UntilSeq != 3 {
				t.Errorf("rows %q since %d until %d; want %q since %d until 3", got, cs.SinceSeq, cs.UntilSeq, tc.want, tc.since)
			}
		})
	}
	for _, q := range []Query{
		{SinceSeq: 1, SinceTime: mid.Time},
		{Origin: "nobody"},
		{Limit: -1},
		{Limit: MaxLimit + 1},
	} {
		if _, err := Since(ctx, s, q); !errors.Is(err, ErrQuery) {
			t.Errorf("%+v: %v, want ErrQuery", q, err)
		}
	}
	if _, err := Since(ctx, s, Query{SinceCheckpoint: "cp_nope"}); !errors.Is(err, checkpoint.ErrUnknown) {
		t.Errorf("unknown checkpoint: %v", err)
	}
}

// TestChangesLost: a start point older than the ring is told as lost.
func TestChangesLost(t *testing.T) {
	s, root := openTemp(t)
	mk(t, root, map[string]string{"a": ""})
	for i := 0; i < journal.RingSize+5; i++ {
		s.Journal().Append(ev(journal.Write, "/a"))
	}
	cs, err := Since(ctx, s, Query{SinceSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !cs.Lost || fmtRows(cs.Rows) != "M /a" || cs.Rows[0].Events != journal.RingSize {
		t.Errorf("lost %v rows %q", cs.Lost, fmtRows(cs.Rows))
	}
	if cs, _ := Since(ctx, s, Query{}); cs.Lost || cs.SinceSeq != 5 {
		t.Errorf("oldest: lost %v since %d, want false 5", cs.Lost, cs.SinceSeq)
	}
	// Since a time: lost when the first kept event is already at or after
	// it, not when a kept event is before it.
	var firstKept, secondKept journal.Event
	s.Journal().Scan(context.Background(), 0, func(e journal.Event) bool {
		if firstKept.Seq == 0 {
			firstKept = e
			return true
		}
		secondKept = e
		return e.Time.Equal(firstKept.Time) // the clock may not tick between two appends
	})
	if cs, _ := Since(ctx, s, Query{SinceTime: firstKept.Time}); !cs.Lost || cs.SinceSeq != firstKept.Seq-1 {
		t.Errorf("since the first kept event's time: lost %v since %d", cs.Lost, cs.SinceSeq)
	}
	if !secondKept.Time.After(firstKept.Time) {
		testenv.Skip(t, nil, "no two kept events have different times")
	}
	if cs, _ := Since(ctx, s, Query{SinceTime: secondKept.Time}); cs.Lost || cs.SinceSeq != secondKept.Seq-1 {
		t.Errorf("since a later time: lost %v since %d, want false %d", cs.Lost, cs.SinceSeq, secondKept.Seq-1)
	}
}

// TestChangesFoldAllocs: an event on a path the fold already holds
// allocates nothing.
func TestChangesFoldAllocs(t *testing.T) {
	q := Query{Actor: "agent-1"}
	q.check()
	f := newFolder(&q)
	events := []journal.Event{ev(journal.Write, "/a", "api:agent-1"), ev(journal.Chmod, "/b", "fuse:vim"), ev(journal.Write, "/a", "external"),
		mv("/b", "/c", "fuse:vim"), mv("/c", "/b", "fuse:vim")}
	for i := range events {
		f.add(&events[i])
	}
	if n := testing.AllocsPerRun(100, func() {
		for i := range events {
			f.add(&events[i])
		}
	}); n != 0 {
		t.Errorf("%.1f allocations a run of %d events, want 0", n, len(events))
	}
}
