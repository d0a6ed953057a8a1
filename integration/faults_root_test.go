package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandfs/internal/testenv"
)

// Faults: the root taken away and the inotify watch limit, and what
// every family answers afterwards.

// familyCalls are a read, a list and a write in each family, for the tests
// that take the root away: each must answer, never with a 5xx.
func familyCalls(base string) []*http.Request {
	get := func(u string) *http.Request { r, _ := http.NewRequest("GET", base+u, nil); return r }
	post := func(u, body string) *http.Request {
		r, _ := http.NewRequest("POST", base+u, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	put := func(u, body string) *http.Request {
		r, _ := http.NewRequest("PUT", base+u, strings.NewReader(body))
		return r
	}
	return []*http.Request{
		get("/v1/fs/file?path=/f.txt"), get("/v1/fs/entries?path=/"), put("/v1/fs/file?path=/new.txt", "n"),
		get("/v2/fs/read?path=/f.txt"), get("/v2/fs/list?path=/"), post("/v2/fs/write", `{"path":"/new2.txt","content":"n"}`),
		post("/v1/file/read", `{"file":"/f.txt"}`), post("/v1/file/list", `{"path":"/"}`), post("/v1/file/write", `{"file":"/new3.txt","content":"n"}`),
		get("/v1/sandboxes/default/fs/read?path=/f.txt"), get("/v1/sandboxes/default/fs/list?path=/"), put("/v1/sandboxes/default/fs/write?path=/new4.txt", "n"),
		get("/health"),
	}
}

// TestFaultRootGone: the root removed, or renamed away and replaced, under a
// running daemon. The daemon serves by an fd on the directory it opened: a
// renamed-away root keeps being served at its new place (the replacement is
// not seen until a restart); a removed root answers not-found for every
// path and refuses new files (ENOENT, 404 / 200 success:false), never a 5xx
// or a crash; a restart serves the new directory.
func TestFaultRootGone(t *testing.T) {
	for _, how := range []string{"removed", "replaced"} {
		t.Run(how, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "root")
			seedOld(t, root)
			d := startDaemon(t, "--root", root)
			switch how {
			case "removed":
				must(t, os.RemoveAll(root))
			case "replaced":
				must(t, os.Rename(root, filepath.Join(base, "moved")))
				must(t, os.MkdirAll(root, 0o755))
				must(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("replacement"), 0o644))
			}
			var seen []string
			for _, r := range familyCalls(d.URL) {
				resp, err := http.DefaultClient.Do(r)
				if err != nil {
					t.Fatalf("%s %s: %v\n%s", r.Method, r.URL, err, d.Log())
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				seen = append(seen, fmt.Sprintf("%s %s → %d", r.Method, r.URL.RequestURI(), resp.StatusCode))
				if resp.StatusCode >= 500 {
					t.Errorf("%s %s: %s: %s", r.Method, r.URL, resp.Status, b)
				}
				isWrite := r.Method == "PUT" || strings.HasSuffix(r.URL.Path, "/write")
				isRead := strings.Contains(r.URL.RawQuery, "f.txt") || bytes.Contains(bodyOf(r), []byte("f.txt"))
				switch {
				case how == "removed" && isWrite && resp.StatusCode == 200 && !bytes.Contains(b, []byte(`"success":false`)):
					t.Errorf("%s %s wrote into a removed root: %s", r.Method, r.URL, b)
				case how == "replaced" && isRead && !bytes.Contains(b, []byte("old f")):
					t.Errorf("%s %s: %d %s; want the old root's file (served by fd)", r.Method, r.URL, resp.StatusCode, b)
				}
			}
			t.Logf("root %s:\n%s", how, strings.Join(seen, "\n"))
			want := map[string]string{"removed": "removed", "replaced": "moved"}[how]
			var h struct {
				Status string            `json:"status"`
				Roots  map[string]string `json:"roots"`
			}
			resp, err := http.Get(d.URL + "/health")
			must(t, err)
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if resp.StatusCode != 200 || h.Status != "ok" || h.Roots["default"] != want {
				t.Errorf("/health: %s %+v, want roots.default %q", resp.Status, h, want)
			}
			if !waitFor(10*time.Second, func() bool { return strings.Contains(d.Log(), "the sandbox root was removed or moved away") }) {
				t.Errorf("the daemon did not log the root's loss:\n%s", d.Log())
			}
			if _, exited := d.Wait(0); exited {
				t.Fatalf("daemon exited:\n%s", d.Log())
			}
			if how == "replaced" {
				wantContent(t, filepath.Join(base, "moved", "new.txt"), "n") // the write landed in the directory served
				wantContent(t, filepath.Join(root, "f.txt"), "replacement")
			}
			d.Stop(t)
			d2 := startDaemon(t, "--root", root)
			resp, err = http.Get(d2.URL + "/v1/fs/entries?path=/")
			must(t, err)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("after a restart: %s", resp.Status)
			}
		})
	}
}

// TestFaultInotifyLimit: the daemon runs in its own user namespace whose
// inotify watch limit is 8, over a tree of 30 directories. The API serves
// as usual, /health and the watcher list say the watch is degraded, and a
// watcher over a directory that could not be watched reports overflow.
func TestFaultInotifyLimit(t *testing.T) {
	requireRoot(t, "inotify limit test (user namespace)")
	if out, err := exec.Command("unshare", "--user", "--map-root-user", "true").CombinedOutput(); err != nil {
		testenv.Skip(t, nil, "INOTIFY LIMIT TEST NOT RUN: cannot make a user namespace (unshare --user): %v %s", err, out)
	}
	wrapper := filepath.Join(t.TempDir(), "limited-sandfs")
	must(t, os.WriteFile(wrapper, []byte(`#!/bin/sh
exec unshare --user --map-root-user sh -c 'echo 8 > /proc/sys/user/max_inotify_watches && exec "$0" "$@"' `+sandfsBin(t)+` "$@"
`), 0o755))
	root := t.TempDir()
	for i := 0; i < 30; i++ {
		must(t, os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%02d", i)), 0o755))
	}
	d := startDaemonWith(t, daemonOptions{Bin: wrapper}, "--root", root)
	var h struct {
		Status   string   `json:"status"`
		Watch    string   `json:"watch"`
		Degraded []string `json:"degraded"`
	}
	if !waitFor(20*time.Second, func() bool {
		resp, err := http.Get(d.URL + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&h) == nil && h.Watch == "degraded"
	}) {
		t.Fatalf("/health never said degraded: %+v\n%s", h, d.Log())
	}
	if h.Status != "ok" || len(h.Degraded) != 1 || h.Degraded[0] != "default" {
		t.Errorf("/health = %+v", h)
	}
	if !strings.Contains(d.Log(), "inotify watch limit reached") {
		t.Errorf("no log line about the limit:\n%s", d.Log())
	}
	w := newWatch(t, d)
	resp, err := http.Get(d.URL + "/v2/watch")
	must(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"status":"degraded"`) {
		t.Errorf("watcher list: %s", b)
	}
	// A new directory made outside cannot be watched: its watchers lose.
	must(t, os.MkdirAll(filepath.Join(root, "late", "sub"), 0o755))
	overflow := waitFor(20*time.Second, func() bool {
		var out struct {
			Data struct {
				Cursor   uint64 `json:"cursor"`
				Overflow bool   `json:"overflow"`
			} `json:"data"`
		}
		resp, err := http.Get(fmt.Sprintf("%s/v2/watch/%s/poll?cursor=%d&timeout=1", d.URL, w.id, w.cursor))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if json.NewDecoder(resp.Body).Decode(&out) != nil {
			return false
		}
		w.cursor = out.Data.Cursor
		return out.Data.Overflow
	})
	if !overflow {
		t.Errorf("the watcher never reported overflow for an unwatchable directory")
	}
	// The API keeps serving, and its own changes are still told.
	restPut(t, d, "/d29/api.txt", "api")
	if got := restGet(t, d, "/d29/api.txt"); got != "api" {
		t.Errorf("read back %q", got)
	}
	w.until(t, "/d29/api.txt", "api")
	for _, r := range familyCalls(d.URL) {
		resp, err := http.DefaultClient.Do(r)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Errorf("%s %s: %s", r.Method, r.URL, resp.Status)
		}
	}
}

// bodyOf is the body a familyCalls request sends.
func bodyOf(r *http.Request) []byte {
	if r.GetBody == nil {
		return nil
	}
	rc, err := r.GetBody()
	if err != nil {
		return nil
	}
	b, _ := io.ReadAll(rc)
	return b
}
