package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Events from the mount: what the journal and the AIO watch tell of
// operations made through FUSE, and with which actor.

// logEvent is one "msg=event" line of a daemon run with --log-events.
type logEvent map[string]string

var logKV = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S*)`)

func parseEvents(log string) []logEvent {
	var out []logEvent
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, " msg=event ") {
			continue
		}
		e := logEvent{}
		for _, m := range logKV.FindAllStringSubmatch(l, -1) {
			v := m[2]
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			e[m[1]] = v
		}
		out = append(out, e)
	}
	return out
}

// waitEvent polls the daemon's event log until one matches.
func waitEvent(t *testing.T, d *Daemon, match func(logEvent) bool) []logEvent {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		evs := parseEvents(d.Log())
		for _, e := range evs {
			if match(e) {
				return evs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("event not seen in 15s; log:\n%s", d.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFUSEEvents(t *testing.T) {
	for _, mode := range fuseModes {
		t.Run(mode.name, func(t *testing.T) { testEvents(t, mode.args) })
	}
}

// testEvents: a write through the mount is create + write with origin fuse,
// pid and uid, never also external; a rename is one rename with old_path.
func testEvents(t *testing.T, args []string) {
	d, mnt := startMirror(t, append([]string{"--log-events"}, args...)...)
	watch := newWatch(t, d)
	must(t, os.WriteFile(filepath.Join(mnt, "new"), []byte("data"), 0o644))
	must(t, os.Rename(filepath.Join(mnt, "new"), filepath.Join(mnt, "renamed")))
	must(t, os.Mkdir(filepath.Join(mnt, "dir"), 0o755))
	must(t, os.Remove(filepath.Join(mnt, "renamed")))
	var got []string
	for _, e := range eventsBeforeSentinel(t, d) {
		got = append(got, e.line())
		if e["origin"] == "fuse" {
			if pid, _ := strconv.Atoi(e["pid"]); pid <= 0 {
				t.Errorf("fuse event %v has no pid", e)
			}
			if e["uid"] != strconv.Itoa(os.Getuid()) {
				t.Errorf("fuse event %v: got uid %s, want %d", e, e["uid"], os.Getuid())
			}
		}
	}
	want := []string{
		"create /new<- fuse",
		"write /new<- fuse",
		"rename /renamed<-/new fuse",
		"create /dir<- fuse",
		"remove /renamed<- fuse",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got events in the log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The same through the AIO watch route.
	got = nil
	for _, e := range watch.until(t, "/sentinel", "external") {
		if e.Path == "/sentinel" {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s<-%s %s", e.Type, e.Path, e.OldPath, e.Origin))
		if e.Origin == "fuse" && (e.Pid == nil || *e.Pid == 0 || e.Uid == nil) {
			t.Errorf("fuse event %+v over the watch route has no pid or uid", e)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got events over /v2/watch\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// sentinelEvents writes an outside file, /sentinel, into the root and
// returns the log's events up to its own: inotify keeps order, so once it
// is told every echo of the changes made before it has been read.
func sentinelEvents(t *testing.T, d *Daemon) []logEvent {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(d.Root, "sentinel"), []byte("s"), 0o644))
	return waitEvent(t, d, func(e logEvent) bool { return e["path"] == "/sentinel" && e["origin"] == "external" })
}

// eventsBeforeSentinel is sentinelEvents without the sentinel's own.
func eventsBeforeSentinel(t *testing.T, d *Daemon) []logEvent {
	t.Helper()
	var out []logEvent
	for _, e := range sentinelEvents(t, d) {
		if e["path"] != "/sentinel" {
			out = append(out, e)
		}
	}
	return out
}

// line is the event as the tests compare it: "type path<-old_path origin".
func (e logEvent) line() string {
	return fmt.Sprintf("%s %s<-%s %s", e["type"], e["path"], e["old_path"], e["origin"])
}

// watchEvent is an event as the AIO watch route tells it.
type watchEvent struct {
	Type    string  `json:"type"`
	Path    string  `json:"path"`
	OldPath string  `json:"old_path"`
	Origin  string  `json:"origin"`
	Pid     *uint32 `json:"pid"`
	Uid     *uint32 `json:"uid"`
	Actor   string  `json:"actor"`
	Comm    string  `json:"comm"`
	Cgroup  string  `json:"cgroup"`
}

// TestFUSEEventsActor: a change through the mount names the process that
// made it, its command name and cgroup as /proc tells them (a shell here, in
// this test's cgroup, and the mkdir it runs), in the --log-events line and over the watch route;
// an API request names its X-Sandfs-Actor the same way.
func TestFUSEEventsActor(t *testing.T) {
	d, mnt := startMirror(t, "--log-events")
	watch := newWatch(t, d)
	cmd := exec.Command("sh", "-c", "echo hi > bysh && mkdir shdir")
	cmd.Dir = mnt
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh: %v %s", err, out)
	}
	req, _ := http.NewRequest("PUT", d.URL+"/v1/fs/file?path=/byapi", strings.NewReader("x"))
	req.Header.Set("X-Sandfs-Actor", "agent 7/tool:write")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT with an actor: %s", resp.Status)
	}
	must(t, os.WriteFile(filepath.Join(d.Root, "sentinel"), []byte("s"), 0o644))

	cg, _ := os.ReadFile("/proc/self/cgroup")
	var wantCgroup string
	for _, l := range strings.Split(string(cg), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			wantCgroup = p
		}
	}
	check := func(where, path, origin, actor, comm, cgroup string) {
		t.Helper()
		switch {
		case path == "/bysh" || path == "/shdir":
			want := map[string]string{"/bysh": "sh", "/shdir": "mkdir"}[path] // the shell's child for mkdir
			if origin != "fuse" || comm != want || cgroup != wantCgroup || actor != "" {
				t.Errorf("%s: %s: origin %s comm %q cgroup %q actor %q; want fuse %s %q", where, path, origin, comm, cgroup, actor, want, wantCgroup)
			}
		case path == "/byapi":
			if origin != "api" || actor != "agent 7/tool:write" || comm != "" || cgroup != "" {
				t.Errorf("%s: %s: origin %s actor %q comm %q cgroup %q; want api and the actor", where, path, origin, actor, comm, cgroup)
			}
		}
	}
	seen := map[string]bool{}
	for _, e := range sentinelEvents(t, d) {
		seen[e["path"]] = true
		check("log", e["path"], e["origin"], e["actor"], e["comm"], e["cgroup"])
	}
	for _, e := range watch.until(t, "/sentinel", "external") {
		seen["watch "+e.Path] = true
		check("watch", e.Path, e.Origin, e.Actor, e.Comm, e.Cgroup)
	}
	for _, p := range []string{"/bysh", "/shdir", "/byapi"} {
		if !seen[p] || !seen["watch "+p] {
			t.Errorf("%s: not seen in the log (%v) or over the watch route (%v)", p, seen[p], seen["watch "+p])
		}
	}
}

// aioWatch is a watcher on "/" made through POST /v2/watch.
type aioWatch struct {
	d      *Daemon
	id     string
	cursor uint64
}

func newWatch(t *testing.T, d *Daemon) *aioWatch {
	t.Helper()
	var out struct {
		Data struct {
			WatcherID     string `json:"watcher_id"`
			InitialCursor uint64 `json:"initial_cursor"`
		} `json:"data"`
	}
	resp, err := http.Post(d.URL+"/v2/watch", "application/json", strings.NewReader(`{"path":"/","recursive":true,"debounce":50}`))
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil || out.Data.WatcherID == "" {
		t.Fatalf("POST /v2/watch: %s: %s", resp.Status, b)
	}
	return &aioWatch{d: d, id: out.Data.WatcherID, cursor: out.Data.InitialCursor}
}

// until polls the watcher until an event on path with origin arrives, and
// returns every event up to then.
func (w *aioWatch) until(t *testing.T, path, origin string) []watchEvent {
	t.Helper()
	var all []watchEvent
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		var out struct {
			Data struct {
				Events []watchEvent `json:"events"`
				Cursor uint64       `json:"cursor"`
			} `json:"data"`
		}
		resp, err := http.Get(fmt.Sprintf("%s/v2/watch/%s/poll?cursor=%d&timeout=2", w.d.URL, w.id, w.cursor))
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
			t.Fatalf("poll: %s: %s", resp.Status, b)
		}
		w.cursor = out.Data.Cursor
		all = append(all, out.Data.Events...)
		for _, e := range out.Data.Events {
			if e.Path == path && e.Origin == origin {
				return all
			}
		}
	}
	t.Fatalf("no %s event on %s over the watch route in 15s; got %+v", origin, path, all)
	return nil
}
