package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// TestDirGuard: a held Dir whose directory an outside rename moved, told
// by the watch before the Dir's calls (the mirror has not let it go yet),
// tells its changes under the directory's path now, or, once the directory
// is outside the root, not at all. Either way no event names the old path
// after the move was told.
func TestDirGuard(t *testing.T) {
	mirror := WithActor(ctx, Actor{Origin: journal.Mirror, Name: "fuse"})
	calls := []struct {
		name string
		call func(a *Dir) error
		want string // the event, with the directory's path as D
	}{
		{"mkdir", func(a *Dir) error { _, err := a.Mkdir(mirror, "m", 0o755, -1, -1); return err }, "create D/m"},
		{"create", func(a *Dir) error {
			h, _, err := a.Create(mirror, "c", unix.O_WRONLY, 0o644, -1, -1)
			if err == nil {
				h.Release(mirror)
				h.f.Close()
			}
			return err
		}, "create D/c"},
		{"symlink", func(a *Dir) error { _, err := a.Symlink(mirror, "x", "l", -1, -1); return err }, "create D/l"},
		{"chmod", func(a *Dir) error {
			_, err := a.Setattr(mirror, "before", SetAttr{Mode: ptr(uint32(0o600))})
			return err
		}, "chmod D/before"},
		{"chmod itself", func(a *Dir) error { _, err := a.Setattr(mirror, "", SetAttr{Mode: ptr(uint32(0o700))}); return err }, "chmod D"},
		{"rename", func(a *Dir) error { return a.Rename(mirror, "before", a, "after", 0) }, "rename D/after <- D/before"},
		{"unlink", func(a *Dir) error { return a.Unlink(mirror, "before") }, "remove D/before"},
	}
	for _, c := range calls {
		for _, out := range []bool{false, true} {
			where := map[bool]string{false: "moved in the root", true: "moved out"}[out]
			t.Run(c.name+"/"+where, func(t *testing.T) {
				s, root, w := watched(t)
				top := s.RootDir()
				if _, err := top.Mkdir(ctx, "a", 0o755, -1, -1); err != nil {
					t.Fatal(err)
				}
				a := childDir(s, top, "a", true)
				if _, err := a.Mknod(ctx, "before", unix.S_IFREG|0o644, 0, -1, -1); err != nil {
					t.Fatal(err)
				}
				if !a.Held() {
					t.Fatal("not held")
				}
				to, dir := filepath.Join(root, "b"), "/b"
				if out {
					to, dir = filepath.Join(t.TempDir(), "away"), ""
				}
				if err := os.Rename(filepath.Join(root, "a"), to); err != nil {
					t.Fatal(err)
				}
				cursor := s.Journal().Seq()
				moved := settle(t, s, w, cursor) // the watch tells the move
				if len(moved) == 0 {
					t.Fatal("the move was not told")
				}
				cursor = moved[len(moved)-1].Seq
				if err := c.call(a); err != nil {
					t.Fatalf("held, after the move: %v", err)
				}
				var got []string
				for _, e := range settle(t, s, w, cursor) {
					if e.Origin != journal.Mirror {
						continue
					}
					ev := string(e.Type) + " " + e.Path
					if e.OldPath != "" {
						ev += " <- " + e.OldPath
					}
					got = append(got, ev)
				}
				want := []string{strings.ReplaceAll(c.want, "D", dir)}
				if out {
					want = nil
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("told %q, want %q", got, want)
				}
			})
		}
	}
}
