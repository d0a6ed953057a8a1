package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/journal"
	"sandfs/rest"
)

// TestChangesVerb: sandfs changes against a real daemon's routes, with the
// agent's, the person's and the outside writer's rows, filters, --diff,
// --json, and a refusal.
func TestChangesVerb(t *testing.T) {
	root := t.TempDir()
	sb, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	srv, err := rest.New(rest.Config{Sandboxes: map[string]*core.Sandbox{"default": sb}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	if err := os.WriteFile(filepath.Join(root, "notes.md"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := core.WithActor(context.Background(), core.Actor{Origin: journal.API, Name: "agent-1"})
	person := core.WithActor(context.Background(), core.Actor{Origin: journal.Mirror, Pid: 4242, Comm: "vim"})
	if _, err := sb.WriteFile(agent, "/app.go", strings.NewReader("package app\n"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.WriteFile(agent, "/app.go", strings.NewReader("package app\n\nfunc main() {}\n"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.WriteFile(person, "/notes.md", strings.NewReader("one\n2\n"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sb.Move(person, "/notes.md", "/NOTES.md", core.MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	sb.Journal().Append(journal.Event{Type: journal.Create, Path: "/gone", Origin: journal.External})

	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		err := runWith(append([]string{"changes", "--server", ts.URL, "--token", "x"}, args...), &stdout, &stderr)
		code := report(err, &stderr)
		return stdout.String(), stderr.String(), code
	}
	times := regexp.MustCompile(`\d\d:\d\d:\d\d(–\d\d:\d\d:\d\d)?`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "R /NOTES.md <- /notes.md  by vim (fuse), 2 events, T\nA /app.go  by agent-1 (api), 3 events, T\n"},
		{[]string{"--actor", "agent-1"}, "A /app.go  by agent-1 (api), 3 events, T\n"},
		{[]string{"--origin", "fuse"}, "R /NOTES.md <- /notes.md  by vim (fuse), 2 events, T\n"},
		{[]string{"--path", "/app.go", "--diff"}, "A /app.go  by agent-1 (api), 3 events, T\n" +
			"--- a/app.go\n+++ b/app.go\n@@ -0,0 +1,3 @@\n+package app\n+\n+func main() {}\n"},
		{[]string{"--since", "3", "--diff"}, "R /NOTES.md <- /notes.md  by vim (fuse), 2 events, T\n" +
			"    (no diff: no content known at the start point: this sandbox keeps no checkpoints (no state directory))\n"},
	} {
		out, errOut, code := run(tc.args...)
		if got := times.ReplaceAllString(out, "T"); got != tc.want || code != 0 || errOut != "" {
			t.Errorf("%q: exit %d\n%s\nwant\n%s\nstderr %q", tc.args, code, got, tc.want, errOut)
		}
	}

	out, _, code := run("--json", "--limit", "1")
	var cs api.Changes
	if err := json.Unmarshal([]byte(out), &cs); err != nil || code != 0 {
		t.Fatalf("--json: %v %q", err, out)
	}
	if cs.Count != 1 || !cs.Truncated || cs.Changes[0].Path != "/NOTES.md" || cs.Changes[0].Last.Origin != "fuse" {
		t.Errorf("--json: %+v", cs)
	}
	if _, errOut, _ := run("--limit", "1"); !strings.Contains(errOut, "only the first 1 changes are shown") {
		t.Errorf("truncated: stderr %q", errOut)
	}
	if _, errOut, code := run("--since", "yesterday"); code == 0 || !strings.Contains(errOut, "since") {
		t.Errorf("bad since: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := run("--since", "cp_nope"); code != 2 || !strings.Contains(errOut, "unknown checkpoint") {
		t.Errorf("unknown checkpoint: exit %d, stderr %q", code, errOut)
	}
	if _, _, code := run("extra"); code != 1 {
		t.Errorf("an argument: exit %d", code)
	}
}

func runWith(args []string, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return run(ctx, args, strings.NewReader(""), stdout, stderr)
}

// TestFormatChange: letters, who, the range of times, colour only when
// asked, and a date for another day.
func TestFormatChange(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.Local)
	at := func(h, m, s int) string {
		return time.Date(2026, 12, 1, h, m, s, 0, time.Local).Format(time.RFC3339Nano)
	}
	r := api.Change{Path: "/a", Change: "modified", Events: 2, Actors: []string{"agent-1"},
		First: api.ChangeEvent{Time: at(14, 3, 2)}, Last: api.ChangeEvent{Time: at(14, 3, 9)}}
	if got := formatChange(r, now, false); got != "M /a  by agent-1 (api), 2 events, 14:03:02–14:03:09\n" {
		t.Errorf("got %q", got)
	}
	r.Diff = "--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n"
	if got := formatChange(r, now, true); !strings.HasPrefix(got, "\x1b[33mM\x1b[0m /a") || !strings.Contains(got, "\x1b[31m-x\x1b[0m\n\x1b[32m+y\x1b[0m\n") {
		t.Errorf("colour: %q", got)
	}
	r = api.Change{Path: "/d", Change: "deleted", IsDir: true, Events: 1, Actors: []string{"external", "fuse", "api"},
		First: api.ChangeEvent{Time: time.Date(2026, 11, 30, 9, 0, 0, 0, time.Local).Format(time.RFC3339Nano)}}
	r.Last = r.First
	if got := formatChange(r, now, false); got != "D /d/  by external + fuse + api, 1 event, 2026-11-30 09:00:00\n" {
		t.Errorf("got %q", got)
	}
	if colourful(&bytes.Buffer{}, func(string) string { return "" }) {
		t.Errorf("a buffer is not a terminal")
	}
}
