package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandfs/api"
	"sandfs/natsout"
	"sandfs/natsout/natstest"
)

// TestAdoptAfterKillRestart: host A serves s1 with placement on, its
// checkpoint is replicated, 3 paths change after it (published), and A is
// killed with -9. B's adoption is refused (409, naming A) while A's lease
// lives and answers 201 once it expired; B's tree is the checkpoint's, byte
// for byte, and the changes it reports lost are exactly the stream's events
// of s1 after the checkpoint. A restarted on the same --sandboxes DIR and
// state does not serve s1 again: its log says hb holds it, a request for s1
// is answered 307 to hb (X-Sandfs-Holder hb), A's root and state of s1 stay
// on its disk untouched, A publishes nothing more of s1, and B still serves
// s1, its tree unchanged by A's restart.
func TestAdoptAfterKillRestart(t *testing.T) {
	b := natstest.Start(t)
	host := func(name, dir, state string) *Daemon {
		args := []string{"--token", fleetToken, "--events", b.URL(), "--events-host", name, "--replicate", "events",
			"--placement", "events", "--lease-ttl", "2s", "--sandboxes", dir}
		if state != "" {
			args = append(args, "--state", state)
		}
		return startDaemon(t, args...)
	}
	newDir := func() string {
		dir := filepath.Join(t.TempDir(), "sandboxes")
		must(t, os.Mkdir(dir, 0o755))
		return dir
	}
	dirA := newDir()
	a := host("ha", dirA, "")
	res, body := placedDo(t, "POST", a.URL+"/v1/sandboxes", `{"name":"s1"}`)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("POST s1 on ha: %d %s\n%s", res.StatusCode, body, a.Log())
	}
	var made api.SandboxCreated
	must(t, json.Unmarshal([]byte(body), &made))
	rootA := filepath.Join(dirA, "s1")
	writeFiles(t, rootA, map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "run.sh": "#!/bin/sh\necho hi\n"})
	must(t, os.Chmod(filepath.Join(rootA, "run.sh"), 0o750))
	must(t, os.Mkdir(filepath.Join(rootA, "empty"), 0o700))
	must(t, os.Symlink("d/b.txt", filepath.Join(rootA, "link")))
	// The files are in s1's journal before the checkpoint (the kernel
	// watch reports them): a read through ha sees the last.
	waitPlaced(t, a, "GET", a.URL+"/v1/sandboxes/s1/fs/read?path=%2Frun.sh", "", http.StatusOK)

	res, body = placedDo(t, "POST", a.URL+"/v1/sandboxes/s1/checkpoints", "{}")
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("checkpoint on ha: %d %s\n%s", res.StatusCode, body, a.Log())
	}
	var cp struct {
		ID  string `json:"id"`
		Seq uint64 `json:"seq"`
	}
	must(t, json.Unmarshal([]byte(body), &cp))
	want := snapshot(t, rootA) // the checkpoint's tree: nothing wrote since
	waitReplicated(t, a, "s1")

	changed := []string{"/a.txt", "/new.txt", "/d/c.txt"}
	for _, p := range changed {
		if res, got := placedDo(t, "PUT", a.URL+"/v1/sandboxes/s1/fs/write?path="+p, "after "+p); res.StatusCode != http.StatusOK {
			t.Fatalf("write %s on ha: %d %s", p, res.StatusCode, got)
		}
	}
	for _, p := range changed {
		waitStream(t, b, a, fmt.Sprintf("ha's change of %s", p), func(ms []natsout.Message) bool {
			for _, m := range ms {
				if m.Host == "ha" && m.Path == p && m.Seq > cp.Seq {
					return true
				}
			}
			return false
		})
	}
	// What the fleet heard of s1 after the checkpoint: the lost changes.
	var wantLost []string
	for _, m := range streamOf(t, b, "s1") {
		if m.Seq > cp.Seq {
			wantLost = append(wantLost, fmt.Sprintf("%d %s %s %s %s", m.Seq, m.Host, m.Type, m.Path, m.OldPath))
		}
	}
	a.Signal(t, syscall.SIGKILL)
	if _, exited := a.Wait(30 * time.Second); !exited {
		t.Fatalf("ha did not die of SIGKILL in 30 s:\n%s", a.Log())
	}
	diskA := snapshot(t, rootA) // A's root as the kill left it: the checkpoint and the lost changes

	// B: refused while ha's lease lives (409 naming ha), 201 once it expired.
	dirB := newDir()
	bd := host("hb", dirB, "")
	adoptURL := bd.URL + "/v1/sandboxes"
	var got api.SandboxAdopted
	refused := 0
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, body := placedDo(t, "POST", adoptURL, `{"name":"s1","adopt":true}`)
		if res.StatusCode == http.StatusCreated {
			must(t, json.Unmarshal([]byte(body), &got))
			break
		}
		if res.StatusCode != http.StatusConflict || !strings.Contains(body, "ha") {
			t.Fatalf("adopt of s1 on hb: %d %s; want 409 naming ha while its lease lives, then 201\n%s", res.StatusCode, body, bd.Log())
		}
		refused++
		if time.Now().After(deadline) {
			t.Fatalf("adopt of s1 on hb still %d %s 60 s after ha was killed (lease TTL 2 s)\n%s", res.StatusCode, body, bd.Log())
		}
	}
	t.Logf("adopted after %d refusals: %+v", refused, got)
	if got.Checkpoint != cp.ID || got.Seq != cp.Seq || got.Token != made.Token || got.From != "ha" || got.Fetched.Objects != 3 || got.Truncated {
		t.Fatalf("adopted %+v; want checkpoint %s at seq %d from ha, s1's token, its 3 files' objects fetched, the lost changes whole", got, cp.ID, cp.Seq)
	}
	var gotLost []string
	for _, l := range got.Lost {
		gotLost = append(gotLost, fmt.Sprintf("%d %s %s %s %s", l.Seq, l.Host, l.Type, l.Path, l.OldPath))
	}
	sort.Strings(gotLost)
	sort.Strings(wantLost)
	if strings.Join(gotLost, "\n") != strings.Join(wantLost, "\n") {
		t.Fatalf("lost changes reported:\n%s\nwant the stream's after seq %d:\n%s", strings.Join(gotLost, "\n"), cp.Seq, strings.Join(wantLost, "\n"))
	}
	lostPaths := map[string]bool{}
	for _, l := range got.Lost {
		lostPaths[l.Path] = true
	}
	for _, p := range changed {
		if !lostPaths[p] {
			t.Fatalf("lost paths %v, want %v among them", lostPaths, changed)
		}
	}
	rootB := filepath.Join(dirB, "s1")
	if gotTree := snapshot(t, rootB); gotTree != want {
		t.Fatalf("hb's tree is not the checkpoint's:\n%s\nwant\n%s", gotTree, want)
	}
	// hb serves s1 from here on: wait until its lease is seen as hb's.
	waitPlaced(t, bd, "GET", bd.URL+"/v1/sandboxes/s1/fs/read?path=%2Fa.txt", "", http.StatusOK)
	treeB := snapshot(t, rootB)
	nStream := len(streamOf(t, b, "s1"))

	// A restarted, on the same DIR and state: hb holds s1; A says so, sends
	// s1's requests there, and leaves its own copy alone.
	a = host("ha", dirA, a.State)
	if !a.LogHas("placement: sandbox s1 is held by host hb; not served here") || !a.LogHas("holder=hb") {
		t.Fatalf("ha restarted does not log that hb holds s1:\n%s", a.Log())
	}
	readA := a.URL + "/v1/sandboxes/s1/fs/read?path=%2Fa.txt"
	res, _ = waitPlaced(t, a, "GET", readA, "", http.StatusTemporaryRedirect)
	if loc := res.Header.Get("Location"); loc != bd.URL+"/v1/sandboxes/s1/fs/read?path=%2Fa.txt" || res.Header.Get("X-Sandfs-Holder") != "hb" {
		t.Fatalf("ha's 307 for s1: Location %q, X-Sandfs-Holder %q; want hb's %s\n%s", loc, res.Header.Get("X-Sandfs-Holder"), bd.URL, a.Log())
	}
	if strings.Contains(a.Log(), "serving sandbox s1") {
		t.Fatalf("ha restarted serves s1:\n%s", a.Log())
	}
	if res, got := placedDo(t, "PUT", a.URL+"/v1/sandboxes/s1/fs/write?path=/from-a", "a"); res.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("a write of s1 to ha restarted: %d %s; want 307\n%s", res.StatusCode, got, a.Log())
	}
	if got := snapshot(t, rootA); got != diskA {
		t.Fatalf("ha's root of s1 after its restart:\n%s\nwant it as the kill left it\n%s\n%s", got, diskA, a.Log())
	}
	for _, f := range []string{"token", "journal.db"} {
		if _, err := os.Lstat(filepath.Join(a.State, "sandboxes", "s1", f)); err != nil {
			t.Fatalf("ha's state of s1 after its restart: %v\n%s", err, a.Log())
		}
	}

	// hb still serves s1, its tree as it was; a write there is hb's.
	if got := snapshot(t, rootB); got != treeB {
		t.Fatalf("hb's tree after ha's restart:\n%s\nwant\n%s", got, treeB)
	}
	if res, got := placedDo(t, "PUT", bd.URL+"/v1/sandboxes/s1/fs/write?path=/on-b", "b"); res.StatusCode != http.StatusOK {
		t.Fatalf("write on hb after ha's restart: %d %s\n%s", res.StatusCode, got, bd.Log())
	}
	wantFile(t, filepath.Join(rootB, "on-b"), "b")
	waitStream(t, b, bd, "hb's write of /on-b", func(ms []natsout.Message) bool {
		for _, m := range ms {
			if m.Host == "hb" && m.Path == "/on-b" {
				return true
			}
		}
		return false
	})
	// Nothing of s1 came from ha since its restart.
	for _, m := range streamOf(t, b, "s1")[nStream:] {
		if m.Host != "hb" {
			t.Fatalf("after ha's restart the stream got %+v of s1 from %s\n%s", m, m.Host, a.Log())
		}
	}
	if res, got := placedDo(t, "GET", a.URL+"/v1/sandboxes/s1/fs/read?path=%2Fon-b", ""); res.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("ha after hb's write: %d %s; want 307 still\n%s", res.StatusCode, got, a.Log())
	}
}

// waitStream waits (60 s at most) until the fleet's stream's messages of
// s1 satisfy ok; what names the wait, and d's log, are in the failure.
func waitStream(t *testing.T, b *natstest.Broker, d *Daemon, what string, ok func([]natsout.Message) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ms := streamOf(t, b, "s1")
		if ok(ms) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not in the stream after 60 s (s1 has %d messages)\n%s", what, len(ms), d.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
