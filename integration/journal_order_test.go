package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sandfs/internal/testenv"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// orderKind is one pair of TestJournalOrder: a change made outside the
// daemon (directly on the root, by this process: the daemon is another),
// followed at once by a daemon change of the same path, through REST or
// through the mount.
type orderKind struct {
	name  string
	setup func(o *orderRun, p string) // made before the rounds (outside)
	pair  func(o *orderRun, p string) // the outside change, then the daemon's
	want  func(p string) []string     // the events of the pair, in order
}

// orderRun is the state the pairs share.
type orderRun struct {
	t    *testing.T
	d    *Daemon
	root string
	mnt  string
	c    *http.Client // one keep-alive connection
}

// api posts a JSON body to an AIO v2 route on the one connection.
func (o *orderRun) api(route, body string) {
	o.t.Helper()
	req, err := http.NewRequest("POST", o.d.URL+route, strings.NewReader(body))
	must(o.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := o.c.Do(req)
	must(o.t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		o.t.Fatalf("POST %s %s: %s: %s", route, body, resp.Status, b)
	}
}

// host is API path p on the root (out) or on the mount.
func (o *orderRun) host(p string, out bool) string {
	if out {
		return filepath.Join(o.root, p)
	}
	return filepath.Join(o.mnt, p)
}

// create makes an empty file (one create event).
func (o *orderRun) create(p string, out bool) {
	o.t.Helper()
	fd, err := unix.Open(o.host(p, out), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	must(o.t, err)
	unix.Close(fd)
}

// write writes s to p with open flags fl (one write event, and a create if
// the file is new).
func (o *orderRun) write(p string, out bool, fl int, s string) {
	o.t.Helper()
	fd, err := unix.Open(o.host(p, out), fl|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	must(o.t, err)
	_, err = unix.Write(fd, []byte(s))
	must(o.t, err)
	must(o.t, unix.Close(fd))
}

func jq(s string) string { return strconv.Quote(s) }

// orderKinds are the pairs: the outside change is a rename, a delete, an
// append, a create or a mkdir, the daemon's a delete, a write or a mkdir.
var orderKinds = []orderKind{
	{"api/rename-delete",
		func(o *orderRun, p string) { o.create(p+"y", true) },
		func(o *orderRun, p string) {
			must(o.t, unix.Rename(o.host(p+"y", true), o.host(p+"z", true)))
			o.api("/v2/fs/delete", `{"path":`+jq(p+"z")+`}`)
		},
		func(p string) []string {
			return []string{"rename " + p + "z<-" + p + "y external", "remove " + p + "z api"}
		}},
	{"api/delete-write",
		func(o *orderRun, p string) { o.create(p+"f", true) },
		func(o *orderRun, p string) {
			must(o.t, unix.Unlink(o.host(p+"f", true)))
			o.api("/v2/fs/write", `{"path":`+jq(p+"f")+`,"content":"new"}`)
		},
		func(p string) []string {
			return []string{"remove " + p + "f external", "create " + p + "f api", "write " + p + "f api"}
		}},
	{"api/append-write",
		func(o *orderRun, p string) { o.create(p+"f", true) },
		func(o *orderRun, p string) {
			o.write(p+"f", true, unix.O_APPEND, "more")
			o.api("/v2/fs/write", `{"path":`+jq(p+"f")+`,"content":"new"}`)
		},
		func(p string) []string { return []string{"write " + p + "f external", "write " + p + "f api"} }},
	{"api/create-write", nil,
		func(o *orderRun, p string) {
			o.create(p+"g", true)
			o.api("/v2/fs/write", `{"path":`+jq(p+"g")+`,"content":"new"}`)
		},
		func(p string) []string { return []string{"create " + p + "g external", "write " + p + "g api"} }},
	{"api/create-delete", nil,
		func(o *orderRun, p string) {
			o.create(p+"h", true)
			o.api("/v2/fs/delete", `{"path":`+jq(p+"h")+`}`)
		},
		func(p string) []string { return []string{"create " + p + "h external", "remove " + p + "h api"} }},
	{"api/mkdir-mkdirp", nil,
		func(o *orderRun, p string) {
			must(o.t, unix.Mkdir(o.host(p+"d", true), 0o755))
			o.api("/v2/fs/mkdir", `{"path":`+jq(p+"d/e/f")+`,"parents":true}`)
		},
		func(p string) []string {
			return []string{"create " + p + "d external", "create " + p + "d/e api", "create " + p + "d/e/f api"}
		}},
	{"api/mkdir-write", nil,
		func(o *orderRun, p string) {
			must(o.t, unix.Mkdir(o.host(p+"d", true), 0o755))
			o.api("/v2/fs/write", `{"path":`+jq(p+"d/x")+`,"content":"new"}`)
		},
		func(p string) []string {
			return []string{"create " + p + "d external", "create " + p + "d/x api", "write " + p + "d/x api"}
		}},
	{"fuse/rename-unlink",
		func(o *orderRun, p string) { o.create(p+"y", true) },
		func(o *orderRun, p string) {
			must(o.t, unix.Rename(o.host(p+"y", true), o.host(p+"z", true)))
			must(o.t, unix.Unlink(o.host(p+"z", false)))
		},
		func(p string) []string {
			return []string{"rename " + p + "z<-" + p + "y external", "remove " + p + "z fuse"}
		}},
	{"fuse/delete-create",
		func(o *orderRun, p string) { o.create(p+"f", true) },
		func(o *orderRun, p string) {
			must(o.t, unix.Unlink(o.host(p+"f", true)))
			o.write(p+"f", false, unix.O_CREAT|unix.O_TRUNC, "new")
		},
		func(p string) []string {
			return []string{"remove " + p + "f external", "create " + p + "f fuse", "write " + p + "f fuse"}
		}},
	{"fuse/append-append",
		func(o *orderRun, p string) { o.create(p+"f", true) },
		func(o *orderRun, p string) {
			o.write(p+"f", true, unix.O_APPEND, "more")
			o.write(p+"f", false, unix.O_APPEND, "mount")
		},
		func(p string) []string { return []string{"write " + p + "f external", "write " + p + "f fuse"} }},
	{"fuse/create-write", nil,
		func(o *orderRun, p string) {
			o.create(p+"g", true)
			o.write(p+"g", false, 0, "mount") // no O_TRUNC: a truncation is a change of its own
		},
		func(p string) []string { return []string{"create " + p + "g external", "write " + p + "g fuse"} }},
	{"fuse/create-unlink", nil,
		func(o *orderRun, p string) {
			o.create(p+"h", true)
			must(o.t, unix.Unlink(o.host(p+"h", false)))
		},
		func(p string) []string { return []string{"create " + p + "h external", "remove " + p + "h fuse"} }},
	{"fuse/mkdir-mkdir", nil,
		func(o *orderRun, p string) {
			must(o.t, unix.Mkdir(o.host(p+"d", true), 0o755))
			must(o.t, unix.Mkdir(o.host(p+"d/e", false), 0o755))
		},
		func(p string) []string { return []string{"create " + p + "d external", "create " + p + "d/e fuse"} }},
	{"fuse/mkdir-write", nil,
		func(o *orderRun, p string) {
			must(o.t, unix.Mkdir(o.host(p+"d", true), 0o755))
			o.write(p+"d/x", false, unix.O_CREAT|unix.O_EXCL, "mount")
		},
		func(p string) []string {
			return []string{"create " + p + "d external", "create " + p + "d/x fuse", "write " + p + "d/x fuse"}
		}},
}

// TestJournalOrder: a change made outside the daemon just before a daemon
// change of the same path (through REST on one keep-alive connection, or
// through the mount), with no pause between them, is told once, as
// external, and before the daemon's change; the daemon's is told once with
// its own origin. SANDFS_JOURNAL_ROUNDS sets the rounds (50).
func TestJournalOrder(t *testing.T) {
	rounds := testenv.Count(t, "SANDFS_JOURNAL_ROUNDS", 50)
	kinds := orderKinds
	var d *Daemon
	mnt := ""
	if fuseMissing() == "" {
		d, mnt = startMirror(t, "--log-events")
	} else {
		// The REST pairs still run; the mount's are reported (and fail
		// where SANDFS_REQUIRE_FUSE=1) as requireFUSE does.
		t.Run("fuse", requireFUSE)
		d = startDaemon(t, "--log-events")
		kinds = nil
		for _, k := range orderKinds {
			if strings.HasPrefix(k.name, "api/") {
				kinds = append(kinds, k)
			}
		}
	}
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	o := &orderRun{t: t, d: d, root: d.Root, mnt: mnt, c: &http.Client{Transport: &authTransport{base: tr, token: hostToken}}}
	prefix := func(k, r int) string { return fmt.Sprintf("/k%02d-r%03d-", k, r) }

	// Set-up first, told before the fence; the pairs after it.
	for r := 0; r < rounds; r++ {
		for k, kind := range kinds {
			if kind.setup != nil {
				kind.setup(o, prefix(k, r))
			}
		}
	}
	fence := func(name string) uint64 {
		must(t, os.WriteFile(filepath.Join(d.Root, name), nil, 0o644))
		evs := waitEvent(t, d, func(e logEvent) bool { return e["path"] == "/"+name && e["origin"] == "external" })
		for _, e := range evs {
			if e["path"] == "/"+name {
				seq, _ := strconv.ParseUint(e["seq"], 10, 64)
				return seq
			}
		}
		return 0
	}
	start := fence("fence-start")
	watch := newWatch(t, d) // after the set-up's events
	for r := 0; r < rounds; r++ {
		for k, kind := range kinds {
			kind.pair(o, prefix(k, r))
		}
	}
	fence("fence-end")

	// The journal itself (the daemon's event log), in its order.
	got := map[string][]string{} // by round prefix
	var order []string           // prefixes in the order their first event came
	for _, e := range parseEvents(d.Log()) {
		seq, _ := strconv.ParseUint(e["seq"], 10, 64)
		if seq <= start || !strings.HasPrefix(e["path"], "/k") {
			continue
		}
		px := e["path"][:len("/k00-r000-")]
		if got[px] == nil {
			order = append(order, px)
		}
		s := e["type"] + " " + e["path"]
		if e["old_path"] != "" {
			s += "<-" + e["old_path"]
		}
		got[px] = append(got[px], s+" "+e["origin"])
	}
	// Every pair's events come whole before the next pair's: the pairs ran
	// one after the other.
	var wantOrder []string
	for r := 0; r < rounds; r++ {
		for k := range kinds {
			wantOrder = append(wantOrder, prefix(k, r))
		}
	}
	if strings.Join(order, " ") != strings.Join(wantOrder, " ") {
		t.Errorf("pairs told out of order:\n got %v\nwant %v", order, wantOrder)
	}
	checkRounds(t, "journal", kinds, rounds, got, prefix, false)

	// The same over the AIO watch route (debounce 50 ms): per path in
	// order; writes of one path inside the window may coalesce into the
	// last.
	wgot := map[string][]string{}
	for _, e := range watch.until(t, "/fence-end", "external") {
		if !strings.HasPrefix(e.Path, "/k") {
			continue
		}
		s := e.Type + " " + e.Path
		if e.OldPath != "" {
			s += "<-" + e.OldPath
		}
		px := e.Path[:len("/k00-r000-")]
		wgot[px] = append(wgot[px], s+" "+e.Origin)
	}
	checkRounds(t, "watch route", kinds, rounds, wgot, prefix, true)
}

// checkRounds compares each pair's events with what its kind wants and
// reports, per kind, in how many rounds it was wrong. Over the watch route
// (perPath) the comparison is path by path, with runs of writes of one
// path coalesced into the last, as a debounced watcher may tell them; the
// set-up's events (before the start fence) are not in got.
func checkRounds(t *testing.T, what string, kinds []orderKind, rounds int, got map[string][]string, prefix func(k, r int) string, perPath bool) {
	t.Helper()
	var summary []string
	for k, kind := range kinds {
		bad, missing := 0, 0
		var first string
		for r := 0; r < rounds; r++ {
			px := prefix(k, r)
			g, w := got[px], kind.want(px)
			if perPath {
				g, w = byPath(g), byPath(w)
			}
			if strings.Join(g, "\n") != strings.Join(w, "\n") {
				gs, ws := append([]string(nil), g...), append([]string(nil), w...)
				sort.Strings(gs)
				sort.Strings(ws)
				if strings.Join(gs, "\n") != strings.Join(ws, "\n") {
					missing++ // lost (or told twice), not only out of order
				}
				if bad == 0 {
					first = fmt.Sprintf("round %d:\n  got  %s\n  want %s", r, strings.Join(g, "\n       "), strings.Join(w, "\n       "))
				}
				bad++
			}
		}
		summary = append(summary, fmt.Sprintf("%-20s %d/%d wrong (%d lost or doubled, %d out of order only)", kind.name, bad, rounds, missing, bad-missing))
		if bad > 0 {
			t.Errorf("%s: %s: %d of %d rounds wrong; first %s", what, kind.name, bad, rounds, first)
		}
	}
	t.Logf("%s:\n%s", what, strings.Join(summary, "\n"))
}

// byPath sorts events (type path[<-old] origin) stably by path, dropping a
// write that the next event of the same path, also a write, may have
// coalesced.
func byPath(evs []string) []string {
	path := func(s string) string {
		f := strings.Fields(s)
		p, _, _ := strings.Cut(f[1], "<-")
		return p
	}
	var out []string
	for i, e := range evs {
		if strings.HasPrefix(e, "write ") {
			later := false
			for _, n := range evs[i+1:] {
				if path(n) == path(e) {
					later = strings.HasPrefix(n, "write ")
					break
				}
			}
			if later {
				continue
			}
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return path(out[i]) < path(out[j]) })
	return out
}
