package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandfs/internal/testenv"
)

// TestForkChanges: changes?since=fork on a fork lists exactly what the
// fork changed since it was made (through its routes and by a process
// writing its root), each with its actor, and diffs whose old side is the
// parent's checkpoint the fork was made from, not the parent's tree now;
// on a sandbox that is not a fork it is 400 EINVAL; sandfs changes --since
// fork prints the same rows.
func TestForkChanges(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "forks NOT TESTED: an overlay mount needs root")
	}
	d, dir := startRegistry(t)
	createSandbox(t, d, "main")
	main := filepath.Join(dir, "main")
	testenv.Mk(t, main, map[string]string{"m.txt": "one\ntwo\nthree\n", "gone.txt": "bye\n", "r.txt": "a\nb\n",
		"kept.txt": "kept\n", "sub/ext.txt": "outside\n"})
	st, b := postSandbox(t, d, map[string]any{"name": "try-1", "from": "main"})
	var made struct{ Token, Checkpoint string }
	if json.Unmarshal(b, &made); st != http.StatusCreated || made.Token == "" {
		t.Fatalf("fork: %d %s", st, b)
	}
	discardAtCleanup(t, d, "try-1")
	// The parent moves on: a diff against its tree now would show this.
	must(t, os.WriteFile(filepath.Join(main, "m.txt"), []byte("the parent's later\n"), 0o644))

	for _, c := range []struct {
		method, rest string
		body         string
	}{
		{"PUT", "/fs/write?path=/m.txt", "one\n2\nthree\n"},
		{"DELETE", "/fs/delete?path=/gone.txt", ""},
		{"POST", "/fs/rename", `{"source":"/r.txt","dest":"/r2.txt"}`},
		{"PUT", "/fs/write?path=/new.txt", "fresh\n"},
	} {
		req, err := http.NewRequest(c.method, d.URL+"/v1/sandboxes/try-1"+c.rest, bytes.NewReader([]byte(c.body)))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+made.Token)
		req.Header.Set("X-Sandfs-Actor", "agent-1")
		if c.method == "POST" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s", c.method, c.rest, resp.Status)
		}
	}
	// A process writing the fork's root (the overlay, not a FUSE mount).
	forkRoot := filepath.Join(d.State, "forks", "try-1", "root")
	must(t, os.WriteFile(filepath.Join(forkRoot, "sub/ext.txt"), []byte("outside\nchanged\n"), 0o644))

	type row struct{ line, diff string }
	want := []row{
		{"deleted /gone.txt by agent-1", "--- a/gone.txt\n+++ b/gone.txt\n@@ -1 +0,0 @@\n-bye\n"},
		{"modified /m.txt by agent-1", "--- a/m.txt\n+++ b/m.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"},
		{"added /new.txt by agent-1", "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+fresh\n"},
		{"renamed /r2.txt <- /r.txt by agent-1", ""},
		{"modified /sub/ext.txt by external", "--- a/sub/ext.txt\n+++ b/sub/ext.txt\n@@ -1 +1,2 @@\n outside\n+changed\n"},
	}
	var got struct {
		Since struct {
			Seq        uint64 `json:"seq"`
			Checkpoint string `json:"checkpoint"`
			Fork       string `json:"fork"`
		} `json:"since"`
		Lost    bool `json:"lost"`
		Changes []struct {
			Path, Change, RenamedFrom, Diff, DiffUnavailable string
			Actors                                           []string
		} `json:"changes"`
	}
	var rows []row
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, b := named(t, d, made.Token, "GET", "try-1", "/changes?since=fork&diff=true", nil)
		if st != http.StatusOK {
			t.Fatalf("changes?since=fork: %d %s", st, b)
		}
		must(t, json.Unmarshal(b, &got))
		rows = rows[:0]
		for _, c := range got.Changes {
			line := c.Change + " " + c.Path
			if c.RenamedFrom != "" {
				line += " <- " + c.RenamedFrom
			}
			rows = append(rows, row{line + " by " + strings.Join(c.Actors, ","), c.Diff})
		}
		if len(rows) >= len(want) || time.Now().After(deadline) {
			break // the kernel watch tells the outside write
		}
	}
	if got.Since.Seq != 0 || got.Since.Checkpoint != made.Checkpoint || got.Since.Fork != "main" || got.Lost {
		t.Errorf("since %+v lost %v, want seq 0, checkpoint %s, fork main", got.Since, got.Lost, made.Checkpoint)
	}
	if len(rows) != len(want) {
		t.Fatalf("rows:\n%q\nwant:\n%q", rows, want)
	}
	for i, w := range want {
		if rows[i].line != w.line {
			t.Errorf("row %d: %q, want %q", i, rows[i].line, w.line)
		}
		if w.diff != "" && rows[i].diff != w.diff {
			t.Errorf("%s: diff %q (unavailable %q), want %q", w.line, rows[i].diff, got.Changes[i].DiffUnavailable, w.diff)
		}
	}
	if c := got.Changes[3]; c.Diff != "" || c.DiffUnavailable != "" {
		t.Errorf("renamed unchanged: diff %q unavailable %q", c.Diff, c.DiffUnavailable)
	}

	if st, b := named(t, d, "", "GET", "main", "/changes?since=fork", nil); st != http.StatusBadRequest ||
		!strings.Contains(string(b), `"EINVAL"`) || !strings.Contains(string(b), "not a fork") {
		t.Errorf("since=fork on the parent: %d %s, want 400 EINVAL", st, b)
	}
	r := d.CLI(t, nil, "changes", "--sandbox", "try-1", "--since", "fork")
	for _, line := range []string{"D /gone.txt  by agent-1 (api), ", "M /m.txt  by agent-1 (api), ", "A /new.txt  by agent-1 (api), ",
		"R /r2.txt <- /r.txt  by agent-1 (api), ", "M /sub/ext.txt  by external, "} {
		if r.Code != 0 || !strings.Contains(r.Stdout, "\n"+line) && !strings.HasPrefix(r.Stdout, line) {
			t.Errorf("sandfs changes --since fork: no line %q\n%s", line, r)
		}
	}
}
