package integration

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The console's history: what ui_check.mjs saw of the feed read
// back from the journal, of the checkpoint timeline, "changed since" and
// restore.

// consoleActor names the agent whose writes, made before the daemon
// restarted, the console's feed must open with.
const consoleActor = "agent-7"

// A name and an actor made of markup: the console must show them as text.
const (
	hostilePath  = "/docs/<b id=pwn>bold.txt"
	hostileActor = "<img src=x onerror=window.__pwned=1>"
)

// feedRow is a row of the console's feed as the page shows it.
type feedRow struct {
	Seq    string `json:"seq"`
	Origin string `json:"origin"`
	Type   string `json:"type"`
	Path   string `json:"path"`
	Actor  string `json:"actor"`
	Found  bool   `json:"found"`
	Writes int    `json:"writes"` // writes folded into this create
	Text   string `json:"text"`   // the row's line of details, as shown
}

// uiHistory is the history part of uiResult.
type uiHistory struct {
	// The feed as the console opened, after the daemon restarted.
	OpenFeed []feedRow `json:"openFeed"`
	// The feed of sandbox scratch as the picker switched to it, and after an
	// outside write there (the websocket, resumed after the history).
	ScratchFeed []feedRow `json:"scratchFeed"`
	// The feed of the tab opened at the end: the session's events read back.
	TabFeed []feedRow `json:"tabFeed"`
	// Injected: an element the hostile name or actor holds is in the page,
	// or its handler ran (checked at the end of the history steps).
	Injected bool `json:"injected"`
	// The whole feed of the first tab at the end of its session.
	EndFeed []feedRow `json:"endFeed"`

	// The checkpoint made in the console, as its timeline row shows it.
	Checkpoint struct {
		ID, Name, Seq, Files, Bytes, Text string
	} `json:"checkpoint"`
	// "Changed since" that checkpoint, after changes made outside and by
	// the agent.
	Changes []struct {
		Path, Change, Who, Letter, Text string
	} `json:"changes"`
	ChangesMeta string `json:"changesMeta"`
	// The diff the file view showed for /src/util.go, and the API's.
	DiffShown string `json:"diffShown"`
	DiffPath  string `json:"diffPath"`
	DiffAPI   string `json:"diffAPI"`
	// The layout at 800 px.
	Narrow struct {
		ScrollWidth  int   `json:"scrollWidth"`
		Panes        []int `json:"panes"`
		NewcpVisible bool  `json:"newcpVisible"`
	} `json:"narrow"`
	// The restore dialog's dry runs: the whole tree, the agent's changes,
	// the path whose diff was shown; then the restore of that path.
	DryAll, DryActor, DryPath restoreLists
	// A second checkpoint, deleted with its × button: its id, and the
	// timeline after.
	Deleted             string   `json:"deleted"`
	TimelineAfterDelete []string `json:"timelineAfterDelete"`
	RestoreStatus       string   `json:"restoreStatus"`
	Timeline            []struct {
		ID, Name, Reason string
	} `json:"timeline"`
}

type restoreLists struct {
	Scope                     string
	Written, Removed, Skipped []string
}

// seedConsoleHistory runs a first daemon on state: an agent (X-Sandfs-Actor)
// writes a file in each sandbox; once it stopped, a file is written straight
// into the root. The daemon the test then starts on the same state tells
// that file as found at start.
func seedConsoleHistory(t *testing.T, args []string, root string) {
	t.Helper()
	d := startDaemon(t, args...)
	for _, w := range []struct{ sandbox, path, actor, body string }{
		{"default", "/docs/agent-notes.md", consoleActor, "notes the agent wrote\n"},
		{"scratch", "/from-agent.txt", consoleActor, "the agent was here\n"},
		{"default", hostilePath, hostileActor, "markup in a name\n"},
	} {
		req, err := http.NewRequest("PUT", d.URL+"/v1/sandboxes/"+w.sandbox+"/fs/write?path="+url.QueryEscape(w.path), strings.NewReader(w.body))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("X-Sandfs-Actor", w.actor)
		resp, err := d.Client().Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT %s in %s: %s", w.path, w.sandbox, resp.Status)
		}
	}
	d.Stop(t)
	must(t, os.WriteFile(filepath.Join(root, "docs", "while-down.txt"), []byte("written while the daemon was down\n"), 0o644))
}

func checkConsoleHistoryFeed(t *testing.T, h uiHistory) {
	t.Helper()
	// A key of type "new" is a file created then written: one row, the
	// create, and no other row of that path by that origin.
	type key struct{ origin, typ, path, actor string }
	has := func(rows []feedRow, want key) *feedRow {
		var found *feedRow
		for i, r := range rows {
			typ := r.Type
			if want.typ == "new" && r.Origin == want.origin && r.Path == want.path {
				if found != nil || typ != "create" {
					t.Errorf("feed: %s %s by %s shows as more than one row, or not as its create: %+v", want.origin, want.path, want.actor, rows)
					return nil
				}
				typ = "new"
			}
			if (key{r.Origin, typ, r.Path, r.Actor}) == want && found == nil {
				found = &rows[i]
			}
		}
		return found
	}
	if r := has(h.OpenFeed, key{"api", "new", "/docs/agent-notes.md", consoleActor}); r == nil || !strings.Contains(r.Text, "by "+consoleActor) {
		t.Errorf("feed as the console opened after a restart: the agent's /docs/agent-notes.md, by %s, shown: %+v; feed %+v", consoleActor, r, h.OpenFeed)
	}
	if r := has(h.OpenFeed, key{"external", "create", "/docs/while-down.txt", ""}); r == nil || !r.Found || !strings.Contains(r.Text, "found at start") {
		t.Errorf("feed as the console opened: the file written while the daemon was down, marked found at start: %+v; feed %+v", r, h.OpenFeed)
	}
	if r := has(h.OpenFeed, key{"api", "new", hostilePath, hostileActor}); r == nil || !strings.Contains(r.Text, "by "+hostileActor) {
		t.Errorf("feed as the console opened: the write of %q by %q, shown as text: %+v", hostilePath, hostileActor, r)
	}
	if h.Injected {
		t.Errorf("markup in a file name or an actor became elements of the page (or ran)")
	}
	if has(h.ScratchFeed, key{"api", "new", "/from-agent.txt", consoleActor}) == nil {
		t.Errorf("feed of scratch as the picker switched to it: no write of /from-agent.txt by %s; feed %+v", consoleActor, h.ScratchFeed)
	}
	if has(h.ScratchFeed, key{"external", "new", "/hello.txt", ""}) == nil {
		t.Errorf("feed of scratch: the live outside write is missing after the history; feed %+v", h.ScratchFeed)
	}
	for _, want := range []key{
		{"api", "write", "/docs/notes.txt", ""},
		{"external", "create", "/docs/from-outside.txt", ""},
		{"api", "new", "/docs/agent-notes.md", consoleActor},
	} {
		if has(h.TabFeed, want) == nil {
			t.Errorf("feed of a tab opened later: no %+v read back from the journal; feed %+v", want, h.TabFeed)
		}
	}
	for name, rows := range map[string][]feedRow{"first tab": h.EndFeed, "scratch": h.ScratchFeed, "later tab": h.TabFeed} {
		seen := map[string]bool{}
		for _, r := range rows {
			if r.Seq == "" {
				t.Errorf("feed of the %s: a row without its seq: %+v", name, r)
			} else if seen[r.Seq] {
				t.Errorf("feed of the %s: seq %s shown twice (%s %s)", name, r.Seq, r.Type, r.Path)
			}
			seen[r.Seq] = true
		}
	}
}

// utilDiff is the diff of src/util.go after the test's outside edit.
const utilDiff = "--- a/src/util.go\n+++ b/src/util.go\n@@ -1,3 +1,3 @@\n package main\n \n" +
	"-func greet(name string) string { return \"hello, \" + name }\n+func greet(name string) string { return \"hi, \" + name }\n"

// checkConsoleHistory checks the history tab against the daemon's own
// answers and the files on disk.
func checkConsoleHistory(t *testing.T, d *Daemon, h uiHistory) {
	t.Helper()
	req, err := http.NewRequest("GET", d.URL+"/v1/sandboxes/default/checkpoints", nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := d.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	var list struct {
		Checkpoints []struct {
			ID, Name, Reason  string
			Seq, Files, Bytes int64
		}
	}
	must(t, json.NewDecoder(resp.Body).Decode(&list))
	var made, undo bool
	for _, cp := range list.Checkpoints {
		if cp.ID == h.Checkpoint.ID {
			made = true
			if cp.Name != "before the test" || h.Checkpoint.Name != cp.Name || h.Checkpoint.Seq != itoa(cp.Seq) ||
				h.Checkpoint.Files != itoa(cp.Files) || h.Checkpoint.Bytes != itoa(cp.Bytes) || cp.Files < 10 ||
				!strings.HasPrefix(h.Checkpoint.Text, "seq "+itoa(cp.Seq)+" · "+itoa(cp.Files)+" files · ") {
				t.Errorf("timeline row %+v, the daemon's checkpoint %+v", h.Checkpoint, cp)
			}
		}
		if cp.ID == h.Deleted {
			t.Errorf("checkpoint %s deleted in the console is still listed: %+v", cp.ID, cp)
		}
		if cp.Reason == "before-restore" && strings.Contains(h.RestoreStatus, "undo: checkpoint "+cp.ID) {
			undo = true
		}
	}
	if !made || !undo {
		t.Errorf("checkpoints: the one made in the console (%v, %s) and the restore's undo named in %q (%v), in %+v",
			made, h.Checkpoint.ID, h.RestoreStatus, undo, list.Checkpoints)
	}
	if h.Deleted == "" || !slices.Equal(h.TimelineAfterDelete, []string{h.Checkpoint.ID}) {
		t.Errorf("timeline after deleting %q: %q, want only %s", h.Deleted, h.TimelineAfterDelete, h.Checkpoint.ID)
	}
	if i := slices.IndexFunc(h.Timeline, func(r struct{ ID, Name, Reason string }) bool { return r.Reason == "before-restore" }); i != 0 {
		t.Errorf("timeline after the restore: %+v, want the undo checkpoint on top", h.Timeline)
	}

	rows := map[string]string{}
	for _, c := range h.Changes {
		rows[c.Letter+" "+c.Path] = c.Who
	}
	for row, who := range map[string]string{"M /src/util.go": "external", "A /docs/added-later.txt": "external", "M /README.md": consoleActor} {
		if got, ok := rows[row]; !ok || got != who {
			t.Errorf("changed since the checkpoint: no row %q by %s (%q); rows %+v", row, who, got, h.Changes)
		}
	}
	if len(h.Changes) != 3 {
		t.Errorf("changed since the checkpoint: %d rows, want 3: %+v", len(h.Changes), h.Changes)
	}
	if !strings.HasPrefix(h.ChangesMeta, "3 paths changed since checkpoint before the test") {
		t.Errorf("changed since: %q", h.ChangesMeta)
	}
	if h.DiffShown != utilDiff || h.DiffAPI != utilDiff || h.DiffPath != "/src/util.go" {
		t.Errorf("diff of %s shown:\n%s\nthe API's:\n%s\nwant:\n%s", h.DiffPath, h.DiffShown, h.DiffAPI, utilDiff)
	}
	if n := h.Narrow; n.ScrollWidth > 800 || len(n.Panes) != 3 || slices.Min(n.Panes) < 200 || !n.NewcpVisible {
		t.Errorf("at 800 px: page %d px wide, panes %v px, + checkpoint visible %v", n.ScrollWidth, n.Panes, n.NewcpVisible)
	}

	for _, c := range []struct {
		name string
		got  restoreLists
		want restoreLists
	}{
		{"the whole tree", h.DryAll, restoreLists{Written: []string{"/README.md", "/src/util.go"}, Removed: []string{"/docs/added-later.txt"}}},
		{"what " + consoleActor + " changed", h.DryActor, restoreLists{Written: []string{"/README.md"}}},
		{"/src/util.go", h.DryPath, restoreLists{Written: []string{"/src/util.go"}}},
	} {
		written := slices.Sorted(slices.Values(c.got.Written))
		if !slices.Equal(written, c.want.Written) || !slices.Equal(c.got.Removed, c.want.Removed) || len(c.got.Skipped) > 0 {
			t.Errorf("restore's dry run of %s: %+v, want files written %q, removed %q, none skipped", c.name, c.got, c.want.Written, c.want.Removed)
		}
	}
	if !strings.Contains(h.RestoreStatus, "1 written, 0 removed, 0 skipped") {
		t.Errorf("restore of /src/util.go: status %q", h.RestoreStatus)
	}
	// src/util.go is back (checkConsoleDisk); the rest stayed as it was.
	for rel, want := range map[string]string{"README.md": "# demo\n\nRewritten by the agent.\n", "docs/added-later.txt": "made after the checkpoint\n"} {
		if b, err := os.ReadFile(filepath.Join(d.Root, rel)); err != nil || string(b) != want {
			t.Errorf("on disk after the restore of /src/util.go alone: %s is %q (%v), want %q", rel, b, err, want)
		}
	}
}
