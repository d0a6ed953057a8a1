package integration

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// posixCase is one case of the suite. needs says what it does: only the
// small interface's operations (a portable case: it runs on every access
// path), or opSyscalls too (it works on its host directory, so it runs on
// the temp dir and the mount only).
type posixCase struct {
	needs op
	run   func(t *testing.T, c caseEnv)
}

// syscallCase is a case that needs syscalls the HTTP API has no route for
// (descriptors, modes, links, xattrs, locks, devices).
func syscallCase(run func(t *testing.T, dir string)) posixCase {
	return posixCase{needs: opSyscalls, run: func(t *testing.T, c caseEnv) { run(t, c.dir) }}
}

// portableCase is a case that needs only the operations of suiteFS named
// in needs (and is held to them: declaredFS).
func portableCase(needs op, run func(t *testing.T, fsys suiteFS)) posixCase {
	return posixCase{needs: needs, run: func(t *testing.T, c caseEnv) { run(t, declaredFS{t: t, fs: c.fs, needs: needs}) }}
}

func TestPOSIXConformance(t *testing.T) {
	// run runs every case the access path offers what it needs of, each
	// in a directory of its own that mkdir makes and returns.
	run := func(t *testing.T, offers op, mkdir func(t *testing.T, name string) caseEnv) {
		for name, tc := range posixSuite {
			if tc.needs&^offers != 0 {
				continue // e.g. a syscall case through the HTTP API
			}
			t.Run(name, func(t *testing.T) {
				tc.run(t, mkdir(t, strings.ReplaceAll(name, " ", "_")))
			})
		}
	}
	onHost := func(base string) func(t *testing.T, name string) caseEnv {
		return func(t *testing.T, name string) caseEnv {
			dir := filepath.Join(base, name)
			must(t, os.Mkdir(dir, 0o755))
			return caseEnv{fs: hostFS{dir}, dir: dir}
		}
	}
	t.Run("tempdir", func(t *testing.T) { run(t, suiteOps|opSyscalls, onHost(t.TempDir())) })
	for _, mode := range fuseModes {
		t.Run("mount/"+mode.name, func(t *testing.T) {
			_, mnt := startMirror(t, mode.args...)
			run(t, suiteOps|opSyscalls, onHost(mnt))
		})
	}
	t.Run("mount/uring", func(t *testing.T) {
		// The same mount served over FUSE over io_uring (fuse_uring_test.go).
		setEnableURing(t, "Y")
		d, mnt := startMirror(t, "--fuse-uring")
		if !d.LogHas("fuse: serving over io_uring") {
			t.Fatalf("the daemon does not serve over io_uring:\n%s", d.Log())
		}
		run(t, suiteOps|opSyscalls, onHost(mnt))
	})
	t.Run("rest", func(t *testing.T) {
		d := startDaemon(t)
		run(t, suiteOps, func(t *testing.T, name string) caseEnv {
			r := restFS{d: d, base: "/" + name}
			must(t, r.Mkdir("."))
			return caseEnv{fs: r}
		})
	})
}

// wantRead checks what p holds, read through fsys.
func wantRead(t *testing.T, fsys suiteFS, p, want string) {
	t.Helper()
	f, err := fsys.Read(p)
	if err != nil {
		t.Errorf("read %s: %v", p, err)
		return
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Errorf("read %s: %v", p, err)
		return
	}
	if string(b) != want {
		t.Errorf("got %q in %s, want %q", b, p, want)
	}
}

// wantList checks the names directory p holds, listed through fsys.
func wantList(t *testing.T, fsys suiteFS, p string, want []string) {
	t.Helper()
	got, err := fsys.List(p)
	if err != nil {
		t.Errorf("list %s: %v", p, err)
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("list %s: got %q, want %q", p, got, want)
	}
}

// blockReader gives blocks MiB, block i holding byte(i*7 + j*13) at j, one
// block at most per Read: through a 1 MiB buffer, one write per block.
type blockReader struct{ blocks, i, j int }

func (b *blockReader) Read(p []byte) (int, error) {
	if b.i == b.blocks {
		return 0, io.EOF
	}
	n := min(len(p), 1<<20-b.j)
	for k := range n {
		p[k] = byte(b.i*7 + (b.j+k)*13)
	}
	if b.j += n; b.j == 1<<20 {
		b.i, b.j = b.i+1, 0
	}
	return n, nil
}
