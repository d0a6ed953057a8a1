package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// What the console follows and shows, from ui_follow.mjs and the
// end of ui_check.mjs: highlighting made of text, the head of a large text
// file, saves by rename onto the open file, compare or overwrite over a file
// changed on disk, the "saved" status cleared at the next edit, folders
// watchers exclude by default in the tree, the layout at 800 and 600 px, a
// created-then-written file as one feed row, and a closed tab releasing its
// watcher.

type uiFollowResult struct {
	ForgetVisible      bool     `json:"forgetVisible"`
	WatchRefsOpen      int      `json:"watchRefsOpen"`
	WatchRefsClosed    int      `json:"watchRefsClosed"`
	FeedAfterTabClosed bool     `json:"feedAfterTabClosed"`
	Follow             uiFollow `json:"follow"`
}

type uiFollow struct {
	HL struct {
		Lang     string      `json:"lang"`
		Text     string      `json:"text"`
		Spans    [][2]string `json:"spans"`
		Elements int         `json:"elements"`
	} `json:"hl"`
	HLGo  [][2]string `json:"hlGo"`
	Large struct {
		Length       int    `json:"length"`
		Tail         string `json:"tail"`
		Note         string `json:"note"`
		EditDisabled bool   `json:"editDisabled"`
		Binary       bool   `json:"binary"`
	} `json:"large"`
	RenameReloaded      string              `json:"renameReloaded"`
	StaleNote           string              `json:"staleNote"`
	SaveAsks            []string            `json:"saveAsks"`
	DiskBeforeOverwrite string              `json:"diskBeforeOverwrite"`
	Compare             [][2]string         `json:"compare"`
	EditorKept          string              `json:"editorKept"`
	DiskAfterOverwrite  string              `json:"diskAfterOverwrite"`
	StatusAfterEdit     string              `json:"statusAfterEdit"`
	ReloadedUnedited    string              `json:"reloadedUnedited"`
	ExcludedInTree      []string            `json:"excludedInTree"`
	ExcludedInFeed      []string            `json:"excludedInFeed"`
	ExcludedShown       []string            `json:"excludedShown"`
	Layout              map[string]uiLayout `json:"layout"`
}

type uiLayout struct {
	ScrollWidth  int `json:"scrollWidth"`
	ScrollHeight int `json:"scrollHeight"`
	Panes        []struct {
		ID         string   `json:"id"`
		Width      int      `json:"width"`
		Height     int      `json:"height"`
		Inside     bool     `json:"inside"`
		ButtonsOut []string `json:"buttonsOut"`
	} `json:"panes"`
	TopOut []string `json:"topOut"`
}

const (
	hostileJS  = "// <img src=\"x\" onerror=\"window.__pwned=1\">\nconst s = \"<b>not bold</b>\";\nfunction f(n) { return n + 42; }\n"
	bigLogSize = 5 << 20
)

// bigLog is a text file over the console's 4 MiB limit, with a two-byte
// character on every line (a cut may split one).
func bigLog() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < bigLogSize; i++ {
		fmt.Fprintf(&b, "%07d é a line of the big log\n", i)
	}
	return b.Bytes()
}

func populateConsoleFollow(t *testing.T, root string) {
	t.Helper()
	for rel, body := range map[string][]byte{
		"src/hostile.js":  []byte(hostileJS),
		"data/big.log":    bigLog(),
		"docs/atomic.txt": []byte("first version\n"),
	} {
		must(t, os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755))
		must(t, os.WriteFile(filepath.Join(root, rel), body, 0o644))
	}
}

func checkConsoleFollow(t *testing.T, res uiResult, root string) {
	t.Helper()
	f := res.Follow
	// Highlighting: the text unchanged, coloured by spans only.
	if f.HL.Lang != "js" || f.HL.Text != strings.TrimSuffix(hostileJS, "\n") || f.HL.Elements != 0 {
		t.Errorf("highlighted hostile.js: lang %q, %d elements other than spans, text %q", f.HL.Lang, f.HL.Elements, f.HL.Text)
	}
	for _, want := range [][2]string{
		{"hl-c", `// <img src="x" onerror="window.__pwned=1">`}, {"hl-k", "const"}, {"hl-s", `"<b>not bold</b>"`},
		{"hl-k", "function"}, {"hl-k", "return"}, {"hl-n", "42"},
	} {
		if !slices.Contains(f.HL.Spans, want) {
			t.Errorf("highlighted hostile.js: no %q; spans %q", want, f.HL.Spans)
		}
	}
	for _, want := range [][2]string{{"hl-k", "package"}, {"hl-s", `"fmt"`}, {"hl-k", "func"}, {"hl-c", "// appended from outside the daemon"}} {
		if !slices.Contains(f.HLGo, want) {
			t.Errorf("highlighted main.go: no %q; spans %q", want, f.HLGo)
		}
	}

	// The head of the large file: its first MiB, cut at a whole character.
	head := bigLog()[:1<<20]
	for !utf8.Valid(head) {
		head = head[:len(head)-1]
	}
	shown := []rune(strings.TrimSuffix(string(head), "\n"))
	if f.Large.Binary || !f.Large.EditDisabled || f.Large.Length != len(shown) || f.Large.Tail != string(shown[len(shown)-60:]) ||
		!strings.Contains(f.Large.Note, "first 1.0 MiB of 5.0 MiB") {
		t.Errorf("big.log (5 MiB): binary %v, edit disabled %v, %d characters ending %q, note %q; want its first %d characters, ending %q",
			f.Large.Binary, f.Large.EditDisabled, f.Large.Length, f.Large.Tail, f.Large.Note, len(shown), string(shown[len(shown)-60:]))
	}

	// Saves by rename onto the open file.
	if !strings.Contains(f.RenameReloaded, "second version, renamed onto the file") {
		t.Errorf("the open file after a rename onto it: %q", f.RenameReloaded)
	}
	if !strings.Contains(f.StaleNote, "Changed on disk (external) while you edit.") {
		t.Errorf("a rename onto the file being edited: note %q", f.StaleNote)
	}
	if strings.Join(f.SaveAsks, ",") != "compare,overwrite,reload, drop my edits" || f.DiskBeforeOverwrite != "third version, from a tool\n" {
		t.Errorf("save over a file changed on disk: offers %q, disk %q (want unchanged until asked)", f.SaveAsks, f.DiskBeforeOverwrite)
	}
	wantCompare := [][2]string{{"del", "-third version, from a tool\n"}, {"add", "+my edit in the console\n"}, {"ctx", " \n"}}
	if !slices.Equal(f.Compare, wantCompare) || f.EditorKept != "my edit in the console\n" {
		t.Errorf("compare: %q, editor %q; want %q and the edit kept", f.Compare, f.EditorKept, wantCompare)
	}
	if f.DiskAfterOverwrite != "my edit in the console\n" {
		t.Errorf("after overwrite: disk %q", f.DiskAfterOverwrite)
	}
	if f.ReloadedUnedited != "fourth version, before any keystroke" {
		t.Errorf("a rename onto the file open in the editor, reloaded: %q", f.ReloadedUnedited)
	}
	if f.StatusAfterEdit != "" {
		t.Errorf("status at the next edit after a save: %q, want cleared", f.StatusAfterEdit)
	}
	if !res.ForgetVisible {
		t.Errorf("forget token hidden while a token is kept")
	}

	// Folders watchers exclude by default: in the tree, not in the feed
	// unless asked.
	for _, p := range []string{"/node_modules", "/node_modules/left-pad", "/.git", "/docs/__pycache__"} {
		if !slices.Contains(f.ExcludedInTree, p) {
			t.Errorf("tree without a refresh: %s missing from %q", p, f.ExcludedInTree)
		}
	}
	if len(f.ExcludedInFeed) != 0 || !slices.Contains(f.ExcludedShown, "/node_modules") {
		t.Errorf("feed: excluded paths listed by default %q; with \"excluded\" checked %q", f.ExcludedInFeed, f.ExcludedShown)
	}

	// The layout: nothing cut off or scrolling sideways.
	for _, w := range []int{800, 600} {
		l, ok := f.Layout[fmt.Sprint(w)]
		if !ok || l.ScrollWidth > w || len(l.Panes) != 3 || len(l.TopOut) > 0 {
			t.Errorf("at %d px: %+v", w, l)
			continue
		}
		for _, p := range l.Panes {
			if !p.Inside || len(p.ButtonsOut) > 0 || p.Width < 200 || p.Height < 120 {
				t.Errorf("at %d px: pane %s %dx%d inside %v, buttons cut off %q", w, p.ID, p.Width, p.Height, p.Inside, p.ButtonsOut)
			}
		}
	}

	// A created-then-written file is one row, live and replayed.
	for name, rows := range map[string][]feedRow{"live": res.History.EndFeed, "replayed in a later tab": res.History.TabFeed} {
		var of []feedRow
		for _, r := range rows {
			if r.Path == "/docs/from-outside.txt" {
				of = append(of, r)
			}
		}
		if len(of) != 1 || of[0].Type != "create" || of[0].Writes < 1 {
			t.Errorf("feed %s: /docs/from-outside.txt as %+v, want one create row with its writes folded in", name, of)
		}
	}

	// A closed tab released its reference; the first tab goes on.
	if res.WatchRefsOpen != 1 || res.WatchRefsClosed != 0 || !res.FeedAfterTabClosed {
		t.Errorf("closing a tab: watcher references %d then %d, want 1 then 0; the other tab's feed live %v",
			res.WatchRefsOpen, res.WatchRefsClosed, res.FeedAfterTabClosed)
	}
}

// TestWebConsoleNoAuth: a daemon without a token asks for none, and the
// console offers no "forget token".
func TestWebConsoleNoAuth(t *testing.T) {
	node, dir := requireNode(t, uiDir, "playwright-core", "SANDFS_REQUIRE_UI", "the web console browser test", "/usr/bin/chromium")
	d := startDaemon(t, "--no-auth", "--root", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "ui_noauth.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SANDFS_URL="+d.URL, "UI_USERDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node ui_noauth.mjs: %v\n%s", err, out)
	}
	var res struct{ TokenAsked, ForgetVisible bool }
	_, line, _ := strings.Cut(string(out), "RESULT ")
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &res); err != nil {
		t.Fatalf("RESULT: %v\n%s", err, out)
	}
	if res.TokenAsked || res.ForgetVisible {
		t.Errorf("console of a daemon without a token: token asked %v, forget token shown %v; want neither", res.TokenAsked, res.ForgetVisible)
	}
}
