package journal

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestReadPage: a page keeps the events its filter asks for (a path on
// either side of a rename, an API actor or a command on the mount, an
// origin), at most n of them, after from, with the cursor to go on.
func TestReadPage(t *testing.T) {
	j := New()
	for _, e := range []Event{
		{Type: Create, Path: "/app/a", Origin: API, Actor: "alice"},
		{Type: Write, Path: "/app/a", Origin: Mirror, Comm: "vim"},
		{Type: Rename, OldPath: "/app/a", Path: "/else/a", Origin: API, Actor: "bob"},
		{Type: Create, Path: "/apple", Origin: External},
		{Type: Remove, Path: "/else/a", Origin: API, Actor: "alice"},
	} {
		j.Append(e)
	}
	for _, c := range []struct {
		name       string
		from       uint64
		n          int
		f          Filter
		want       string // the events' seqs
		cursor     uint64
		more, lost bool
	}{
		{"all", 0, 10, Filter{}, "1 2 3 4 5", 5, false, false},
		{"root is all", 0, 10, Filter{Path: "/"}, "1 2 3 4 5", 5, false, false},
		{"path, either side of a rename, not /apple", 0, 10, Filter{Path: "/app"}, "1 2 3", 5, false, false},
		{"a file, renamed away", 0, 10, Filter{Path: "/app/a"}, "1 2 3", 5, false, false},
		{"actor", 0, 10, Filter{Actor: "alice"}, "1 5", 5, false, false},
		{"command on the mount", 0, 10, Filter{Actor: "fuse:vim"}, "2", 5, false, false},
		{"a fuse: name is not an API actor", 0, 10, Filter{Actor: "fuse:alice"}, "", 5, false, false},
		{"origin", 0, 10, Filter{Origin: External}, "4", 5, false, false},
		{"limit", 0, 2, Filter{}, "1 2", 2, true, false},
		{"from", 3, 10, Filter{}, "4 5", 5, false, false},
		{"from the newest", 5, 10, Filter{}, "", 5, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := j.ReadPage(context.Background(), c.from, c.n, c.f)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []string
			for _, e := range p.Events {
				seqs = append(seqs, fmt.Sprint(e.Seq))
			}
			if got := strings.Join(seqs, " "); got != c.want || p.Cursor != c.cursor || p.More != c.more || p.Lost != c.lost || p.Latest != 5 {
				t.Errorf("events %q cursor %d more %v lost %v latest %d; want %q %d %v %v 5", got, p.Cursor, p.More, p.Lost, p.Latest,
					c.want, c.cursor, c.more, c.lost)
			}
		})
	}
}
