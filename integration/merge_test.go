package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/internal/testenv"
)

// TestForkMerge: a fork's work, made through its routes and by processes
// writing its root, merges back into its parent path by path; a path
// both changed is a conflict (409 under "fail", nothing written); the
// CLI merges with a strategy; the merge's events carry merge:<fork>; a
// restore of its undo brings the parent back; a fork of a fork merges
// into the fork.
func TestForkMerge(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "fork merges NOT TESTED: an overlay mount needs root")
	}
	d, dir := startRegistry(t)
	createSandbox(t, d, "main")
	main := filepath.Join(dir, "main")
	testenv.Mk(t, main, map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "c.txt": "one\ntwo\nthree\n",
		"old/x.txt": "x", "mv.txt": "moved", "ln": "->a.txt", "run.sh": "#!/bin/sh\n"})
	st, b := postSandbox(t, d, map[string]any{"name": "try", "from": "main"})
	var made struct{ Token, Checkpoint string }
	if json.Unmarshal(b, &made); st != http.StatusCreated {
		t.Fatalf("fork: %d %s", st, b)
	}
	fork := filepath.Join(d.State, "forks", "try", "root")
	unmountAtEnd(t, fork)

	// The fork's work: through its routes, and by a process on its root.
	if st, b := named(t, d, made.Token, "PUT", "try", "/fs/write?path=/a.txt", []byte("alpha, the fork's\n")); st != http.StatusOK {
		t.Fatalf("write in the fork: %d %s", st, b)
	}
	must(t, os.WriteFile(filepath.Join(fork, "c.txt"), []byte("one\ntwo, the fork's\nthree\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(fork, "new/deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(fork, "new/deep/n.txt"), []byte("new"), 0o644))
	must(t, os.RemoveAll(filepath.Join(fork, "old")))
	must(t, os.Rename(filepath.Join(fork, "mv.txt"), filepath.Join(fork, "moved.txt")))
	must(t, os.Chmod(filepath.Join(fork, "run.sh"), 0o755))
	must(t, os.Remove(filepath.Join(fork, "ln")))
	must(t, os.Symlink("b.txt", filepath.Join(fork, "ln")))
	// The parent's, meanwhile.
	must(t, os.WriteFile(filepath.Join(main, "b.txt"), []byte("beta, ours\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(main, "c.txt"), []byte("one\ntwo, ours\nthree\n"), 0o644))

	// Under "fail" the conflict is named, with its diff, and nothing merges.
	st, b = named(t, d, "", "POST", "try", "/merge", []byte(`{}`))
	var failed struct {
		Code      string
		Conflicts []struct{ Path, Diff string }
		Written   []string
	}
	if json.Unmarshal(b, &failed); st != http.StatusConflict || failed.Code != "EEXIST" || len(failed.Conflicts) != 1 ||
		failed.Conflicts[0].Path != "/c.txt" || !strings.Contains(failed.Conflicts[0].Diff, "-two, ours\n+two, the fork's\n") || len(failed.Written) != 0 {
		t.Fatalf("merge under fail: %d %s", st, b)
	}
	wantFile(t, filepath.Join(main, "a.txt"), "alpha\n")
	before := digestTree(t, main)

	// The CLI, keeping ours where both changed.
	r := d.CLI(t, nil, "merge", "--strategy", "ours", "try")
	if r.Code != 0 || !strings.Contains(r.Stdout, "conflict /c.txt: changed on both sides (took ours)") {
		t.Fatalf("sandfs merge: %+v", r)
	}
	for _, line := range []string{"write  /a.txt", "write  /new/deep/n.txt", "write  /moved.txt", "write  /run.sh", "write  /ln",
		"remove /old", "remove /mv.txt"} {
		if !strings.Contains(r.Stdout, line+"\n") {
			t.Errorf("sandfs merge printed no %q:\n%s", line, r.Stdout)
		}
	}
	wantFile(t, filepath.Join(main, "a.txt"), "alpha, the fork's\n")
	wantFile(t, filepath.Join(main, "b.txt"), "beta, ours\n")
	wantFile(t, filepath.Join(main, "c.txt"), "one\ntwo, ours\nthree\n")
	wantFile(t, filepath.Join(main, "new/deep/n.txt"), "new")
	wantFile(t, filepath.Join(main, "moved.txt"), "moved")
	for _, gone := range []string{"old", "mv.txt"} {
		if _, err := os.Lstat(filepath.Join(main, gone)); !os.IsNotExist(err) {
			t.Errorf("%s after the merge: %v", gone, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(main, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh after the merge: %v %v", fi, err)
	}
	if tgt, _ := os.Readlink(filepath.Join(main, "ln")); tgt != "b.txt" {
		t.Errorf("ln -> %q after the merge", tgt)
	}

	// The parent's journal tells the merge's changes as the merge's.
	st, b = named(t, d, "", "GET", "main", "/events?actor=merge:try", nil)
	var evs struct {
		Events []struct{ Path, Origin string }
	}
	if json.Unmarshal(b, &evs); st != http.StatusOK || len(evs.Events) == 0 {
		t.Fatalf("the merge's events: %d %s", st, b)
	}
	told := map[string]bool{}
	for _, e := range evs.Events {
		told[e.Path] = e.Origin == "api"
	}
	for _, p := range []string{"/a.txt", "/new/deep/n.txt", "/old", "/mv.txt", "/moved.txt"} {
		if !told[p] {
			t.Errorf("no api event of merge:try at %s: %s", p, b)
		}
	}

	// The undo brings the parent back as it was before the merge.
	undo := undoOf(t, r.Stdout)
	if st, b := named(t, d, "", "POST", "main", "/restore", []byte(`{"checkpoint":"`+undo+`"}`)); st != http.StatusOK {
		t.Fatalf("restore of the undo: %d %s", st, b)
	}
	if got := digestTree(t, main); got != before {
		t.Errorf("after the undo:\n%s\nwant:\n%s", got, before)
	}

	// A fork of the fork merges into the fork.
	if st, b := postSandbox(t, d, map[string]any{"name": "try-b", "from": "try"}); st != http.StatusCreated {
		t.Fatalf("fork of the fork: %d %s", st, b)
	}
	unmountAtEnd(t, filepath.Join(d.State, "forks", "try-b", "root"))
	must(t, os.WriteFile(filepath.Join(d.State, "forks", "try-b", "root", "b.txt"), []byte("beta, try-b's\n"), 0o644))
	if st, b := named(t, d, "", "POST", "try-b", "/merge", []byte(`{"into":"try"}`)); st != http.StatusOK || !strings.Contains(string(b), `"written":["/b.txt"]`) {
		t.Fatalf("merge of the fork of the fork: %d %s", st, b)
	}
	wantFile(t, filepath.Join(fork, "b.txt"), "beta, try-b's\n")
	wantFile(t, filepath.Join(main, "b.txt"), "beta, ours\n")

	// Discarded, the fork of the fork first, then the fork.
	for _, name := range []string{"try-b", "try"} {
		req, _ := http.NewRequest("DELETE", d.URL+"/v1/sandboxes/"+name, nil)
		resp, err := d.Client().Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("discard %s: %d", name, resp.StatusCode)
		}
	}
}

// undoOf is the checkpoint a merge's "undo ID" line names.
func undoOf(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if id, ok := strings.CutPrefix(l, "undo "); ok {
			return id
		}
	}
	t.Fatalf("no undo line in:\n%s", out)
	return ""
}

// TestForkWithoutDir: a daemon given no --sandboxes DIR (make run's) still
// forks its default sandbox, merges the fork back and discards it; a
// plain sandbox it cannot make (405), nor remove the default (403).
func TestForkWithoutDir(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "forks NOT TESTED: an overlay mount needs root")
	}
	d := startDaemon(t)
	must(t, os.WriteFile(filepath.Join(d.Root, "a.txt"), []byte("alpha\n"), 0o644))
	if st, b := postSandbox(t, d, map[string]any{"name": "plain"}); st != http.StatusMethodNotAllowed || !strings.Contains(string(b), "--sandboxes DIR") {
		t.Errorf("a plain sandbox without DIR: %d %s", st, b)
	}
	if st, b := postSandbox(t, d, map[string]any{"name": "try", "from": "default"}); st != http.StatusCreated {
		t.Fatalf("fork of default: %d %s", st, b)
	}
	unmountAtEnd(t, filepath.Join(d.State, "forks", "try", "root"))
	if st, b := named(t, d, "", "PUT", "try", "/fs/write?path=/a.txt", []byte("alpha, the fork's\n")); st != http.StatusOK {
		t.Fatalf("write in the fork: %d %s", st, b)
	}
	if st, b := named(t, d, "", "POST", "try", "/merge", []byte(`{}`)); st != http.StatusOK || !strings.Contains(string(b), `"written":["/a.txt"]`) {
		t.Fatalf("merge: %d %s", st, b)
	}
	wantFile(t, filepath.Join(d.Root, "a.txt"), "alpha, the fork's\n")
	for _, c := range []struct {
		name string
		want int
	}{{"default", http.StatusConflict}, {"try", http.StatusOK}, {"default", http.StatusForbidden}} {
		req, _ := http.NewRequest("DELETE", d.URL+"/v1/sandboxes/"+c.name, nil)
		resp, err := d.Client().Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("DELETE %s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
}
