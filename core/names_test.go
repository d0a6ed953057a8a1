package core

import (
	"io/fs"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"sandfs/internal/testenv"
)

// TestNamesNotUTF8AreNotReported: List and Walk (and grep, in its own
// package) leave out and count
// the names that are not UTF-8 (and do not descend such a directory); every
// name they report is valid, distinct and names its own file.
func TestNamesNotUTF8AreNotReported(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		testenv.BadNames(t, root)
		want := []string{"/a\uFFFD", "/ok"}
		check := func(t *testing.T, what string, got []string, c *SkippedNames) {
			t.Helper()
			sort.Strings(got)
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s: got %q, want %q", what, got, want)
			}
			if c.Count() != 3 {
				t.Errorf("%s: skipped %d, want 3 (a\\xff, a\\xfe, b\\xff)", what, c.Count())
			}
			for _, p := range got {
				if !utf8.ValidString(p) {
					t.Errorf("%s: reported %q", what, p)
				}
			}
		}
		t.Run("list", func(t *testing.T) {
			c, sk := WithSkippedNames(ctx)
			infos, _, err := s.List(c, "/", 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, in := range infos {
				got = append(got, in.Path)
			}
			check(t, "List", got, sk)
		})
		t.Run("walk", func(t *testing.T) {
			c, sk := WithSkippedNames(ctx)
			var got []string
			err := s.Walk(c, "/", WalkOptions{}, func(e WalkEntry) error {
				got = append(got, e.Path)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			check(t, "Walk", got, sk)
		})
		t.Run("round trip", func(t *testing.T) {
			f, _, err := s.OpenFile(ctx, "/a\uFFFD")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b := make([]byte, 16)
			n, _ := f.Read(b)
			if got := string(b[:n]); got != "fffd\nneedle\n" {
				t.Errorf("/a\\uFFFD reads %q, want its own content", got)
			}
		})
		t.Run("no counter", func(t *testing.T) {
			// Without a counter in the context the names are left out all the same.
			err := s.Walk(ctx, "/", WalkOptions{}, func(e WalkEntry) error {
				if !utf8.ValidString(e.Path) {
					t.Errorf("reported %q", e.Path)
				}
				return nil
			})
			if err != nil && err != fs.SkipAll {
				t.Fatal(err)
			}
		})
	})
}
