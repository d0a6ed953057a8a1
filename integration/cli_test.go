package integration

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The client verbs of cmd/sandfs against a real daemon: what they print,
// their exit status, and the files they leave under the daemon's root.

// writeFiles creates files (path -> content) under dir; a path ending in
// "/" is a directory.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return string(b)
}

func assertMissing(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("%s: got err %v, want it gone", path, err)
	}
}

func binaryPayload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestCLIVerbs(t *testing.T) {
	d := startDaemon(t)
	local := t.TempDir()
	upDir := filepath.Join(local, "updir")
	upBin := string(binaryPayload(200_000, 7))
	writeFiles(t, upDir, map[string]string{
		"top.txt":              "top\n",
		"sub/b.bin":            upBin,
		"sub/deeper/c.txt":     "deep",
		"empty/":               "",
		"sub/deeper/d e f.txt": "spaces in the name",
	})
	localBin := filepath.Join(local, "local.bin")
	localBinData := string(binaryPayload(1<<20+13, 3))
	if err := os.WriteFile(localBin, []byte(localBinData), 0o644); err != nil {
		t.Fatal(err)
	}
	// Files the cases find already in the root.
	writeFiles(t, d.Root, map[string]string{
		"ls/a.txt":         "hello",
		"ls/sub/x":         "x",
		"stat/f.txt":       "twelve bytes",
		"mv/from.txt":      "from",
		"mv/exists.txt":    "exists",
		"mv/src.txt":       "new content",
		"mv/dst.txt":       "old content",
		"mv/dir/inner.txt": "inner",
		"rm/f.txt":         "f",
		"rm/full/a":        "a",
		"rm/full/b/c":      "c",
		"rm/keep/a":        "a",
		"cat/one":          "one\n",
		"cat/two":          "two",
	})

	cases := []struct {
		name   string
		args   []string
		stdin  []byte
		code   int
		stdout func(t *testing.T, out string) // nil: no check
		stderr func(t *testing.T, out string) // nil: must be empty when code is 0
		disk   func(t *testing.T, root string)
	}{
		{
			name:   "ls lists names",
			args:   []string{"ls", "/ls"},
			stdout: exactly("a.txt\nsub\n"),
		},
		{
			name: "ls -l: mode size modified name",
			args: []string{"ls", "-l", "/ls"},
			stdout: func(t *testing.T, out string) {
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				if len(lines) != 2 {
					t.Fatalf("got %d lines %q, want 2", len(lines), out)
				}
				want := [][3]string{{"-rw-r--r--", "5", "a.txt"}, {"drwxr-xr-x", "", "sub"}}
				for i, line := range lines {
					f := strings.Fields(line)
					if len(f) != 5 {
						t.Fatalf("line %q: got %d fields, want 5 (mode size date time name)", line, len(f))
					}
					if f[0] != want[i][0] || f[4] != want[i][2] || (want[i][1] != "" && f[1] != want[i][1]) {
						t.Errorf("line %q: got %v, want %v", line, f, want[i])
					}
					if _, err := time.ParseInLocation("2006-01-02 15:04:05", f[2]+" "+f[3], time.Local); err != nil {
						t.Errorf("line %q: modified is not local time to the second: %v", line, err)
					}
				}
			},
		},
		{
			name: "ls --json after the path",
			args: []string{"ls", "/ls", "--json"},
			stdout: func(t *testing.T, out string) {
				type entry struct {
					Name string `json:"name"`
					Path string `json:"path"`
					Type string `json:"type"`
					Size int64  `json:"size"`
				}
				var list struct {
					Entries []entry `json:"entries"`
				}
				if err := json.Unmarshal([]byte(out), &list); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				entries := list.Entries
				slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.Name, b.Name) })
				if len(entries) != 2 || entries[0].Path != "/ls/a.txt" || entries[0].Type != "file" ||
					entries[0].Size != 5 || entries[1].Name != "sub" || entries[1].Type != "directory" {
					t.Errorf("got %+v", entries)
				}
			},
		},
		{
			name: "stat",
			args: []string{"stat", "/stat/f.txt"},
			stdout: func(t *testing.T, out string) {
				for _, want := range []string{"path: /stat/f.txt\n", "type: file\n", "size: 12\n", "modified: "} {
					if !strings.Contains(out, want) {
						t.Errorf("got %q, want it to contain %q", out, want)
					}
				}
			},
		},
		{
			name: "stat --json",
			args: []string{"stat", "--json", "/stat"},
			stdout: func(t *testing.T, out string) {
				var st map[string]any
				if err := json.Unmarshal([]byte(out), &st); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				if st["path"] != "/stat" || st["type"] != "directory" {
					t.Errorf("got %v, want path /stat type directory", st)
				}
			},
		},
		{
			name:   "cat concatenates files",
			args:   []string{"cat", "/cat/one", "/cat/two"},
			stdout: exactly("one\ntwo"),
		},
		{
			name: "put from stdin",
			args: []string{"put", "/put/stdin.bin"},
			stdin: func() []byte {
				b := make([]byte, 0, 512)
				for i := range 512 {
					b = append(b, byte(i))
				}
				return b
			}(),
			stdout: exactly(""),
			disk: func(t *testing.T, root string) {
				got := readFile(t, filepath.Join(root, "put/stdin.bin"))
				if len(got) != 512 || got[255] != '\xff' || got[256] != 0 {
					t.Errorf("got %d bytes, want the 512 bytes sent", len(got))
				}
			},
		},
		{
			name:   "put from a local file creates parents",
			args:   []string{"put", localBin, "/put/deep/er/local.bin"},
			stdout: exactly(""),
			disk: func(t *testing.T, root string) {
				if got := readFile(t, filepath.Join(root, "put/deep/er/local.bin")); got != localBinData {
					t.Errorf("got %d bytes, want the %d bytes of the local file", len(got), len(localBinData))
				}
			},
		},
		{
			name:  "put --json prints bytesWritten",
			args:  []string{"put", "--json", "/put/j.txt", "-"},
			stdin: []byte("json"),
			stdout: func(t *testing.T, out string) {
				var w struct {
					Path         string `json:"path"`
					BytesWritten int64  `json:"bytesWritten"`
				}
				if err := json.Unmarshal([]byte(out), &w); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				if w.BytesWritten != 4 || w.Path != "/put/j.txt" {
					t.Errorf("got %+v, want path /put/j.txt bytesWritten 4", w)
				}
			},
		},
		{
			name:   "mkdir creates parents",
			args:   []string{"mkdir", "/mk/a/b/c"},
			stdout: exactly(""),
			disk: func(t *testing.T, root string) {
				if fi, err := os.Stat(filepath.Join(root, "mk/a/b/c")); err != nil || !fi.IsDir() {
					t.Errorf("got %v, %v; want a directory", fi, err)
				}
			},
		},
		{
			name:   "mv renames",
			args:   []string{"mv", "/mv/from.txt", "/mv/to.txt"},
			stdout: exactly(""),
			disk: func(t *testing.T, root string) {
				assertMissing(t, filepath.Join(root, "mv/from.txt"))
				if got := readFile(t, filepath.Join(root, "mv/to.txt")); got != "from" {
					t.Errorf("got %q, want %q", got, "from")
				}
			},
		},
		{
			name: "mv onto an existing file is refused",
			args: []string{"mv", "/mv/exists.txt", "/mv/dst.txt"},
			code: 3,
			disk: func(t *testing.T, root string) {
				if got := readFile(t, filepath.Join(root, "mv/exists.txt")); got != "exists" {
					t.Errorf("source: got %q, want it untouched", got)
				}
				if got := readFile(t, filepath.Join(root, "mv/dst.txt")); got != "old content" {
					t.Errorf("destination: got %q, want it untouched", got)
				}
			},
		},
		{
			name: "mv --overwrite replaces",
			args: []string{"mv", "--overwrite", "/mv/src.txt", "/mv/dst.txt"},
			disk: func(t *testing.T, root string) {
				assertMissing(t, filepath.Join(root, "mv/src.txt"))
				if got := readFile(t, filepath.Join(root, "mv/dst.txt")); got != "new content" {
					t.Errorf("got %q, want %q", got, "new content")
				}
			},
		},
		{
			name: "mv a directory",
			args: []string{"mv", "/mv/dir", "/mv/dir2"},
			disk: func(t *testing.T, root string) {
				assertMissing(t, filepath.Join(root, "mv/dir"))
				if got := readFile(t, filepath.Join(root, "mv/dir2/inner.txt")); got != "inner" {
					t.Errorf("got %q, want %q", got, "inner")
				}
			},
		},
		{
			name: "rm a file",
			args: []string{"rm", "/rm/f.txt"},
			disk: func(t *testing.T, root string) { assertMissing(t, filepath.Join(root, "rm/f.txt")) },
		},
		{
			name: "rm a non-empty directory without -r is refused",
			args: []string{"rm", "/rm/keep"},
			code: 3,
			disk: func(t *testing.T, root string) {
				if got := readFile(t, filepath.Join(root, "rm/keep/a")); got != "a" {
					t.Errorf("got %q, want the file kept", got)
				}
			},
		},
		{
			name: "rm -r",
			args: []string{"rm", "-r", "/rm/full"},
			disk: func(t *testing.T, root string) { assertMissing(t, filepath.Join(root, "rm/full")) },
		},
		{
			name: "upload-batch a nested directory",
			args: []string{"upload-batch", upDir, "--to", "/up"},
			stdout: func(t *testing.T, out string) {
				for _, want := range []string{"/up/top.txt", "/up/sub/b.bin", "/up/sub/deeper/c.txt", "/up/sub/deeper/d e f.txt"} {
					if !slices.Contains(strings.Split(out, "\n"), want) {
						t.Errorf("got %q, want a line %q", out, want)
					}
				}
			},
			disk: func(t *testing.T, root string) {
				for p, want := range map[string]string{
					"up/top.txt":              "top\n",
					"up/sub/b.bin":            upBin,
					"up/sub/deeper/c.txt":     "deep",
					"up/sub/deeper/d e f.txt": "spaces in the name",
				} {
					if got := readFile(t, filepath.Join(root, p)); got != want {
						t.Errorf("%s: got %d bytes, want %d", p, len(got), len(want))
					}
				}
				if fi, err := os.Stat(filepath.Join(root, "up/empty")); err != nil || !fi.IsDir() {
					t.Errorf("up/empty: got %v, %v; want a directory", fi, err)
				}
			},
		},
		{
			name: "upload-batch --json",
			args: []string{"upload-batch", "--json", "--to", "/up2", upDir},
			stdout: func(t *testing.T, out string) {
				var res struct {
					Paths     []string `json:"paths"`
					Truncated *bool    `json:"truncated"`
				}
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				if !slices.Contains(res.Paths, "/up2/sub/deeper/c.txt") || res.Truncated == nil || *res.Truncated {
					t.Errorf("got %+v", res)
				}
			},
			disk: func(t *testing.T, root string) {
				if got := readFile(t, filepath.Join(root, "up2/sub/b.bin")); got != upBin {
					t.Errorf("got %d bytes, want %d", len(got), len(upBin))
				}
			},
		},
		{name: "cat of a missing file is not found", args: []string{"cat", "/nope.txt"}, code: 2},
		{name: "stat of a missing path is not found", args: []string{"stat", "/nope"}, code: 2},
		{name: "ls of a missing directory is not found", args: []string{"ls", "/nope"}, code: 2},
		{name: "rm of a missing path is not found", args: []string{"rm", "/nope"}, code: 2},
		{name: "mv of a missing source is not found", args: []string{"mv", "/nope", "/nope2"}, code: 2},
		{name: "cat of a directory is refused", args: []string{"cat", "/ls"}, code: 3},
		{name: "put of a missing local file fails", args: []string{"put", filepath.Join(local, "missing"), "/x"}, code: 1},
		{name: "upload-batch of a missing local dir fails", args: []string{"upload-batch", filepath.Join(local, "missing")}, code: 1},
		{
			name: "help lists every verb",
			args: []string{"help"},
			stdout: func(t *testing.T, out string) {
				for _, verb := range []string{"serve", "ls", "stat", "cat", "put", "rm", "mkdir", "mv", "upload-batch"} {
					if !strings.Contains(out, "\n  "+verb+" ") {
						t.Errorf("help does not list %q:\n%s", verb, out)
					}
				}
			},
		},
		{
			name:   "verb -h prints its usage",
			args:   []string{"mv", "-h"},
			stdout: contains("usage: sandfs mv", "-overwrite"),
		},
		{name: "unknown verb", args: []string{"frobnicate"}, code: 1},
		{name: "missing argument", args: []string{"mv", "/only-one"}, code: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := d.CLI(t, tc.stdin, tc.args...)
			if res.Code != tc.code {
				t.Fatalf("sandfs %s: got exit %d, want %d\n%s", strings.Join(tc.args, " "), res.Code, tc.code, res)
			}
			if tc.stdout != nil {
				tc.stdout(t, res.Stdout)
			}
			switch {
			case tc.stderr != nil:
				tc.stderr(t, res.Stderr)
			case tc.code == 0 && res.Stderr != "":
				t.Errorf("got stderr %q, want none", res.Stderr)
			case tc.code != 0:
				if !strings.HasPrefix(res.Stderr, "sandfs") || len(strings.TrimSpace(res.Stderr)) < len("sandfs: x") {
					t.Errorf("got stderr %q, want a message", res.Stderr)
				}
				if strings.Contains(res.Stderr, d.Root) {
					t.Errorf("stderr %q leaks the host root %s", res.Stderr, d.Root)
				}
			}
			if tc.disk != nil {
				tc.disk(t, d.Root)
			}
		})
	}
}

func exactly(want string) func(t *testing.T, out string) {
	return func(t *testing.T, out string) {
		t.Helper()
		if out != want {
			t.Errorf("got stdout %q, want %q", out, want)
		}
	}
}

func contains(wants ...string) func(t *testing.T, out string) {
	return func(t *testing.T, out string) {
		t.Helper()
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("got stdout %q, want it to contain %q", out, want)
			}
		}
	}
}
