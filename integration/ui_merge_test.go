package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A fork in the console, from ui_merge.mjs: the picker shows it under its
// parent, its history its change set, and its merge dialog the dry run
// (which changes nothing: checked on disk while the page waits) before a
// strategy is picked and the merge confirmed.

// The sandbox the console's fork is made from (a --sandbox), and the fork.
const (
	consoleProj = "proj"
	consoleFork = "proj-try"
)

// The files of the fork's parent: plan.md the fork alone changes, shared.txt
// both change (the conflict), keep.txt neither.
var (
	projBase = map[string]string{
		"notes/plan.md": "# plan\n\n- a first step\n",
		"shared.txt":    "one\ntwo\nthree\n",
		"keep.txt":      "left alone\n",
	}
	projFork   = map[string]string{"/notes/plan.md": "# plan\n\n- a first step\n- the fork's step\n", "/shared.txt": "one\ntwo, the fork's\nthree\n"}
	projParent = map[string]string{"/shared.txt": "one\ntwo, the parent's\nthree\n"}
)

// sharedDiff is the conflict's diff, from the parent's side to the fork's.
const sharedDiff = "--- a/shared.txt\n+++ b/shared.txt\n@@ -1,3 +1,3 @@\n one\n-two, the parent's\n+two, the fork's\n three\n"

// uiMerge is what ui_merge.mjs saw.
type uiMerge struct {
	Picker []struct {
		Value, Text, From string
		Depth             int
	} `json:"picker"`
	ForkOf      string                          `json:"forkOf"`
	MergeButton string                          `json:"mergeButton"`
	Changes     []struct{ Path, Change string } `json:"changes"`
	ChangesMeta string                          `json:"changesMeta"`
	// StrategyOpen: the strategy could be picked once the dry run showed.
	StrategyOpen bool    `json:"strategyOpen"`
	Dry          mgLists `json:"dry"`
	Done         mgLists `json:"done"`
	Undo         string  `json:"undo"`
	UndoText     string  `json:"undoText"`
}

type mgLists struct {
	Applied []struct {
		Path, Op, Change, Text string
	} `json:"applied"`
	Conflicts []mgConflict `json:"conflicts"`
	Taken     []mgConflict `json:"taken"`
	Skipped   []string     `json:"skipped"`
}

type mgConflict struct {
	Path, Why, Took, Diff string
}

// populateConsoleProj lays out the fork's parent.
func populateConsoleProj(t *testing.T, dir string) {
	t.Helper()
	for rel, body := range projBase {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644))
	}
}

// makeConsoleFork forks proj (an overlay as root, else a copy), then
// writes in the fork and in the parent, through the API.
func makeConsoleFork(t *testing.T, d *Daemon) {
	t.Helper()
	send := func(method, target string, body []byte) []byte {
		req, err := http.NewRequest(method, d.URL+target, bytes.NewReader(body))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+d.Token)
		if method == "POST" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := d.Client().Do(req)
		must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %s %s", method, target, resp.Status, b)
		}
		return b
	}
	send("POST", "/v1/sandboxes", []byte(`{"name":"`+consoleFork+`","from":"`+consoleProj+`"}`))
	unmountAtEnd(t, filepath.Join(d.State, "forks", consoleFork, "root"))
	for sb, files := range map[string]map[string]string{consoleFork: projFork, consoleProj: projParent} {
		for p, body := range files {
			send("PUT", "/v1/sandboxes/"+sb+"/fs/write?path="+url.QueryEscape(p), []byte(body))
		}
	}
}

// checkConsoleMergeDry runs while the page waits after the dry run: the
// parent's files are as they were.
func checkConsoleMergeDry(t *testing.T, proj string) {
	t.Helper()
	want := map[string]string{}
	for rel, body := range projBase {
		want[rel] = body
	}
	want["shared.txt"] = projParent["/shared.txt"]
	for rel, body := range want {
		if b, err := os.ReadFile(filepath.Join(proj, rel)); err != nil || string(b) != body {
			t.Errorf("after the merge's dry run, the parent's %s is %q (%v), want it unchanged: %q", rel, b, err, body)
		}
	}
}

// checkConsoleMerge checks what the page showed of the fork and its merge,
// and the parent after it.
func checkConsoleMerge(t *testing.T, d *Daemon, m uiMerge, proj string) {
	t.Helper()
	var picker []string
	for _, o := range m.Picker {
		picker = append(picker, o.Value+"|"+o.Text+"|"+o.From+"|"+itoa(int64(o.Depth)))
	}
	if want := []string{"default|default||0", "proj|proj||0", "proj-try|↳ proj-try|proj|1", "scratch|scratch||0"}; !slices.Equal(picker, want) {
		t.Errorf("picker (value|text|from|depth): %q, want %q", picker, want)
	}
	if !strings.HasPrefix(m.ForkOf, "of proj at cp_") || m.MergeButton != "Merge into proj…" {
		t.Errorf("the fork's bar: %q, button %q", m.ForkOf, m.MergeButton)
	}
	var changes []string
	for _, c := range m.Changes {
		changes = append(changes, c.Change+" "+c.Path)
	}
	if want := []string{"modified /notes/plan.md", "modified /shared.txt"}; !slices.Equal(slices.Sorted(slices.Values(changes)), want) ||
		!strings.HasPrefix(m.ChangesMeta, "2 paths changed since the fork from proj") {
		t.Errorf("the fork's change set: %q (%q), want %q", changes, m.ChangesMeta, want)
	}

	if !m.StrategyOpen {
		t.Errorf("the strategy could not be picked after the dry run")
	}
	wantApplied := func(name string, l mgLists, paths ...string) {
		var got []string
		for _, a := range l.Applied {
			got = append(got, a.Op+" "+a.Path+" "+a.Change)
			if !strings.Contains(a.Text, a.Path) || !strings.Contains(a.Text, a.Change) {
				t.Errorf("%s: row %q shows neither its path nor its change", name, a.Text)
			}
		}
		if !slices.Equal(got, paths) {
			t.Errorf("%s: applied %q, want %q", name, got, paths)
		}
	}
	wantApplied("dry run", m.Dry, "write /notes/plan.md modified")
	if len(m.Dry.Conflicts) != 1 || m.Dry.Conflicts[0].Path != "/shared.txt" || m.Dry.Conflicts[0].Why != "changed on both sides" || m.Dry.Conflicts[0].Took != "" ||
		m.Dry.Conflicts[0].Diff != sharedDiff || len(m.Dry.Taken) > 0 || len(m.Dry.Skipped) > 0 {
		t.Errorf("dry run: conflicts %+v, taken %+v, skipped %q; want /shared.txt alone, with its diff:\n%s", m.Dry.Conflicts, m.Dry.Taken, m.Dry.Skipped, sharedDiff)
	}

	wantApplied("merge (theirs)", m.Done, "write /notes/plan.md modified", "write /shared.txt modified")
	if len(m.Done.Conflicts) > 0 || len(m.Done.Taken) != 1 || m.Done.Taken[0].Path != "/shared.txt" || m.Done.Taken[0].Took != "theirs" ||
		len(m.Done.Skipped) > 0 {
		t.Errorf("merge (theirs): conflicts left %+v, taken %+v, skipped %q; want /shared.txt taken as theirs, none left or skipped",
			m.Done.Conflicts, m.Done.Taken, m.Done.Skipped)
	}
	st, b := named(t, d, d.Token, "GET", consoleProj, "/checkpoints", nil)
	var list struct{ Checkpoints []struct{ ID, Reason string } }
	if err := json.Unmarshal(b, &list); err != nil || st != http.StatusOK {
		t.Fatalf("checkpoints of proj: %d %s", st, b)
	}
	if !slices.ContainsFunc(list.Checkpoints, func(c struct{ ID, Reason string }) bool { return c.ID == m.Undo && c.Reason == "before-merge" }) ||
		!strings.Contains(m.UndoText, "undo: checkpoint "+m.Undo+" of proj") {
		t.Errorf("the merge's undo shown: %q (%q); proj's checkpoints %+v", m.Undo, m.UndoText, list.Checkpoints)
	}
	for rel, body := range map[string]string{"notes/plan.md": projFork["/notes/plan.md"], "shared.txt": projFork["/shared.txt"], "keep.txt": projBase["keep.txt"]} {
		if b, err := os.ReadFile(filepath.Join(proj, rel)); err != nil || string(b) != body {
			t.Errorf("after the merge, the parent's %s is %q (%v), want %q", rel, b, err, body)
		}
	}
}

// runPaused runs cmd, its stdout and stderr together in the answer; at
// each line "PAUSE name" it calls at(name), then lets the script go on
// (a line "go" on its stdin).
func runPaused(cmd *exec.Cmd, at func(name string)) ([]byte, error) {
	var mu sync.Mutex
	var out bytes.Buffer
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		mu.Lock()
		out.WriteString(line + "\n")
		mu.Unlock()
		if name, ok := strings.CutPrefix(line, "PAUSE "); ok {
			at(name)
			io.WriteString(stdin, "go\n")
		}
	}
	if sc.Err() != nil {
		io.Copy(cmd.Stderr, stdout) // a line too long: kept whole, so the script never blocks on its output
	}
	stdin.Close()
	err = cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	return bytes.Clone(out.Bytes()), err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
