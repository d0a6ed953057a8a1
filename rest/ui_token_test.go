package rest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sandfs/internal/testenv"
)

// TestUITokenFromFragment runs the console's tokenFromFragment (the very
// module embedded in the binary, state.js) under node, against a stand-in location,
// history and sessionStorage: the daemon's logged URL /ui/#token=T puts T
// in storage and takes it out of the address bar without a new history
// entry; a fragment token replaces a stored one; other fragment parts and
// the query stay; no fragment leaves everything as it was.
func TestUITokenFromFragment(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Skip(t, []string{"SANDFS_REQUIRE_UI"}, "node is not on PATH: %v", err)
	}
	type result struct {
		Token    string   `json:"token"`
		Stored   *string  `json:"stored"`
		Replaced []string `json:"replaced"` // the URLs given to replaceState
	}
	cases := []struct {
		name, hash, search, stored string
		want                       result
	}{
		{"logged URL", "#token=abc123", "", "", result{Token: "abc123", Stored: ptr("abc123"), Replaced: []string{"/ui/"}}},
		{"replaces a stored token", "#token=new", "", "old", result{Token: "new", Stored: ptr("new"), Replaced: []string{"/ui/"}}},
		{"keeps the query and other fragment parts", "#token=t%2B1&x=1", "?q=2", "", result{Token: "t+1", Stored: ptr("t+1"), Replaced: []string{"/ui/?q=2#x=1"}}},
		{"no fragment: the stored token", "", "", "kept", result{Token: "kept", Stored: ptr("kept"), Replaced: []string{}}},
		{"no fragment, nothing stored", "", "", "", result{Token: "", Replaced: []string{}}},
		{"empty token: removed from the bar, stored one kept", "#token=", "", "kept", result{Token: "kept", Stored: ptr("kept"), Replaced: []string{"/ui/"}}},
		{"another fragment left alone", "#section", "", "", result{Token: "", Replaced: []string{}}},
	}
	dir := uiModuleDir(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"hash": tc.hash, "search": tc.search, "stored": tc.stored})
			script := `import { TOKEN_KEY, tokenFromFragment } from './state.js';
const input = ` + string(in) + `;
const store = new Map();
if (input.stored) store.set(TOKEN_KEY, input.stored);
const storage = { getItem: (k) => store.has(k) ? store.get(k) : null, setItem: (k, v) => store.set(k, String(v)) };
const replaced = [];
const hist = { state: null, replaceState: (s, title, url) => replaced.push(url) };
const loc = { hash: input.hash, search: input.search, pathname: '/ui/' };
const token = tokenFromFragment(loc, hist, storage);
console.log(JSON.stringify({ token, stored: store.has(TOKEN_KEY) ? store.get(TOKEN_KEY) : null, replaced }));
`
			p := filepath.Join(dir, "check.js")
			if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(node, p).CombinedOutput()
			if err != nil {
				t.Fatalf("node: %v\n%s", err, out)
			}
			var got result
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tc.want)
			if string(gj) != string(wj) {
				t.Errorf("got %s, want %s", gj, wj)
			}
		})
	}
}

// uiModuleDir is a directory holding the console's embedded modules, as
// node reads them: ES modules (package.json says so), importable by name.
func uiModuleDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range uiFileNames() {
		if filepath.Ext(f) != ".js" {
			continue
		}
		b, err := uiFiles.ReadFile("ui/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
