package history

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/core/journal"
)

// A journal begun after a seq numbers on after it, tells a scan from
// before it that events were lost there, and a second Begin is refused.
func TestBeginNumbersAfter(t *testing.T) {
	dir := t.TempDir()
	if err := Begin(dir, 41, nil); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, Retention{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.NewWith(l)
	if err != nil {
		t.Fatal(err)
	}
	if e := j.Append(journal.Event{Type: journal.Create, Path: "/a"}); e.Seq != 42 {
		t.Fatalf("the first event after Begin(41) has seq %d, want 42", e.Seq)
	}
	var seen []uint64
	lost, err := j.Scan(context.Background(), 0, func(e journal.Event) bool { seen = append(seen, e.Seq); return true })
	if err != nil || !lost || len(seen) != 1 || seen[0] != 42 {
		t.Fatalf("scan from 0: events %v, lost %v, %v; want [42], lost", seen, lost, err)
	}
	l.Close()
	if err := Begin(dir, 7, nil); err == nil {
		t.Fatal("Begin on a journal that holds events: no error")
	}
}

// A seq mark left by an earlier sandbox of the name, above the seq asked
// for, is numbered above.
func TestBeginKeepsTheMark(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "seqmark"), []byte("00000000000000000100\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Begin(dir, 41, nil); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, Retention{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Newest() != 100 {
		t.Fatalf("begun after 41 over a mark at 100: numbers on after %d, want 100", l.Newest())
	}
}

// A journal numbered above a seq another host handed out keeps its own
// events, numbers on after the seq, tells a cursor before it the loss,
// and reads on from a cursor at it; one already past it is left alone.
func TestNumberAbove(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Retention{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.NewWith(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/a", "/b"} {
		j.Append(journal.Event{Type: journal.Create, Path: p})
	}
	l.Close()
	if n, err := NumberAbove(dir, 40, nil); err != nil || n != 40 {
		t.Fatalf("NumberAbove(40) over seqs 1-2: %d, %v; want 40", n, err)
	}
	if n, err := NumberAbove(dir, 7, nil, "pub_cursor"); err != nil || n != 40 {
		t.Fatalf("NumberAbove(7) over a journal at 40: %d, %v; want 40 (left alone)", n, err)
	}
	l, err = Open(dir, Retention{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The cursor named is at the seq numbered after: nothing up to it is
	// handed on.
	if v, err := l.Meta("pub_cursor"); err != nil || v != "40" {
		t.Fatalf("the cursor after NumberAbove: %q, %v; want 40", v, err)
	}
	j, err = journal.NewWith(l)
	if err != nil {
		t.Fatal(err)
	}
	if e := j.Append(journal.Event{Type: journal.Create, Path: "/c"}); e.Seq != 41 {
		t.Fatalf("the first event after NumberAbove(40) has seq %d, want 41", e.Seq)
	}
	scan := func(from uint64) ([]string, bool) {
		var seen []string
		lost, err := j.Scan(context.Background(), from, func(e journal.Event) bool { seen = append(seen, e.Path); return true })
		if err != nil {
			t.Fatal(err)
		}
		return seen, lost
	}
	if seen, lost := scan(0); !lost || len(seen) != 3 || seen[2] != "/c" {
		t.Fatalf("scan from 0: %v, lost %v; want /a /b /c, lost", seen, lost)
	}
	if seen, lost := scan(40); lost || len(seen) != 1 || seen[0] != "/c" {
		t.Fatalf("scan from 40: %v, lost %v; want /c, nothing lost", seen, lost)
	}
}

// An open journal numbered above a seq (a held root taken up again) ends
// as one numbered closed and opened again: its own events kept, a cursor
// before the seq told the loss, one at it reading on, the ring and the
// next seq after it.
func TestNumberAboveOpen(t *testing.T) {
	l, err := Open(t.TempDir(), Retention{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	j, err := journal.NewWith(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/a", "/b"} {
		j.Append(journal.Event{Type: journal.Create, Path: p})
	}
	if n, ok := j.NumberAbove(40, 1); ok || n != 2 || j.Seq() != 2 {
		t.Fatalf("NumberAbove(40) at 1 over seqs 1-2: %d, %v, seq %d; want 2, refused", n, ok, j.Seq())
	}
	if n, ok := j.NumberAbove(40, 2); !ok || n != 40 || j.Seq() != 40 {
		t.Fatalf("NumberAbove(40) at 2 over seqs 1-2: %d, %v, seq %d; want 40", n, ok, j.Seq())
	}
	if n, ok := j.NumberAbove(7, 40); !ok || n != 40 {
		t.Fatalf("NumberAbove(7) over a journal at 40: %d, %v; want 40 (left alone)", n, ok)
	}
	if e := j.Append(journal.Event{Type: journal.Create, Path: "/c"}); e.Seq != 41 {
		t.Fatalf("the first event after NumberAbove(40) has seq %d, want 41", e.Seq)
	}
	for _, tc := range []struct {
		from uint64
		want string
		lost bool
	}{{0, "/a /b /c", true}, {2, "/c", true}, {40, "/c", false}, {41, "", false}} {
		var seen []string
		lost, err := j.Scan(context.Background(), tc.from, func(e journal.Event) bool {
			if e.Type != "" {
				seen = append(seen, e.Path)
			}
			return true
		})
		if err != nil || lost != tc.lost || strings.Join(seen, " ") != tc.want {
			t.Errorf("scan from %d: %v, lost %v, %v; want %q, lost %v", tc.from, seen, lost, err, tc.want, tc.lost)
		}
	}
	if evs, lost := j.Since(40, 10); lost || len(evs) != 1 || evs[0].Path != "/c" || evs[0].Seq != 41 {
		t.Errorf("the ring since 40: %+v, lost %v; want /c at 41", evs, lost)
	}
}
