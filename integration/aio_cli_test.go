package integration

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The AIO client verbs (grep, find, cp, download, tar) against a real
// daemon: what they print, their exit status, the files they leave.

func TestCLIAIOVerbs(t *testing.T) {
	d := startDaemon(t)
	local := t.TempDir()
	big := string(binaryPayload(3<<20+7, 11))
	writeFiles(t, d.Root, map[string]string{
		"proj/main.go":          "package main\n\nfunc main() {\n\t// TODO: argv\n}\n",
		"proj/util.py":          "import sys\n# TODO later\n",
		"proj/.git/HEAD":        "TODO in git\n",
		"proj/sub/notes.md":     "nothing here\n",
		"proj/sub/deep/x.go":    "package deep // TODO deep\n",
		"dl/big.bin":            big,
		"cp/src.txt":            "copy me",
		"cp/exists.txt":         "keep",
		"tree/src/a.txt":        "a",
		"tree/src/sub/b.txt":    "bb",
		"tree/src/empty/":       "",
		"tree/existing/old.txt": "old",
	})
	if err := os.Symlink("sub/b.txt", filepath.Join(d.Root, "tree/src/link")); err != nil {
		t.Fatal(err)
	}

	t.Run("grep", func(t *testing.T) {
		r := d.CLI(t, nil, "grep", "TODO", "/proj")
		want := "/proj/main.go:4:\t// TODO: argv\n/proj/sub/deep/x.go:1:package deep // TODO deep\n/proj/util.py:2:# TODO later\n"
		if r.Code != 0 || r.Stdout != want {
			t.Errorf("got %s\nwant stdout %q", r, want)
		}
		r = d.CLI(t, nil, "grep", "--type", "go", "-i", "-B", "1", "todo:", "/proj")
		want = "/proj/main.go-3-func main() {\n/proj/main.go:4:\t// TODO: argv\n"
		if r.Code != 0 || r.Stdout != want {
			t.Errorf("got %s\nwant stdout %q", r, want)
		}
		r = d.CLI(t, nil, "grep", "--max-results", "1", "TODO", "/proj")
		if r.Code != 0 || strings.Count(r.Stdout, "\n") != 1 || !strings.Contains(r.Stderr, "more matches") {
			t.Errorf("truncated: %s", r)
		}
		r = d.CLI(t, nil, "grep", "--json", "argv", "/proj/main.go")
		if r.Code != 0 || !strings.Contains(r.Stdout, `"match_count":1`) {
			t.Errorf("--json: %s", r)
		}
		if r = d.CLI(t, nil, "grep", "a(b", "/proj"); r.Code != 3 || !strings.Contains(r.Stderr, "invalid pattern") {
			t.Errorf("bad regex: %s", r)
		}
		if r = d.CLI(t, nil, "grep", "x", "/nope"); r.Code != 2 {
			t.Errorf("missing path: %s", r)
		}
	})

	t.Run("find", func(t *testing.T) {
		r := d.CLI(t, nil, "find", "/proj", "**/*.go")
		lines := strings.Fields(r.Stdout)
		sort.Strings(lines)
		if r.Code != 0 || !reflect.DeepEqual(lines, []string{"/proj/main.go", "/proj/sub/deep/x.go"}) {
			t.Errorf("got %s", r)
		}
		if r = d.CLI(t, nil, "find", "/nope", "*"); r.Code != 2 {
			t.Errorf("missing path: %s", r)
		}
	})

	t.Run("cp", func(t *testing.T) {
		if r := d.CLI(t, nil, "cp", "/cp/src.txt", "/cp/new.txt"); r.Code != 0 || r.Stdout != "" {
			t.Errorf("cp: %s", r)
		}
		if got := readFile(t, filepath.Join(d.Root, "cp/new.txt")); got != "copy me" {
			t.Errorf("copied: %q", got)
		}
		if r := d.CLI(t, nil, "cp", "/cp/src.txt", "/cp/exists.txt"); r.Code != 3 {
			t.Errorf("onto an existing file: %s", r)
		}
		if got := readFile(t, filepath.Join(d.Root, "cp/exists.txt")); got != "keep" {
			t.Errorf("clobbered: %q", got)
		}
		if r := d.CLI(t, nil, "cp", "-f", "/cp/src.txt", "/cp/exists.txt"); r.Code != 0 {
			t.Errorf("cp -f: %s", r)
		}
		if got := readFile(t, filepath.Join(d.Root, "cp/exists.txt")); got != "copy me" {
			t.Errorf("cp -f: %q", got)
		}
		if r := d.CLI(t, nil, "cp", "/cp/none", "/cp/x"); r.Code != 2 {
			t.Errorf("missing source: %s", r)
		}
	})

	t.Run("download", func(t *testing.T) {
		dst := filepath.Join(local, "got.bin")
		r := d.CLI(t, nil, "download", "/dl/big.bin", dst)
		if r.Code != 0 || r.Stdout != "" || r.Stderr != "" {
			t.Errorf("download: %s", r) // no terminal: no progress bar
		}
		if got := readFile(t, dst); got != big {
			t.Errorf("downloaded %d bytes, want %d identical", len(got), len(big))
		}
		r = d.CLI(t, nil, "download", "--abort-on-change", "/dl/big.bin", "-")
		if r.Code != 0 || r.Stdout != big {
			t.Errorf("download to stdout: exit %d, %d bytes", r.Code, len(r.Stdout))
		}
		if r = d.CLI(t, nil, "download", "/dl/none", filepath.Join(local, "none")); r.Code != 2 {
			t.Errorf("missing: %s", r)
		}
		assertMissing(t, filepath.Join(local, "none"))
		assertMissing(t, filepath.Join(local, "none.sandfs-download"))
	})

	t.Run("tar", func(t *testing.T) {
		r := d.CLI(t, nil, "tar", "/tree/src")
		if r.Code != 0 {
			t.Fatalf("tar: %s", r)
		}
		var names []string
		tr := tar.NewReader(strings.NewReader(r.Stdout))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("reading the tar: %v", err)
			}
			names = append(names, h.Name)
		}
		if want := []string{"a.txt", "empty/", "link", "sub/", "sub/b.txt"}; !reflect.DeepEqual(names, want) {
			t.Errorf("entries %q, want %q", names, want)
		}
		archive := filepath.Join(local, "src.tar")
		if err := os.WriteFile(archive, []byte(r.Stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		r = d.CLI(t, nil, "tar", "--extract", archive, "--mode", "rename", "/tree/copy")
		if r.Code != 0 || r.Stdout != "5\n" {
			t.Errorf("extract: %s", r)
		}
		if got := readFile(t, filepath.Join(d.Root, "tree/copy/sub/b.txt")); got != "bb" {
			t.Errorf("extracted: %q", got)
		}
		if l, err := os.Readlink(filepath.Join(d.Root, "tree/copy/link")); err != nil || l != "sub/b.txt" {
			t.Errorf("link: %q %v", l, err)
		}
		if r = d.CLI(t, nil, "tar", "--extract", archive, "--mode", "rename", "/tree/existing"); r.Code != 3 {
			t.Errorf("rename onto an existing dir: %s", r)
		}
		// From stdin, merged.
		r = d.CLI(t, readFileBytes(t, archive), "tar", "--extract", "-", "/tree/existing")
		if r.Code != 0 {
			t.Errorf("extract from stdin: %s", r)
		}
		if got := readFile(t, filepath.Join(d.Root, "tree/existing/old.txt")); got != "old" {
			t.Errorf("merge lost old.txt: %q", got)
		}
		// A hostile archive is refused with nothing written.
		var evil bytes.Buffer
		tw := tar.NewWriter(&evil)
		tw.WriteHeader(&tar.Header{Name: "fine.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		tw.Write([]byte("x"))
		tw.WriteHeader(&tar.Header{Name: "../../escape", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		tw.Write([]byte("x"))
		tw.Close()
		if r = d.CLI(t, evil.Bytes(), "tar", "--extract", "-", "/tree/evil"); r.Code != 3 {
			t.Errorf("hostile archive: %s", r)
		}
		assertMissing(t, filepath.Join(d.Root, "tree/evil"))
		assertMissing(t, filepath.Join(d.Root, "escape"))
		if r = d.CLI(t, nil, "tar", "/tree/none"); r.Code != 2 {
			t.Errorf("tar of a missing dir: %s", r)
		}
	})
}

func readFileBytes(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
