package tar

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/internal/testenv"

	"golang.org/x/sys/unix"
)

func TestExtractTarRefusesHostileArchives(t *testing.T) {
	cases := []struct {
		name    string
		entries []testenv.TarEntry
	}{
		{"dotdot", []testenv.TarEntry{{Name: "ok", Body: "x"}, {Name: "../evil", Body: "x"}}},
		{"dotdot inside", []testenv.TarEntry{{Name: "a/../../evil", Body: "x"}}},
		{"dotdot dir", []testenv.TarEntry{{Name: "a/../", Typ: tar.TypeDir}}},
		{"absolute", []testenv.TarEntry{{Name: "/etc/evil", Body: "x"}}},
		{"file through symlink", []testenv.TarEntry{{Name: "sub/", Typ: tar.TypeDir}, {Name: "l", Typ: tar.TypeSymlink, Link: "sub"}, {Name: "l/x", Body: "x"}}},
		{"dir through symlink", []testenv.TarEntry{{Name: "sub/", Typ: tar.TypeDir}, {Name: "l", Typ: tar.TypeSymlink, Link: "sub"}, {Name: "l/d/", Typ: tar.TypeDir}}},
		{"symlink out relative", []testenv.TarEntry{{Name: "s", Typ: tar.TypeSymlink, Link: "../outside"}}},
		{"symlink out deep", []testenv.TarEntry{{Name: "a/b/s", Typ: tar.TypeSymlink, Link: "../../../x"}}},
		{"symlink out through a name", []testenv.TarEntry{{Name: "a/s", Typ: tar.TypeSymlink, Link: "b/../../x"}}},
		{"symlink absolute", []testenv.TarEntry{{Name: "s", Typ: tar.TypeSymlink, Link: "/etc"}, {Name: "s/passwd", Body: "x"}}},
		{"hard link out", []testenv.TarEntry{{Name: "h", Typ: tar.TypeLink, Link: "../outside/secret"}}},
		{"hard link absolute", []testenv.TarEntry{{Name: "h", Typ: tar.TypeLink, Link: "/etc/passwd"}}},
		{"hard link to nothing earlier", []testenv.TarEntry{{Name: "h", Typ: tar.TypeLink, Link: "later"}, {Name: "later", Body: "x"}}},
		{"char device", []testenv.TarEntry{{Name: "null", Typ: tar.TypeChar}}},
		{"block device", []testenv.TarEntry{{Name: "sda", Typ: tar.TypeBlock}}},
		{"fifo", []testenv.TarEntry{{Name: "p", Typ: tar.TypeFifo}}},
		{"file replaces dir", []testenv.TarEntry{{Name: "d/", Typ: tar.TypeDir}, {Name: "d/x", Body: "1"}, {Name: "d", Body: "x"}}},
	}
	for _, dest := range []string{"/dest", "/newdest/deeper"} {
		for _, tc := range cases {
			t.Run(dest+"/"+tc.name, func(t *testing.T) {
				// Staging uses fd-relative syscalls only, so one resolution
				// mode is enough here (the escape tests run both).
				root := t.TempDir()
				s, err := core.Open("default", root, core.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				{
					outside := testenv.EscapeFixture(t, root)
					mk(t, root, map[string]string{"dest/keep": "KEEP"})
					beforeRoot, beforeOut := snapshot(t, root), snapshot(t, outside)
					_, err := Extract(ctx, s, dest, testenv.TarOf(t, tc.entries), Options{})
					var te *EntryError
					if !errors.As(err, &te) || !errors.Is(err, unix.EINVAL) {
						t.Fatalf("got %v, want a *EntryError (EINVAL)", err)
					}
					sameSnapshot(t, "root", beforeRoot, snapshot(t, root))
					sameSnapshot(t, "outside", beforeOut, snapshot(t, outside))
				}
			})
		}
	}
}

func TestExtractTar(t *testing.T) {
	archive := []testenv.TarEntry{
		{Name: "./", Typ: tar.TypeDir},
		{Name: "a/", Typ: tar.TypeDir, Mode: 0o750},
		{Name: "a/one.txt", Body: "one", Mode: 0o600},
		{Name: "a/b/two.bin", Body: "\x00\x01two"},
		{Name: "a/link", Typ: tar.TypeSymlink, Link: "b/two.bin"},
		{Name: "a/up", Typ: tar.TypeSymlink, Link: "../top"},
		{Name: "a/hard", Typ: tar.TypeLink, Link: "a/one.txt"},
		{Name: "top", Body: "top", Mode: 0o4755},
	}
	modes(t, func(t *testing.T, s *core.Sandbox, root string) {
		mk(t, root, map[string]string{"dest/keep": "KEEP", "dest/top": "OLD", "dest/a/old": "OLD"})
		res, err := Extract(ctx, s, "/dest", testenv.TarOf(t, archive), Options{MaxPaths: 4})
		if err != nil {
			t.Fatal(err)
		}
		if res.Entries != 7 || !res.Truncated || strings.Join(res.Paths, ",") != "/dest/a,/dest/a/one.txt,/dest/a/b/two.bin,/dest/a/link" {
			t.Errorf("result %+v", res)
		}
		want := map[string]string{"keep": "KEEP", "top": "top", "a/old": "OLD", "a/one.txt": "one", "a/b/two.bin": "\x00\x01two", "a/link": "\x00\x01two", "a/hard": "one"}
		for p, content := range want {
			b, err := os.ReadFile(filepath.Join(root, "dest", p))
			if err != nil || string(b) != content {
				t.Errorf("%s = %q, %v; want %q", p, b, err, content)
			}
		}
		st, _ := os.Stat(filepath.Join(root, "dest/top"))
		if st.Mode() != 0o755 {
			t.Errorf("top mode %v, want 0755 (setuid dropped)", st.Mode())
		}
		if !st.ModTime().Equal(time.Unix(1700000000, 0)) {
			t.Errorf("top mtime %v", st.ModTime())
		}
		if st, _ := os.Stat(filepath.Join(root, "dest/a")); st.Mode().Perm() != 0o750 {
			t.Errorf("a mode %v, want 0750", st.Mode())
		}
		var a, b unix.Stat_t
		unix.Stat(filepath.Join(root, "dest/a/hard"), &a)
		unix.Stat(filepath.Join(root, "dest/a/one.txt"), &b)
		if a.Ino != b.Ino {
			t.Error("a/hard is not a hard link of a/one.txt")
		}
		leftovers, _ := filepath.Glob(filepath.Join(root, "dest", ".sandfs-*"))
		if len(leftovers) != 0 {
			t.Errorf("staging left behind: %v", leftovers)
		}

		// A new destination is made with its parents, by one rename.
		if _, err := Extract(ctx, s, "/new/deep", testenv.TarOf(t, archive), Options{Mode: Rename}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "new/deep/a/link")); string(b) != "\x00\x01two" {
			t.Errorf("new/deep/a/link = %q", b)
		}
		// Rename mode refuses an existing destination.
		if _, err := Extract(ctx, s, "/new/deep", testenv.TarOf(t, archive), Options{Mode: Rename}); !errors.Is(err, unix.EEXIST) {
			t.Errorf("rename onto existing: %v, want EEXIST", err)
		}
		leftovers, _ = filepath.Glob(filepath.Join(root, "new", ".sandfs-*"))
		if len(leftovers) != 0 {
			t.Errorf("staging left behind: %v", leftovers)
		}
	})
}

func TestExtractTarLimits(t *testing.T) {
	root := t.TempDir()
	s, err := core.Open("default", root, core.Options{Limits: core.Limits{TarEntries: 2, TarBytes: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name    string
		entries []testenv.TarEntry
	}{
		{"entries", []testenv.TarEntry{{Name: "a", Body: "1"}, {Name: "b", Body: "2"}, {Name: "c", Body: "3"}}},
		{"bytes", []testenv.TarEntry{{Name: "a", Body: "123"}, {Name: "b", Body: "456"}}},
	} {
		before := snapshot(t, root)
		_, err := Extract(ctx, s, "/", testenv.TarOf(t, tc.entries), Options{})
		if !errors.Is(err, unix.EFBIG) {
			t.Errorf("%s: got %v, want EFBIG", tc.name, err)
		}
		sameSnapshot(t, tc.name, before, snapshot(t, root))
	}
	// A truncated archive is refused too.
	full := testenv.TarOf(t, []testenv.TarEntry{{Name: "a", Body: "12345"}}).(*bytes.Buffer).Bytes()
	if _, err := Extract(ctx, s, "/", bytes.NewReader(full[:515]), Options{}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("truncated archive: %v, want EINVAL", err)
	}
	if ents, _, _ := s.List(ctx, "/", 0); len(ents) != 0 {
		t.Errorf("root not empty after refusals: %v", ents)
	}
}

func TestWriteTarRoundTrip(t *testing.T) {
	root := t.TempDir()
	s, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk(t, root, map[string]string{
		"src/a.txt": "a", "src/sub/b.txt": "bb", "src/empty/": "", "src/rel": "->sub/b.txt", "src/abs": "->/etc/passwd",
		"outside.txt": "x",
	})
	var buf bytes.Buffer
	if err := Write(ctx, s, "/src", &buf); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(buf.Bytes()))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n := h.Name
		if h.Typeflag == tar.TypeSymlink {
			n += " -> " + h.Linkname
		}
		names = append(names, n)
	}
	want := []string{"a.txt", "abs -> /etc/passwd", "empty/", "rel -> sub/b.txt", "sub/", "sub/b.txt"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("entries:\n got %q\nwant %q", names, want)
	}
	if err := Write(ctx, s, "/src/a.txt", io.Discard); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("tar of a file: got %v, want ENOTDIR", err)
	}
}
