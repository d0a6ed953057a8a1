package rest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sandfs/rest/aio"
)

func atLeast(n int) func([]aio.WatchEvent) bool {
	return func(es []aio.WatchEvent) bool { return len(es) >= n }
}

// wantEv is what a test checks of one event; empty fields are not checked
// except OldPath, which must match exactly.
type wantEv struct {
	Type, Path, Rel, OldPath, Origin string
	IsDir                            bool
}

func (w wantEv) String() string {
	s := w.Type + " " + w.Path + " (" + w.Rel + ") " + w.Origin
	if w.OldPath != "" {
		s += " <- " + w.OldPath
	}
	return s
}

func wantEvents(t *testing.T, got []aio.WatchEvent, want []wantEv) {
	t.Helper()
	gs := make([]string, len(got))
	for i, e := range got {
		gs[i] = evString(e)
	}
	if len(got) != len(want) {
		t.Fatalf("events: got %d:\n  %s\nwant %d:\n  %s", len(got), strings.Join(gs, "\n  "), len(want), fmtWant(want))
	}
	for i, w := range want {
		checkEvent(t, got[i], w)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Errorf("seq not increasing: %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
}

func fmtWant(want []wantEv) string {
	ws := make([]string, len(want))
	for i, w := range want {
		ws[i] = w.String()
	}
	return strings.Join(ws, "\n  ")
}

func checkEvent(t *testing.T, e aio.WatchEvent, w wantEv) {
	t.Helper()
	if e.Type != w.Type || e.Path != w.Path || e.RelativePath != w.Rel || e.OldPath != w.OldPath || e.Origin != w.Origin || e.IsDir != w.IsDir {
		t.Errorf("event %d: got %s dir=%v, want %s dir=%v", e.Seq, evString(e), e.IsDir, w, w.IsDir)
	}
	if e.Seq == 0 || e.Timestamp < 1e9 {
		t.Errorf("event %s: seq %d timestamp %v", evString(e), e.Seq, e.Timestamp)
	}
	if e.Type != "remove" && (e.Inode == 0 || e.Mtime < 1e9) {
		t.Errorf("event %s: inode %d mtime %v, want both set", evString(e), e.Inode, e.Mtime)
	}
	if e.Origin != "fuse" && (e.Pid != nil || e.Uid != nil) {
		t.Errorf("event %s: pid/uid on a non-fuse event", evString(e))
	}
}

// TestWatchScenarios runs changes made through the API and directly in the
// root through the routes, with the real kernel watch.
func TestWatchScenarios(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, h *harness) // before the watcher
		act   func(t *testing.T, h *harness)
		want  []wantEv
	}{
		{
			name: "API write of a new file",
			act: func(t *testing.T, h *harness) {
				wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/dir/new.txt", Body: jsonBody("hello")}), 200)
			},
			setup: func(t *testing.T, h *harness) { h.apiMkdir(t, "/dir") },
			want:  []wantEv{{Type: "create", Path: "/dir/new.txt", Rel: "dir/new.txt", Origin: "api"}, {Type: "write", Path: "/dir/new.txt", Rel: "dir/new.txt", Origin: "api"}},
		},
		{
			name:  "API move",
			setup: func(t *testing.T, h *harness) { h.writeFile(t, "/src.txt", "x") },
			act: func(t *testing.T, h *harness) {
				wantStatus(t, h.do(t, req{Method: "POST", Target: "/v1/fs/move", Body: jsonBody(`{"from":"/src.txt","to":"/dst.txt"}`)}), 200)
			},
			want: []wantEv{{Type: "rename", Path: "/dst.txt", Rel: "dst.txt", OldPath: "/src.txt", Origin: "api"}},
		},
		{
			name: "outside create and write",
			act:  func(t *testing.T, h *harness) { h.writeFile(t, "/ext.txt", "outside") },
			want: []wantEv{{Type: "create", Path: "/ext.txt", Rel: "ext.txt", Origin: "external"}, {Type: "write", Path: "/ext.txt", Rel: "ext.txt", Origin: "external"}},
		},
		{
			name:  "outside rename",
			setup: func(t *testing.T, h *harness) { h.writeFile(t, "/a.txt", "a") },
			act: func(t *testing.T, h *harness) {
				if err := os.Rename(h.host("/a.txt"), h.host("/b.txt")); err != nil {
					t.Fatal(err)
				}
			},
			want: []wantEv{{Type: "rename", Path: "/b.txt", Rel: "b.txt", OldPath: "/a.txt", Origin: "external"}},
		},
		{
			name:  "outside remove",
			setup: func(t *testing.T, h *harness) { h.writeFile(t, "/gone.txt", "a") },
			act: func(t *testing.T, h *harness) {
				if err := os.Remove(h.host("/gone.txt")); err != nil {
					t.Fatal(err)
				}
			},
			want: []wantEv{{Type: "remove", Path: "/gone.txt", Rel: "gone.txt", Origin: "external"}},
		},
		{
			name: "directory arriving with files in it",
			act: func(t *testing.T, h *harness) {
				staging := filepath.Join(t.TempDir(), "d")
				for _, p := range []string{"d/sub"} {
					os.MkdirAll(filepath.Join(filepath.Dir(staging), p), 0o755)
				}
				for _, f := range []string{"f1", "f2", "sub/f3"} {
					if err := os.WriteFile(filepath.Join(staging, f), []byte(f), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Rename(staging, h.host("/d")); err != nil {
					t.Fatal(err)
				}
			},
			want: []wantEv{
				{Type: "create", Path: "/d", Rel: "d", Origin: "external", IsDir: true},
				{Type: "create", Path: "/d/f1", Rel: "d/f1", Origin: "external"},
				{Type: "create", Path: "/d/f2", Rel: "d/f2", Origin: "external"},
				{Type: "create", Path: "/d/sub", Rel: "d/sub", Origin: "external", IsDir: true},
				{Type: "create", Path: "/d/sub/f3", Rel: "d/sub/f3", Origin: "external"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h, _ := newWatchHarness(t)
			if c.setup != nil {
				c.setup(t, h)
			}
			w := h.createWatch(t, `{"path":"/","debounce":50}`)
			// Let the kernel echoes of the setup pass the watcher's cursor.
			time.Sleep(100 * time.Millisecond)
			start := h.pollWatch(t, w.WatcherID, w.InitialCursor, 0).Cursor
			c.act(t, h)
			got, _ := h.collect(t, w.WatcherID, start, atLeast(len(c.want)), 1)
			if c.name == "directory arriving with files in it" {
				sort.Slice(got, func(i, j int) bool { return got[i].Path < got[j].Path })
			}
			wantEvents(t, got, c.want)
		})
	}
}

// TestWatchOutsideAppendAfterAPIWrite: an outside edit right after an API
// write of the same path is told, as external.
func TestWatchOutsideAppendAfterAPIWrite(t *testing.T) {
	h, _ := newWatchHarness(t)
	w := h.createWatch(t, `{"path":"/","debounce":50}`)
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/ap.txt", Body: jsonBody("api\n")}), 200)
	f, err := os.OpenFile(h.host("/ap.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("outside\n")
	f.Close()
	got, _ := h.collect(t, w.WatcherID, w.InitialCursor, func(es []aio.WatchEvent) bool {
		return len(es) > 0 && es[len(es)-1].Origin == "external"
	}, 1)
	if len(got) < 2 {
		t.Fatalf("events: got %d, want the API create and an external write", len(got))
	}
	checkEvent(t, got[0], wantEv{Type: "create", Path: "/ap.txt", Rel: "ap.txt", Origin: "api"})
	last := got[len(got)-1]
	checkEvent(t, last, wantEv{Type: "write", Path: "/ap.txt", Rel: "ap.txt", Origin: "external"})
	if last.Size != int64(len("api\noutside\n")) {
		t.Errorf("external write: size %d, want %d", last.Size, len("api\noutside\n"))
	}
	for _, e := range got[1 : len(got)-1] {
		if e.Origin != "api" || e.Type != "write" {
			t.Errorf("between the create and the external write: %s", evString(e))
		}
	}
}

// TestWatchCursor: cursor 0 replays what the watcher holds; initial_cursor
// means from now (a reusing create's initial_cursor skips what came before).
func TestWatchCursor(t *testing.T) {
	h, _ := newWatchHarness(t)
	w1 := h.createWatch(t, `{"path":"/","debounce":50}`)
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/one", Body: jsonBody("1")}), 200)
	h.collect(t, w1.WatcherID, w1.InitialCursor, atLeast(2), 0)
	w2 := h.createWatch(t, `{"path":"/","debounce":50}`)
	if sharedID(w2.WatcherID) != sharedID(w1.WatcherID) || w2.WatcherID == w1.WatcherID || !w2.Reused || w1.Reused {
		t.Fatalf("second create: got %+v, want watcher %s reused", w2, w1.WatcherID)
	}
	if w2.InitialCursor <= w1.InitialCursor {
		t.Errorf("reused initial_cursor: got %d, want past %d", w2.InitialCursor, w1.InitialCursor)
	}
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/two", Body: jsonBody("2")}), 200)
	fromNow, _ := h.collect(t, w2.WatcherID, w2.InitialCursor, atLeast(2), 0)
	wantEvents(t, fromNow, []wantEv{{Type: "create", Path: "/two", Rel: "two", Origin: "api"}, {Type: "write", Path: "/two", Rel: "two", Origin: "api"}})
	replay, _ := h.collect(t, w2.WatcherID, 0, atLeast(4), 0)
	wantEvents(t, replay, []wantEv{
		{Type: "create", Path: "/one", Rel: "one", Origin: "api"}, {Type: "write", Path: "/one", Rel: "one", Origin: "api"},
		{Type: "create", Path: "/two", Rel: "two", Origin: "api"}, {Type: "write", Path: "/two", Rel: "two", Origin: "api"},
	})
}

// TestWatchFile: a file may be watched; its events name it relative to its
// directory, and its siblings are not told.
func TestWatchFile(t *testing.T) {
	h, sb := newWatchHarness(t)
	h.writeFile(t, "/d/f.txt", "x")
	h.writeFile(t, "/d/other.txt", "x")
	settleOutside(t, h, sb)
	w := h.createWatch(t, `{"path":"/d/f.txt","debounce":50}`)
	if w.Path != "/d/f.txt" || w.Status != "active" {
		t.Errorf("create: got %+v", w)
	}
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/d/other.txt", Body: jsonBody("y")}), 200)
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/d/f.txt", Body: jsonBody("y")}), 200)
	got, _ := h.collect(t, w.WatcherID, w.InitialCursor, atLeast(1), 1)
	wantEvents(t, got, []wantEv{{Type: "write", Path: "/d/f.txt", Rel: "f.txt", Origin: "api"}})
}
