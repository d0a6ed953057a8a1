package tar

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/core"
	"sandfs/internal/testenv"
)

// FuzzExtractTar feeds any bytes to Extract as a tar stream, into a
// destination inside a root full of escape routes (escapeFixture): it never
// panics, never writes outside the root, writes nothing at all when it
// fails (no entry, no staging directory left), and when it succeeds every
// new entry is under the destination.
func FuzzExtractTar(f *testing.F) {
	for _, seed := range tarSeeds() {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	root := filepath.Join(fuzzDir(f), "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		f.Fatal(err)
	}
	outside := testenv.EscapeFixture(f, root)
	s, err := core.Open("default", root, core.Options{Limits: core.Limits{TarEntries: 64, TarBytes: 1 << 20}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	clean := snapshot(f, root)
	f.Fuzz(func(t *testing.T, data []byte, rename bool) {
		mode := Merge
		if rename {
			mode = Rename
		}
		outBefore := snapshot(t, outside)
		_, err := Extract(ctx, s, "/dest", bytes.NewReader(data), Options{Mode: mode})
		sameSnapshot(t, "outside", outBefore, snapshot(t, outside))
		after := snapshot(t, root)
		if err != nil {
			sameSnapshot(t, "root after a refused archive", clean, after)
		} else {
			for k, v := range after {
				if _, ok := clean[k]; !ok && k != "dest" && !strings.HasPrefix(k, "dest/") {
					t.Fatalf("extracted %s (%s) outside the destination", k, v)
				}
			}
		}
		if err := os.RemoveAll(filepath.Join(root, "dest")); err != nil {
			t.Fatal(err)
		}
	})
}

func tarSeeds() [][]byte {
	build := func(hs ...*tar.Header) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, h := range hs {
			if h.Mode == 0 {
				h.Mode = 0o644
			}
			tw.WriteHeader(h)
			if h.Typeflag == tar.TypeReg {
				tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
			}
		}
		tw.Close()
		return b.Bytes()
	}
	reg := func(name string, size int64) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeReg, Size: size}
	}
	full := build(&tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755}, reg("d/f", 5), reg("g", 0),
		&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "d/f"},
		&tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "d/f"})
	return [][]byte{
		full,
		full[:len(full)/2],
		build(reg("../escape", 1)),
		build(reg("/abs", 1)),
		build(&tar.Header{Name: "out", Typeflag: tar.TypeSymlink, Linkname: "../../outside"}, reg("out/x", 1)),
		build(&tar.Header{Name: "abs", Typeflag: tar.TypeSymlink, Linkname: "/etc"}, reg("abs/passwd", 1)),
		build(&tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "../secret"}),
		build(&tar.Header{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}),
		build(reg(strings.Repeat("n", 300), 1)),
		build(reg(strings.Repeat("d/", 2100)+"f", 1)),
		build(reg("a", 1), &tar.Header{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755}, reg("a/b", 1)),
		build(&tar.Header{Name: "ro/", Typeflag: tar.TypeDir, Mode: 0o500}, reg("ro/f", 1)),
		{},
		bytes.Repeat([]byte{0}, 1024),
		[]byte("not a tar at all"),
	}
}

// fuzzDir is a temporary directory on tmpfs when the machine has one:
// extraction is mostly mkdir, create and unlink, which on a busy disk's
// journal cost far more than the code under test.
func fuzzDir(f *testing.F) string {
	if d, err := os.MkdirTemp("/dev/shm", "sandfs-fuzz-"); err == nil {
		f.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return f.TempDir()
}
