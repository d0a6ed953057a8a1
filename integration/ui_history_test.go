package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The console's history (issue 19): what ui_check.mjs saw of the feed read
// back from the journal, of the checkpoint timeline, "changed since" and
// restore.

// consoleActor names the agent whose writes, made before the daemon
// restarted, the console's feed must open with.
const consoleActor = "agent-7"

// feedRow is a row of the console's feed as the page shows it.
type feedRow struct {
	Seq    string `json:"seq"`
	Origin string `json:"origin"`
	Type   string `json:"type"`
	Path   string `json:"path"`
	Actor  string `json:"actor"`
	Found  bool   `json:"found"`
	Text   string `json:"text"` // the row's line of details, as shown
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
	// The whole feed of the first tab at the end of its session.
	EndFeed []feedRow `json:"endFeed"`
}

// seedConsoleHistory runs a first daemon on state: an agent (X-Sandfs-Actor)
// writes a file in each sandbox; once it stopped, a file is written straight
// into the root. The daemon the test then starts on the same state tells
// that file as found at start.
func seedConsoleHistory(t *testing.T, args []string, root string) {
	t.Helper()
	d := startDaemon(t, args...)
	for _, w := range []struct{ sandbox, path, body string }{
		{"default", "/docs/agent-notes.md", "notes the agent wrote\n"},
		{"scratch", "/from-agent.txt", "the agent was here\n"},
	} {
		req, err := http.NewRequest("PUT", d.URL+"/v1/sandboxes/"+w.sandbox+"/fs/write?path="+w.path, strings.NewReader(w.body))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+d.Token)
		req.Header.Set("X-Sandfs-Actor", consoleActor)
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
	type key struct{ origin, typ, path, actor string }
	has := func(rows []feedRow, want key) *feedRow {
		for i, r := range rows {
			if (key{r.Origin, r.Type, r.Path, r.Actor}) == want {
				return &rows[i]
			}
		}
		return nil
	}
	for _, want := range []key{
		{"api", "create", "/docs/agent-notes.md", consoleActor},
		{"api", "write", "/docs/agent-notes.md", consoleActor},
	} {
		r := has(h.OpenFeed, want)
		if r == nil {
			t.Errorf("feed as the console opened after a restart: no %+v; feed %+v", want, h.OpenFeed)
		} else if !strings.Contains(r.Text, "by "+consoleActor) {
			t.Errorf("feed row %+v does not show its actor", *r)
		}
	}
	if r := has(h.OpenFeed, key{"external", "create", "/docs/while-down.txt", ""}); r == nil || !r.Found || !strings.Contains(r.Text, "found at start") {
		t.Errorf("feed as the console opened: the file written while the daemon was down, marked found at start: %+v; feed %+v", r, h.OpenFeed)
	}
	if has(h.ScratchFeed, key{"api", "write", "/from-agent.txt", consoleActor}) == nil {
		t.Errorf("feed of scratch as the picker switched to it: no write of /from-agent.txt by %s; feed %+v", consoleActor, h.ScratchFeed)
	}
	if has(h.ScratchFeed, key{"external", "create", "/hello.txt", ""}) == nil {
		t.Errorf("feed of scratch: the live outside write is missing after the history; feed %+v", h.ScratchFeed)
	}
	for _, want := range []key{
		{"api", "write", "/docs/notes.txt", ""},
		{"external", "create", "/docs/from-outside.txt", ""},
		{"api", "write", "/docs/agent-notes.md", consoleActor},
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
