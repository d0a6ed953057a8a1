package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestFork: POST /v1/sandboxes {name, from} makes a sandbox whose tree is
// its parent's at a checkpoint (modes, symlinks and empty directories
// too); what either writes after stays its own; the fork survives a
// restart of the daemon and a lost mount (mounted again before it is
// served); DELETE discards it and leaves the parent whole.
func TestFork(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "forks NOT TESTED: an overlay mount needs root")
	}
	d, dir := startRegistry(t)
	createSandbox(t, d, "main")
	main := filepath.Join(dir, "main")
	testenv.Mk(t, main, map[string]string{"a.txt": "alpha", "src/b.go": "package b\n", "empty/": "", "ln": "->a.txt"})
	must(t, os.Chmod(filepath.Join(main, "src"), 0o750))

	for _, c := range []struct {
		name string
		body map[string]any
		want int
	}{
		{"unknown parent", map[string]any{"name": "f1", "from": "nope"}, http.StatusNotFound},
		{"unknown checkpoint", map[string]any{"name": "f1", "from": "main", "checkpoint": "cp_000000000000"}, http.StatusNotFound},
		{"a taken name", map[string]any{"name": "main", "from": "main"}, http.StatusConflict},
		{"a bad name", map[string]any{"name": "Bad_Name", "from": "main"}, http.StatusBadRequest},
		{"a checkpoint without from", map[string]any{"name": "f1", "checkpoint": "cp_000000000000"}, http.StatusBadRequest},
	} {
		if st, b := postSandbox(t, d, c.body); st != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, st, b, c.want)
		}
	}

	st, b := postSandbox(t, d, map[string]any{"name": "try-1", "from": "main"})
	var made struct {
		Name, Token, From, Checkpoint string
		Copy                          bool // an overlay, as root: no copy
	}
	if json.Unmarshal(b, &made); st != http.StatusCreated || made.Token == "" || made.From != "main" || !strings.HasPrefix(made.Checkpoint, "cp_") || made.Copy {
		t.Fatalf("fork: %d %s", st, b)
	}
	forkRoot := filepath.Join(d.State, "forks", "try-1", "root")
	want := digestTree(t, main)
	if got := digestTree(t, forkRoot); got != want {
		t.Fatalf("the fork's tree:\n%s\nwant the parent's:\n%s", got, want)
	}

	// Each side's writes stay its own.
	if st, b := named(t, d, made.Token, "PUT", "try-1", "/fs/write?path=/a.txt", []byte("fork's")); st != http.StatusOK {
		t.Fatalf("write in the fork: %d %s", st, b)
	}
	must(t, os.WriteFile(filepath.Join(main, "src/b.go"), []byte("package b // parent's\n"), 0o644))
	wantFile(t, filepath.Join(main, "a.txt"), "alpha")
	wantFile(t, filepath.Join(forkRoot, "a.txt"), "fork's")
	wantFile(t, filepath.Join(forkRoot, "src/b.go"), "package b\n")
	if st, b := named(t, d, made.Token, "GET", "try-1", "/fs/read?path=/src/b.go", nil); st != http.StatusOK || string(b) != "package b\n" {
		t.Errorf("the fork's file through its routes: %d %q", st, b)
	}

	// A restart, then a lost mount (a reboot's): served again, as it was.
	args := []string{"--sandboxes", dir, "--state", d.State}
	d.Stop(t)
	d = startDaemon(t, args...)
	waitStatus(t, d, "try-1", http.StatusOK)
	wantFile(t, filepath.Join(forkRoot, "a.txt"), "fork's")
	d.Stop(t)
	must(t, unix.Unmount(forkRoot, unix.MNT_DETACH))
	// A fork a crash stopped half made (its record written, its pin
	// taken, nothing mounted): removed at the start, its pin too.
	half := filepath.Join(d.State, "forks", "half")
	must(t, os.MkdirAll(filepath.Join(half, "upper"), 0o700))
	must(t, os.WriteFile(filepath.Join(half, "fork.json"),
		[]byte(`{"name":"half","from":"main","checkpoint":"`+made.Checkpoint+`","made":false}`), 0o600))
	pins, _ := filepath.Glob(filepath.Join(d.State, "sandboxes", "main", "lower", ".pins", made.Checkpoint))
	if len(pins) != 1 {
		t.Fatalf("the pins of %s: %v", made.Checkpoint, pins)
	}
	must(t, os.WriteFile(filepath.Join(pins[0], "half"), nil, 0o600))
	// One stopped between its directory and its record: removed too, or
	// its name stays taken.
	bare := filepath.Join(d.State, "forks", "bare")
	must(t, os.Mkdir(bare, 0o700))
	d = startDaemon(t, args...)
	waitStatus(t, d, "try-1", http.StatusOK)
	wantFile(t, filepath.Join(forkRoot, "a.txt"), "fork's")
	if _, err := os.Lstat(half); !os.IsNotExist(err) || !strings.Contains(d.Log(), "removed a fork left half made by a crash") {
		t.Errorf("the half-made fork after the start: %v\n%s", err, d.Log())
	}
	if _, err := os.Lstat(filepath.Join(pins[0], "half")); !os.IsNotExist(err) {
		t.Errorf("the half-made fork's pin after the start: %v", err)
	}
	if _, err := os.Lstat(bare); !os.IsNotExist(err) || !strings.Contains(d.Log(), "removed a fork left without its record by a crash") {
		t.Errorf("the fork left without its record after the start: %v\n%s", err, d.Log())
	}
	if st, b := named(t, d, "", "GET", "try-1", "/fs/read?path=/ln", nil); st != http.StatusOK || string(b) != "fork's" {
		t.Errorf("the fork's symlink after the remount: %d %q", st, b)
	}

	// The CLI: a fork at a named checkpoint, then its discard.
	r := d.CLI(t, nil, "fork", "--checkpoint", made.Checkpoint, "main", "try-2")
	if lines := strings.Fields(r.Stdout); r.Code != 0 || len(lines) != 3 || lines[1] != "checkpoint" || lines[2] != made.Checkpoint {
		t.Fatalf("sandfs fork: %+v", r)
	}
	wantFile(t, filepath.Join(d.State, "forks", "try-2", "root", "src/b.go"), "package b\n")
	if r := d.CLI(t, nil, "sandbox", "rm", "try-2"); r.Code != 0 {
		t.Fatalf("sandfs sandbox rm: %+v", r)
	}

	// What try-1 reads stays while it lives: its parent, and its checkpoint.
	for _, c := range []struct{ what, target string }{
		{"the parent", "/v1/sandboxes/main"},
		{"the checkpoint", "/v1/sandboxes/main/checkpoints/" + made.Checkpoint},
	} {
		req, _ := http.NewRequest("DELETE", d.URL+c.target, nil)
		resp, err := d.Client().Do(req)
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "fork") {
			t.Errorf("DELETE %s while a fork reads it: %d %s, want 409 naming the fork", c.what, resp.StatusCode, b)
		}
	}

	req, _ := http.NewRequest("DELETE", d.URL+"/v1/sandboxes/try-1", nil)
	resp, err := d.Client().Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("discard: %d", resp.StatusCode)
	}
	if _, err := os.Lstat(filepath.Join(d.State, "forks", "try-1")); !os.IsNotExist(err) {
		t.Errorf("the fork's directory after the discard: %v", err)
	}
	waitStatus(t, d, "try-1", http.StatusNotFound)
	wantFile(t, filepath.Join(main, "a.txt"), "alpha")
	wantFile(t, filepath.Join(main, "src/b.go"), "package b // parent's\n")
	// Discarded, it reads nothing: its checkpoint may go.
	req, _ = http.NewRequest("DELETE", d.URL+"/v1/sandboxes/main/checkpoints/"+made.Checkpoint, nil)
	resp, err = d.Client().Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("DELETE of the checkpoint after the discard: %d", resp.StatusCode)
	}
}

// digestTree is every entry under dir, a line each: its path, type, mode
// and content or target.
func digestTree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := rel + " " + fi.Mode().String()
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(b)
		}
		lines = append(lines, line)
		return nil
	})
	must(t, err)
	return strings.Join(lines, "\n")
}

func wantFile(t *testing.T, p, want string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != want {
		t.Errorf("%s: %q, %v; want %q", p, b, err, want)
	}
}
