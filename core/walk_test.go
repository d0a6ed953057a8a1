package core

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWalk(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{
			"d/a":         "1",
			"d/.h/x":      "",
			"d/s/b":       "22",
			"d/s/t/c":     "",
			"d/ln":        "->/other",
			"d/dead":      "->/nowhere",
			"other/inner": "",
		})
		walk := func(o WalkOptions) string {
			var got []string
			err := s.Walk(ctx, "/d", o, func(e WalkEntry) error {
				tag := e.Rel
				if e.LinkDir {
					tag += "@dir"
				}
				if e.LinkDead {
					tag += "@dead"
				}
				got = append(got, tag)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(got, ",")
		}
		for _, c := range []struct {
			o    WalkOptions
			want string
		}{
			{WalkOptions{}, ".h,.h/x,a,dead@dead,ln@dir,s,s/b,s/t,s/t/c"},
			{WalkOptions{NoHidden: true}, "a,dead@dead,ln@dir,s,s/b,s/t,s/t/c"},
			{WalkOptions{MaxDepth: 1}, ".h,a,dead@dead,ln@dir,s"},
			{WalkOptions{MaxDepth: 2, NoHidden: true}, "a,dead@dead,ln@dir,s,s/b,s/t"},
		} {
			if got := walk(c.o); got != c.want {
				t.Errorf("Walk(%+v): got %s, want %s", c.o, got, c.want)
			}
		}
		n := 0
		s.Walk(ctx, "/d", WalkOptions{}, func(e WalkEntry) error {
			n++
			if n == 2 {
				return fs.SkipAll
			}
			return nil
		})
		if n != 2 {
			t.Errorf("SkipAll: visited %d, want 2", n)
		}
		if err := s.Walk(ctx, "/d/a", WalkOptions{}, func(WalkEntry) error { return nil }); !errors.Is(err, unix.ENOTDIR) {
			t.Errorf("Walk of a file: got %v, want ENOTDIR", err)
		}
	})
}
