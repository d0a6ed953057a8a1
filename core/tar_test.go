package core

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

	"golang.org/x/sys/unix"
)

type tarEntry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func tarOf(t testing.TB, entries []tarEntry) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Size: int64(len(e.body)), ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return &buf
}

func TestExtractTarRefusesHostileArchives(t *testing.T) {
	cases := []struct {
		name    string
		entries []tarEntry
	}{
		{"dotdot", []tarEntry{{name: "ok", body: "x"}, {name: "../evil", body: "x"}}},
		{"dotdot inside", []tarEntry{{name: "a/../../evil", body: "x"}}},
		{"dotdot dir", []tarEntry{{name: "a/../", typ: tar.TypeDir}}},
		{"absolute", []tarEntry{{name: "/etc/evil", body: "x"}}},
		{"file through symlink", []tarEntry{{name: "sub/", typ: tar.TypeDir}, {name: "l", typ: tar.TypeSymlink, link: "sub"}, {name: "l/x", body: "x"}}},
		{"dir through symlink", []tarEntry{{name: "sub/", typ: tar.TypeDir}, {name: "l", typ: tar.TypeSymlink, link: "sub"}, {name: "l/d/", typ: tar.TypeDir}}},
		{"symlink out relative", []tarEntry{{name: "s", typ: tar.TypeSymlink, link: "../outside"}}},
		{"symlink out deep", []tarEntry{{name: "a/b/s", typ: tar.TypeSymlink, link: "../../../x"}}},
		{"symlink out through a name", []tarEntry{{name: "a/s", typ: tar.TypeSymlink, link: "b/../../x"}}},
		{"symlink absolute", []tarEntry{{name: "s", typ: tar.TypeSymlink, link: "/etc"}, {name: "s/passwd", body: "x"}}},
		{"hard link out", []tarEntry{{name: "h", typ: tar.TypeLink, link: "../outside/secret"}}},
		{"hard link absolute", []tarEntry{{name: "h", typ: tar.TypeLink, link: "/etc/passwd"}}},
		{"hard link to nothing earlier", []tarEntry{{name: "h", typ: tar.TypeLink, link: "later"}, {name: "later", body: "x"}}},
		{"char device", []tarEntry{{name: "null", typ: tar.TypeChar}}},
		{"block device", []tarEntry{{name: "sda", typ: tar.TypeBlock}}},
		{"fifo", []tarEntry{{name: "p", typ: tar.TypeFifo}}},
		{"file replaces dir", []tarEntry{{name: "d/", typ: tar.TypeDir}, {name: "d/x", body: "1"}, {name: "d", body: "x"}}},
	}
	for _, dest := range []string{"/dest", "/newdest/deeper"} {
		for _, tc := range cases {
			t.Run(dest+"/"+tc.name, func(t *testing.T) {
				// Staging uses fd-relative syscalls only, so one resolution
				// mode is enough here (the escape tests run both).
				root := t.TempDir()
				s, err := Open("default", root, Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				{
					outside := escapeFixture(t, root)
					mk(t, root, map[string]string{"dest/keep": "KEEP"})
					beforeRoot, beforeOut := snapshot(t, root), snapshot(t, outside)
					_, err := s.ExtractTar(ctx, dest, tarOf(t, tc.entries), TarOptions{})
					var te *TarEntryError
					if !errors.As(err, &te) || !errors.Is(err, unix.EINVAL) {
						t.Fatalf("got %v, want a *TarEntryError (EINVAL)", err)
					}
					sameSnapshot(t, "root", beforeRoot, snapshot(t, root))
					sameSnapshot(t, "outside", beforeOut, snapshot(t, outside))
				}
			})
		}
	}
}

func TestExtractTar(t *testing.T) {
	archive := []tarEntry{
		{name: "./", typ: tar.TypeDir},
		{name: "a/", typ: tar.TypeDir, mode: 0o750},
		{name: "a/one.txt", body: "one", mode: 0o600},
		{name: "a/b/two.bin", body: "\x00\x01two"},
		{name: "a/link", typ: tar.TypeSymlink, link: "b/two.bin"},
		{name: "a/up", typ: tar.TypeSymlink, link: "../top"},
		{name: "a/hard", typ: tar.TypeLink, link: "a/one.txt"},
		{name: "top", body: "top", mode: 0o4755},
	}
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"dest/keep": "KEEP", "dest/top": "OLD", "dest/a/old": "OLD"})
		res, err := s.ExtractTar(ctx, "/dest", tarOf(t, archive), TarOptions{MaxPaths: 4})
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
		if _, err := s.ExtractTar(ctx, "/new/deep", tarOf(t, archive), TarOptions{Mode: TarRename}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "new/deep/a/link")); string(b) != "\x00\x01two" {
			t.Errorf("new/deep/a/link = %q", b)
		}
		// Rename mode refuses an existing destination.
		if _, err := s.ExtractTar(ctx, "/new/deep", tarOf(t, archive), TarOptions{Mode: TarRename}); !errors.Is(err, unix.EEXIST) {
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
	s, err := Open("default", root, Options{Limits: Limits{TarEntries: 2, TarBytes: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name    string
		entries []tarEntry
	}{
		{"entries", []tarEntry{{name: "a", body: "1"}, {name: "b", body: "2"}, {name: "c", body: "3"}}},
		{"bytes", []tarEntry{{name: "a", body: "123"}, {name: "b", body: "456"}}},
	} {
		before := snapshot(t, root)
		_, err := s.ExtractTar(ctx, "/", tarOf(t, tc.entries), TarOptions{})
		if !errors.Is(err, unix.EFBIG) {
			t.Errorf("%s: got %v, want EFBIG", tc.name, err)
		}
		sameSnapshot(t, tc.name, before, snapshot(t, root))
	}
	// A truncated archive is refused too.
	full := tarOf(t, []tarEntry{{name: "a", body: "12345"}}).(*bytes.Buffer).Bytes()
	if _, err := s.ExtractTar(ctx, "/", bytes.NewReader(full[:515]), TarOptions{}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("truncated archive: %v, want EINVAL", err)
	}
	if ents, _, _ := s.List(ctx, "/", 0); len(ents) != 0 {
		t.Errorf("root not empty after refusals: %v", ents)
	}
}

func TestWriteTarRoundTrip(t *testing.T) {
	root := t.TempDir()
	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk(t, root, map[string]string{
		"src/a.txt": "a", "src/sub/b.txt": "bb", "src/empty/": "", "src/rel": "->sub/b.txt", "src/abs": "->/etc/passwd",
		"outside.txt": "x",
	})
	var buf bytes.Buffer
	if err := s.WriteTar(ctx, "/src", &buf); err != nil {
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
	if err := s.WriteTar(ctx, "/src/a.txt", io.Discard); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("tar of a file: got %v, want ENOTDIR", err)
	}
}
