package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCLICheckpointRestore: a real daemon; checkpoint, change the tree
// from outside and through the API, dry run, restore, undo, list, rm, all
// through the CLI verbs.
func TestCLICheckpointRestore(t *testing.T) {
	d := startDaemon(t)
	d.WaitReady(t)
	writeFiles(t, d.Root, map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "keep.txt": "keep"})
	os.Mkdir(filepath.Join(d.Root, "empty"), 0o755)
	os.Symlink("a.txt", filepath.Join(d.Root, "ln"))

	r := d.CLI(t, nil, "checkpoint", "--json", "--name", "base")
	if r.Code != 0 {
		t.Fatalf("checkpoint: %s", r)
	}
	var cp struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Files  int64  `json:"files"`
		Dirs   int64  `json:"dirs"`
		Links  int64  `json:"symlinks"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &cp); err != nil || cp.Name != "base" || cp.Files != 3 || cp.Dirs != 2 || cp.Links != 1 {
		t.Fatalf("checkpoint --json: %+v %v\n%s", cp, err, r)
	}

	// Outside changes (the kernel watch tells them) and an API one.
	os.WriteFile(filepath.Join(d.Root, "a.txt"), []byte("alpha, changed outside"), 0o644)
	os.Remove(filepath.Join(d.Root, "d", "b.txt"))
	os.Remove(filepath.Join(d.Root, "empty"))
	os.WriteFile(filepath.Join(d.Root, "new.txt"), []byte("new"), 0o644)
	if r := d.CLI(t, []byte("put"), "put", "/keep.txt"); r.Code != 0 {
		t.Fatalf("put: %s", r)
	}
	changed := map[string]string{"a.txt": "alpha, changed outside", "keep.txt": "put", "new.txt": "new"}

	r = d.CLI(t, nil, "restore", "--dry-run", cp.ID)
	want := "write  /a.txt\nwrite  /d/b.txt\nwrite  /empty\nwrite  /keep.txt\nremove /new.txt\n"
	if r.Code != 0 || r.Stdout != want {
		t.Fatalf("dry run: want\n%s%s", want, r)
	}
	for n, c := range changed {
		if got := readFile(t, filepath.Join(d.Root, n)); got != c {
			t.Errorf("after the dry run %s = %q", n, got)
		}
	}

	r = d.CLI(t, nil, "restore", cp.ID)
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, want) {
		t.Fatalf("restore: %s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	undo := strings.TrimSpace(strings.TrimPrefix(lines[len(lines)-1], "undo"))
	if !strings.HasPrefix(undo, "cp_") {
		t.Fatalf("no undo line: %s", r)
	}
	for n, c := range map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "keep.txt": "keep"} {
		if got := readFile(t, filepath.Join(d.Root, n)); got != c {
			t.Errorf("after the restore %s = %q, want %q", n, got, c)
		}
	}
	assertMissing(t, filepath.Join(d.Root, "new.txt"))
	if fi, err := os.Lstat(filepath.Join(d.Root, "empty")); err != nil || !fi.IsDir() {
		t.Errorf("empty dir not restored: %v", err)
	}

	r = d.CLI(t, nil, "checkpoints")
	if r.Code != 0 || strings.Count(r.Stdout, "\n") != 2 || !strings.Contains(r.Stdout, cp.ID+"  ") || !strings.Contains(r.Stdout, undo+"  ") ||
		!strings.Contains(r.Stdout, "before-restore") || !strings.Contains(r.Stdout, "  base\n") {
		t.Errorf("checkpoints: %s", r)
	}

	if r := d.CLI(t, nil, "restore", undo); r.Code != 0 {
		t.Fatalf("undo: %s", r)
	}
	for n, c := range changed {
		if got := readFile(t, filepath.Join(d.Root, n)); got != c {
			t.Errorf("after the undo %s = %q, want %q", n, got, c)
		}
	}
	assertMissing(t, filepath.Join(d.Root, "d", "b.txt"))

	if r := d.CLI(t, nil, "restore", "--path", "../../etc", cp.ID); r.Code == 0 || !strings.Contains(r.Stderr, `".." component`) {
		t.Errorf("hostile path: %s", r)
	}
	if r := d.CLI(t, nil, "checkpoint", "rm", cp.ID); r.Code != 0 || r.Stdout != "deleted "+cp.ID+"\n" {
		t.Errorf("rm: %s", r)
	}
	if r := d.CLI(t, nil, "restore", cp.ID); r.Code == 0 || !strings.Contains(r.Stderr, "unknown checkpoint") {
		t.Errorf("restore of a deleted checkpoint: %s", r)
	}
}

// TestServeCheckpointSchedule: --checkpoint-every takes scheduled
// checkpoints while the tree changes; a bad --checkpoint-keep is refused.
func TestServeCheckpointSchedule(t *testing.T) {
	res := runSandfs(t, nil, nil, "serve", "--root", t.TempDir(), "--state", t.TempDir(), "--listen", freeAddr(t), "--checkpoint-keep", "0")
	if res.Code == 0 || !strings.Contains(res.Stderr, "--checkpoint-keep must be at least 1") {
		t.Errorf("--checkpoint-keep 0: %s", res)
	}
	d := startDaemon(t, "--checkpoint-every", "100ms", "--checkpoint-keep", "2")
	d.WaitReady(t)
	scheduled := func() int {
		r := d.CLI(t, nil, "checkpoints")
		if r.Code != 0 {
			t.Fatalf("checkpoints: %s", r)
		}
		return strings.Count(r.Stdout, " scheduled ")
	}
	for i := 0; i < 4; i++ {
		writeFiles(t, d.Root, map[string]string{"f.txt": strings.Repeat("v", i+1)})
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := d.CLI(t, nil, "checkpoints", "--json")
			var list struct {
				Checkpoints []struct {
					Bytes int64 `json:"bytes"`
				} `json:"checkpoints"`
			}
			json.Unmarshal([]byte(r.Stdout), &list)
			if n := len(list.Checkpoints); n > 0 && list.Checkpoints[n-1].Bytes == int64(i+1) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no scheduled checkpoint of change %d: %s", i, r)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if n := scheduled(); n != 2 {
		t.Errorf("%d scheduled checkpoints kept, want 2", n)
	}
}
