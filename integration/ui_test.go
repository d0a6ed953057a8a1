package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// uiDir holds the pinned playwright-core (package.json, package-lock.json),
// its setup.sh (run by CI before the tests; tests never download) and
// ui_check.mjs, which drives the web console in Debian's chromium.
const uiDir = "testdata/ui"

// uiResult is what ui_check.mjs saw in the page.
type uiResult struct {
	TokenAsked        bool     `json:"tokenAsked"`
	TokenStored       string   `json:"tokenStored"`
	Sandboxes         []string `json:"sandboxes"`
	Viewed            string   `json:"viewed"`
	LineNumbers       string   `json:"lineNumbers"`
	AfterSave         string   `json:"afterSave"`
	UploadLabel       string   `json:"uploadLabel"`
	OpenFileRefreshed bool     `json:"openFileRefreshed"`
	FeedWithoutAPI    []string `json:"feedWithoutAPI"`
	FeedNotes         []string `json:"feedNotes"`
	Feed              []struct {
		Origin, Type, Path string
	} `json:"feed"`
	Tree          []string `json:"tree"`
	SameDocument  bool     `json:"sameDocument"`
	Navigations   int      `json:"navigations"`
	Outside       []string `json:"outside"`
	ConsoleErrors []string `json:"consoleErrors"`
	Screenshot    string   `json:"screenshot"`
	ScratchTree   []string `json:"scratchTree"`
	ImageWidth    int      `json:"imageWidth"`
	BinaryText    string   `json:"binaryText"`
	DownloadName  string   `json:"downloadName"`
	DownloadOK    bool     `json:"downloadMatches"`
	SameDocAtEnd  bool     `json:"sameDocumentAtEnd"`
	// The tab opened with /ui/#token=T.
	FragmentAsked     bool      `json:"fragmentAsked"`
	FragmentStored    string    `json:"fragmentStored"`
	FragmentURL       string    `json:"fragmentURL"`
	FragmentSandboxes []string  `json:"fragmentSandboxes"`
	History           uiHistory `json:"history"` // ui_history_test.go
	Merge             uiMerge   `json:"merge"`   // ui_merge_test.go
	uiFollowResult              // ui_follow_test.go
}

// TestWebConsole opens /ui/ of a daemon with a token in a real headless
// chromium: the token dialog, browsing, edit and save, uploads (file picker
// and drag and drop), and the live feed showing files written straight into
// the root (origin external) while the tree and the open file follow, all
// without a reload; then the same for a second sandbox, whose feed comes
// over the §5 websocket. The daemon is one restarted on its state: the feed
// opens with what an agent did before the restart and what was written
// while it was down; the history tab makes and deletes checkpoints, lists
// what changed since one with the exact diff, and restores one path after
// dry runs of three scopes (ui_history_test.go). A fork of sandbox proj
// shows under it in the picker, its change set in its history, and merges
// into proj from its dialog, the dry run first (ui_merge_test.go). The
// screenshots (console.png, console-history.png, console-800.png at 800
// px, console-restore.png, console-merge.png, and console.failed.png when
// a step fails) stay in the artifacts directory the test logs.
func TestWebConsole(t *testing.T) {
	node, dir := requireNode(t, uiDir, "playwright-core", "SANDFS_REQUIRE_UI", "the web console browser test", "/usr/bin/chromium")

	root := t.TempDir()
	populateConsoleSandbox(t, root)
	populateConsoleFollow(t, root)
	const token = "ui-check-token-41d9"
	scratch := t.TempDir()
	if err := os.WriteFile(filepath.Join(scratch, "seed.txt"), []byte("seed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	populateConsoleProj(t, proj)
	// A first daemon on the same state leaves history: the console must open with it.
	args := []string{"--token", token, "--root", root, "--sandbox", "scratch=" + scratch, "--sandbox", consoleProj + "=" + proj, "--state", t.TempDir()}
	seedConsoleHistory(t, args, root)
	d := startDaemon(t, args...)
	makeConsoleFork(t, d)

	// The screenshot is an artifact: it outlives the test, in
	// SANDFS_UI_ARTIFACTS or a temp dir of its own, whose path is logged.
	artifacts := os.Getenv("SANDFS_UI_ARTIFACTS")
	if artifacts == "" {
		var err error
		if artifacts, err = os.MkdirTemp("", "sandfs-ui-artifacts-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifacts, "console.png")
	t.Logf("artifacts: screenshot at %s", shot)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "ui_check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"SANDFS_URL="+d.URL,
		"SANDFS_TOKEN="+token,
		"UI_ROOT="+root,
		"UI_USERDIR="+t.TempDir(),
		"UI_SHOT="+shot,
		"UI_SCRATCH="+scratch,
	)
	dryChecked := false
	out, err := runPaused(cmd, func(name string) {
		if name == "merge-dry-run" {
			checkConsoleMergeDry(t, proj)
			dryChecked = true
		}
	})
	if err == nil && !dryChecked {
		t.Errorf("ui_check.mjs never paused after the merge's dry run: the parent was not checked on disk then")
	}
	if err != nil {
		t.Fatalf("node ui_check.mjs: %v\n%s\n--- daemon log ---\n%s", err, out, d.Log())
	}
	t.Logf("node ui_check.mjs:\n%s", out)
	var res uiResult
	_, line, ok := strings.Cut(string(out), "RESULT ")
	if !ok {
		t.Fatalf("ui_check.mjs printed no RESULT line")
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &res); err != nil {
		t.Fatalf("RESULT: %v", err)
	}

	checkConsoleResult(t, res, token)
	checkConsoleHistoryFeed(t, res.History)
	checkConsoleHistory(t, d, res.History)
	checkConsoleDisk(t, root)
	checkConsoleFollow(t, res, root)
	checkConsoleMerge(t, d, res.Merge, proj)
	if b, err := os.ReadFile(shot); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10_000 {
		t.Errorf("screenshot %s: %d bytes, %v; want a PNG of the page", shot, len(b), err)
	}
}

// populateConsoleSandbox lays out a small project, as an agent's run might
// leave it, before the daemon starts.
func populateConsoleSandbox(t *testing.T, root string) {
	t.Helper()
	files := map[string]string{
		"README.md":      "# demo\n\nA sandbox an agent is working in.\n",
		"docs/notes.txt": "hello\nworld\n",
		"docs/design.md": "## Design\n\n- one journal\n- four families\n",
		"src/main.go":    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greet(\"sandfs\"))\n}\n",
		"src/util.go":    "package main\n\nfunc greet(name string) string { return \"hello, \" + name }\n",
		"data/blob.bin":  string(bytes.Repeat([]byte{0, 1, 2, 0xfe, 0xff}, 400)),
	}
	for rel, body := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img := image.NewRGBA(image.Rect(0, 0, 48, 48))
	for y := 0; y < 48; y++ {
		for x := 0; x < 48; x++ {
			img.Set(x, y, color.RGBA{uint8(40 + 4*x), uint8(90 + 2*y), 200, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "assets", "logo.png"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func checkConsoleResult(t *testing.T, res uiResult, token string) {
	t.Helper()
	if !res.TokenAsked || res.TokenStored != token {
		t.Errorf("token: asked %v, kept in sessionStorage %q; want asked and %q", res.TokenAsked, res.TokenStored, token)
	}
	if res.FragmentAsked || res.FragmentStored != token || !strings.HasSuffix(res.FragmentURL, "/ui/") ||
		strings.Join(res.FragmentSandboxes, ",") != "default,proj,proj-try,scratch" {
		t.Errorf("tab opened with /ui/#token=: asked %v, stored %q, address %q, sandboxes %q; want no dialog, %q stored, the address without the fragment, and the console working",
			res.FragmentAsked, res.FragmentStored, res.FragmentURL, res.FragmentSandboxes, token)
	}
	if strings.Join(res.Sandboxes, ",") != "default,proj,proj-try,scratch" {
		t.Errorf("sandbox picker: %q, want [default proj proj-try scratch]", res.Sandboxes)
	}
	if res.Viewed != "hello\nworld" || res.LineNumbers != "1\n2" {
		t.Errorf("file view: text %q, line numbers %q; want the two lines numbered 1 and 2", res.Viewed, res.LineNumbers)
	}
	if res.AfterSave != "hello\nedited in the console\n\tindented line" {
		t.Errorf("view after save: %q", res.AfterSave)
	}
	if res.ImageWidth != 48 {
		t.Errorf("image view: naturalWidth %d, want the 48-pixel logo", res.ImageWidth)
	}
	if res.BinaryText != "2.0 KiB (2000 bytes)" {
		t.Errorf("binary view: %q, want its size", res.BinaryText)
	}
	if res.DownloadName != "blob.bin" || !res.DownloadOK {
		t.Errorf("download: %q, bytes equal to data/blob.bin: %v", res.DownloadName, res.DownloadOK)
	}
	if res.UploadLabel != "3.0 MiB" {
		t.Errorf("dropped upload's finished label: %q, want its size 3.0 MiB", res.UploadLabel)
	}
	if !res.OpenFileRefreshed {
		t.Errorf("the open file did not follow a change made outside")
	}

	type ev struct{ origin, typ, path string }
	seen := map[ev]bool{}
	for _, e := range res.Feed {
		seen[ev{e.Origin, e.Type, e.Path}] = true
	}
	for _, want := range []ev{
		{"external", "create", "/docs/from-outside.txt"},
		{"external", "write", "/src/main.go"},
		{"api", "write", "/docs/notes.txt"},
		{"api", "rename", "/src/todo.md"},
		{"api", "remove", "/docs/design.md"},
		{"api", "rename", "/docs/picked.txt"}, // the upload's .part renamed onto the target
		{"api", "rename", "/src/dropped.bin"},
	} {
		if !seen[want] {
			t.Errorf("feed: no %s %s with origin %s; feed %+v", want.typ, want.path, want.origin, res.Feed)
		}
	}
	for _, e := range res.Feed {
		if e.Path == "/docs/from-outside.txt" && e.Origin != "external" {
			t.Errorf("feed: %s %s has origin %s, want only external", e.Type, e.Path, e.Origin)
		}
	}
	if len(res.FeedWithoutAPI) == 0 {
		t.Errorf("origin filter without api: empty list, want the external events")
	}
	for _, o := range res.FeedWithoutAPI {
		if o == "api" {
			t.Errorf("origin filter without api still shows an api event: %q", res.FeedWithoutAPI)
			break
		}
	}
	if len(res.FeedNotes) == 0 {
		t.Errorf("path filter \"notes\": empty list, want the edits of /docs/notes.txt")
	}
	for _, p := range res.FeedNotes {
		if !strings.Contains(p, "notes") {
			t.Errorf("path filter \"notes\" shows %q", p)
		}
	}
	inTree := map[string]bool{}
	for _, p := range res.Tree {
		inTree[p] = true
	}
	for _, p := range []string{"/docs/from-outside.txt", "/docs/picked.txt", "/src/dropped.bin", "/src/main.go", "/src/todo.md", "/assets"} {
		if !inTree[p] {
			t.Errorf("tree: %s missing from %q", p, res.Tree)
		}
	}
	if strings.Join(res.ScratchTree, ",") != "/,/from-agent.txt,/hello.txt,/seed.txt" {
		t.Errorf("tree of sandbox scratch after an outside write: %q, want /, /from-agent.txt, /hello.txt, /seed.txt", res.ScratchTree)
	}
	if !res.SameDocument || !res.SameDocAtEnd || res.Navigations != 1 {
		t.Errorf("the page reloaded (same document %v, %d navigations); want one load", res.SameDocument, res.Navigations)
	}
	if len(res.Outside) > 0 {
		t.Errorf("the console requested URLs outside the daemon: %q", res.Outside)
	}
	if len(res.ConsoleErrors) > 0 {
		t.Errorf("console errors: %q", res.ConsoleErrors)
	}
}

func checkConsoleDisk(t *testing.T, root string) {
	t.Helper()
	dropped := make([]byte, 3*1024*1024+7)
	for i := range dropped {
		dropped[i] = byte(i*31 + i>>9)
	}
	for rel, want := range map[string][]byte{
		"docs/notes.txt":        []byte("hello\nedited in the console\n\tindented line\n"),
		"docs/picked.txt":       []byte("uploaded with the picker\n"),
		"src/dropped.bin":       dropped,
		"docs/from-outside.txt": []byte("written straight into the root\n"),
		"src/todo.md":           []byte("- ship the console\n"),
		"src/util.go":           []byte("package main\n\nfunc greet(name string) string { return \"hello, \" + name }\n"),
		"data/blob.bin":         bytes.Repeat([]byte{0, 1, 2, 0xfe, 0xff}, 400),
	} {
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Errorf("on disk: %v", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("on disk: %s has %d bytes %q…, want %d bytes %q…", rel, len(got), head(got), len(want), head(want))
		}
	}
	for _, gone := range []string{"docs/todo.txt", "docs/design.md"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("on disk: %s should be gone (moved or deleted in the console): %v", gone, err)
		}
	}
	for _, d := range []string{"docs", "src"} {
		ents, _ := os.ReadDir(filepath.Join(root, d))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".sandfs-") {
				t.Errorf("on disk: %s/%s left behind", d, e.Name())
			}
		}
	}
}
