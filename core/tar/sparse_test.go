package tar

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sandfs/core"
	"sandfs/internal/testenv"

	"golang.org/x/sys/unix"
)

// wchar is the bytes this process has passed to write(2) and friends.
func wchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		testenv.Skip(t, nil, "no /proc/self/io: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no wchar in /proc/self/io")
	return 0
}

// A 3 KiB GNU sparse archive declaring 1 TiB is refused on its declared
// size at once: EFBIG, no byte written, nothing left behind.
func TestExtractTarSparseDeclaredSize(t *testing.T) {
	archive, err := os.ReadFile("testdata/sparse-1t.tar")
	if err != nil {
		t.Fatal(err)
	}
	modes(t, func(t *testing.T, s *core.Sandbox, root string) {
		mk(t, root, map[string]string{"dest/keep": "kept"})
		for _, dest := range []string{"/dest", "/missing/new"} {
			before := snapshot(t, root)
			w0 := wchar(t)
			_, err := Extract(ctx, s, dest, bytes.NewReader(archive), Options{})
			written := wchar(t) - w0
			var te *EntryError
			if !errors.Is(err, unix.EFBIG) || !errors.As(err, &te) || !strings.Contains(te.Reason, "declares 1099511627776 bytes") {
				t.Errorf("%s: got %v, want EFBIG saying it declares 1099511627776 bytes", dest, err)
			}
			if written > 1<<20 {
				t.Errorf("%s: the process wrote %d bytes while refusing, want none of the entry's", dest, written)
			}
			sameSnapshot(t, dest, before, snapshot(t, root))
		}
	})
}

// A sparse entry within the limit is extracted whole, its holes left holes.
func TestExtractTarSparseHoles(t *testing.T) {
	for _, name := range []string{"sparse-8m.tar", "sparse-8m-gnu.tar"} {
		t.Run(name, func(t *testing.T) { extractSparse8M(t, name) })
	}
}

func extractSparse8M(t *testing.T, name string) {
	archive, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	modes(t, func(t *testing.T, s *core.Sandbox, root string) {
		res, err := Extract(ctx, s, "/x", bytes.NewReader(archive), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Bytes != 8<<20 {
			t.Errorf("Bytes %d, want %d", res.Bytes, 8<<20)
		}
		b, err := os.ReadFile(filepath.Join(root, "x/small"))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, 8<<20)
		copy(want, "head")
		copy(want[len(want)-4:], "tail")
		if !bytes.Equal(b, want) {
			t.Errorf("content differs: %d bytes, starts %q, ends %q", len(b), b[:min(8, len(b))], b[max(0, len(b)-8):])
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(root, "x/small"), &st); err != nil {
			t.Fatal(err)
		}
		t.Logf("8 MiB sparse file: %d bytes on disk", st.Blocks*512)
		if used := st.Blocks * 512; used > 64<<10 {
			t.Errorf("8 MiB sparse file takes %d bytes on disk, want its holes kept (<= 64 KiB)", used)
		}
	})
}
