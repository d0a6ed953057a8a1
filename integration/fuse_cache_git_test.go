package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The directories a watcher excludes by default (.git, node_modules) are
// watched like every other now, so the kernel caches there
// too: these tests check that it does, and that the mount stays coherent
// with outside changes there.

// waitWatchReady waits until the daemon's kernel watch has walked the root:
// until then nothing is cacheable.
func waitWatchReady(t *testing.T, d *Daemon) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(d.Log(), "kernel watch ready"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the kernel watch never became ready:\n%s", d.Log())
		}
	}
}

// newWatchExcluding is newWatch with the exclude list given (JSON).
func newWatchExcluding(t *testing.T, d *Daemon, exclude string) *aioWatch {
	t.Helper()
	var out struct {
		Data struct {
			WatcherID     string `json:"watcher_id"`
			InitialCursor uint64 `json:"initial_cursor"`
		} `json:"data"`
	}
	body := fmt.Sprintf(`{"path":"/","recursive":true,"debounce":50,"exclude":%s}`, exclude)
	resp, err := http.Post(d.URL+"/v2/watch", "application/json", strings.NewReader(body))
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil || out.Data.WatcherID == "" {
		t.Fatalf("POST /v2/watch: %s: %s", resp.Status, b)
	}
	return &aioWatch{d: d, id: out.Data.WatcherID, cursor: out.Data.InitialCursor}
}

// pending reads what the watcher holds now (one short poll after another
// until one is empty).
func (w *aioWatch) pending(t *testing.T) []watchEvent {
	t.Helper()
	var all []watchEvent
	for {
		var out struct {
			Data struct {
				Events []watchEvent `json:"events"`
				Cursor uint64       `json:"cursor"`
			} `json:"data"`
		}
		resp, err := http.Get(fmt.Sprintf("%s/v2/watch/%s/poll?cursor=%d&timeout=1", w.d.URL, w.id, w.cursor))
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
			t.Fatalf("poll: %s: %s", resp.Status, b)
		}
		w.cursor = out.Data.Cursor
		if len(out.Data.Events) == 0 {
			return all
		}
		all = append(all, out.Data.Events...)
	}
}

// TestFUSECoherenceUnderGit: with the kernel's caches on, an outside write,
// create, rename, unlink or mkdir under .git/ and node_modules/pkg/ shows
// through the mount at the first system call after the journal told it,
// though the kernel had cached the names and attributes there. A watcher
// with the default excludes hears none of it; one without excludes hears
// each change once, as external.
func TestFUSECoherenceUnderGit(t *testing.T) {
	for _, mode := range fuseModes {
		t.Run(mode.name, func(t *testing.T) {
			d, mnt := startMirror(t, mode.args...)
			waitWatchReady(t, d)
			root := d.Root
			all := newWatchExcluding(t, d, `[]`)
			hidden := newWatch(t, d) // the default excludes
			var heard []watchEvent
			for _, dir := range []string{".git", "node_modules/pkg"} {
				t.Run(dir, func(t *testing.T) {
					m := func(name string) string { return filepath.Join(mnt, dir, name) }
					r := func(name string) string { return filepath.Join(root, dir, name) }
					ap := func(name string) string { return "/" + dir + "/" + name }
					told := func(name string) { t.Helper(); heard = append(heard, all.until(t, ap(name), "external")...) }
					must(t, os.MkdirAll(filepath.Join(mnt, dir), 0o755))
					for _, f := range []string{"HEAD", "gone", "old"} {
						must(t, os.WriteFile(m(f), []byte("ref: main"), 0o644))
						wantContent(t, m(f), "ref: main")
					}
					for _, f := range []string{"late", "new", "sub"} {
						_, err := os.Stat(m(f))
						wantErrno(t, err, unix.ENOENT)
					}

					must(t, os.WriteFile(r("HEAD"), []byte("ref: refs/heads/feature"), 0o644))
					told("HEAD")
					if fi, err := os.Stat(m("HEAD")); err != nil || fi.Size() != 23 {
						t.Errorf("stat after an outside write: %v, %v; want size 23", fi, err)
					}
					wantContent(t, m("HEAD"), "ref: refs/heads/feature")

					must(t, os.WriteFile(r("late"), []byte("here"), 0o644))
					told("late")
					wantContent(t, m("late"), "here")

					must(t, os.Rename(r("old"), r("new")))
					told("new")
					_, err := os.Stat(m("old"))
					wantErrno(t, err, unix.ENOENT)
					wantContent(t, m("new"), "ref: main")

					must(t, os.Remove(r("gone")))
					told("gone")
					_, err = os.Stat(m("gone"))
					wantErrno(t, err, unix.ENOENT)

					must(t, os.Mkdir(r("sub"), 0o755))
					must(t, os.WriteFile(r("sub/x"), []byte("in sub"), 0o644))
					told("sub/x")
					wantContent(t, m("sub/x"), "in sub")
				})
			}
			restPut(t, d, "/end", "end")
			heard = append(heard, all.until(t, "/end", "api")...)
			heard = append(heard, all.pending(t)...)
			// Each change once: nothing twice, and no echo of the mirror's
			// own changes told again as external.
			seen := map[string]int{}
			for _, e := range heard {
				seen[e.Type+" "+e.Path+" "+e.Origin]++
				for _, f := range []string{"HEAD", "gone", "old"} {
					if e.Origin == "external" && e.Type == "create" && strings.HasSuffix(e.Path, "/"+f) {
						t.Errorf("the mirror's create of %s told again as external", e.Path)
					}
				}
			}
			for k, n := range seen {
				// HEAD was written through the mount just before the
				// outside write: one landing before that handle's release
				// reached the daemon is told by the release and by the
				// kernel watch, twice, never lost (core/handle.go,
				// Release). Anything else once.
				if n > 1 && !(n == 2 && strings.HasPrefix(k, "write ") && strings.HasSuffix(k, "/HEAD external")) {
					t.Errorf("%s told %d times", k, n)
				}
			}
			if seen["create /.git/HEAD fuse"] != 1 || seen["write /.git/HEAD external"] < 1 || seen["rename /node_modules/pkg/new external"] != 1 {
				t.Errorf("events heard: %v", seen)
			}
			for _, e := range hidden.pending(t) {
				if strings.HasPrefix(e.Path, "/.git") || strings.HasPrefix(e.Path, "/node_modules") {
					t.Errorf("a watcher with the default excludes heard %+v", e)
				}
			}
		})
	}
}

// TestFUSECachingUnderGit: a second walk of a .git and a node_modules
// through the mount asks the daemon for no name and no attribute: the
// kernel caches them there as anywhere the journal hears.
func TestFUSECachingUnderGit(t *testing.T) {
	d, mnt := startMirror(t, "--fuse-debug")
	waitWatchReady(t, d)
	must(t, os.MkdirAll(filepath.Join(mnt, "dir"), 0o755))
	var files []string
	for _, dir := range []string{".git/objects/ab", ".git/refs/heads", "node_modules/pkg/lib", "node_modules/.bin"} {
		must(t, os.MkdirAll(filepath.Join(mnt, dir), 0o755))
		for i := 0; i < 10; i++ {
			p := filepath.Join(mnt, dir, fmt.Sprintf("f%d", i))
			must(t, os.WriteFile(p, []byte("x"), 0o644))
			files = append(files, p)
		}
	}
	walk := func() {
		for _, p := range files {
			if _, err := os.Stat(p); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{".git/index.lock", "node_modules/pkg/package.json"} {
			if _, err := os.Stat(filepath.Join(mnt, p)); !os.IsNotExist(err) {
				t.Fatalf("stat %s: %v, want not exist", p, err)
			}
		}
	}
	walk() // warm
	reqs := fuseRequests(t, d, mnt, walk)
	var asked []string
	for _, r := range reqs {
		if strings.HasPrefix(r, "LOOKUP") || strings.HasPrefix(r, "GETATTR") {
			asked = append(asked, r)
		}
	}
	if len(asked) != 0 {
		t.Errorf("a warm walk of %d files under .git and node_modules asked the daemon %d times: %v", len(files), len(asked), asked)
	}
}
