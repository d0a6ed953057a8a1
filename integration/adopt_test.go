package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/pkg/xattr"

	"sandfs/api"
	"sandfs/core"
	"sandfs/natsout"
	"sandfs/natsout/natstest"
	"sandfs/natsout/replicate"
)

// TestAdoptFromTheFleet: host A serves s1, checkpoints it (replicated),
// changes 3 paths (published) and is killed; host B takes s1 up from the
// fleet. B's tree is the checkpoint's, byte for byte (modes, owners,
// times, a symlink, an empty directory), the answer names the 3 changes
// as lost, s1's token opens it on B, B's journal numbers after the
// checkpoint and the lost changes, and a second adopt is 409.
func TestAdoptFromTheFleet(t *testing.T) {
	b := natstest.Start(t)
	fleet := func(host string) []string {
		return []string{"--events", b.URL(), "--events-host", host, "--replicate", "events"}
	}
	a, dirA := startRegistry(t, fleet("ha")...)
	st, body := postSandbox(t, a, map[string]any{"name": "s1", "quota": map[string]int64{"bytes": 1 << 30, "entries": 1000}})
	if st != 201 {
		t.Fatalf("POST s1: %d %s", st, body)
	}
	var made api.SandboxCreated
	must(t, json.Unmarshal(body, &made))
	tok := made.Token
	rootA := filepath.Join(dirA, "s1")
	writeFiles(t, rootA, map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "run.sh": "#!/bin/sh\necho hi\n", "owned": "mine"})
	must(t, os.Chmod(filepath.Join(rootA, "run.sh"), 0o750))
	must(t, os.Mkdir(filepath.Join(rootA, "empty"), 0o700))
	must(t, os.Symlink("d/b.txt", filepath.Join(rootA, "link")))
	if os.Geteuid() == 0 {
		must(t, os.Lchown(filepath.Join(rootA, "owned"), 1234, 5678))
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	must(t, os.Chtimes(filepath.Join(rootA, "d/b.txt"), old, old))
	must(t, os.Chtimes(filepath.Join(rootA, "d"), old, old))

	st, body = named(t, a, "", "POST", "s1", "/checkpoints", []byte(`{}`))
	if st != 201 {
		t.Fatalf("checkpoint: %d %s", st, body)
	}
	var cp struct {
		ID  string `json:"id"`
		Seq uint64 `json:"seq"`
	}
	must(t, json.Unmarshal(body, &cp))
	want := snapshot(t, rootA) // the checkpoint's tree: nothing wrote since
	waitReplicated(t, a, "s1")

	changed := []string{"/a.txt", "/new.txt", "/d/c.txt"}
	for _, p := range changed {
		if st, body := named(t, a, "", "PUT", "s1", "/fs/write?path="+p, []byte("after "+p)); st != 200 {
			t.Fatalf("write %s: %d %s", p, st, body)
		}
	}
	for _, p := range changed {
		waitMessage(t, b, func(m natsout.Message) bool { return m.Host == "ha" && m.Sandbox == "s1" && m.Path == p })
	}
	a.Signal(t, syscall.SIGKILL)
	a.Wait(30 * time.Second)

	bd, dirB := startRegistry(t, fleet("hb")...)
	r := bd.CLI(t, nil, "sandbox", "adopt", "s1", "--json")
	if r.Code != 0 {
		t.Fatalf("sandbox adopt: %s\n%s", r, bd.Log())
	}
	var got api.SandboxAdopted
	must(t, json.Unmarshal([]byte(r.Stdout), &got))
	if got.Checkpoint != cp.ID || got.Seq != cp.Seq || got.Token != tok || got.From != "ha" || got.Fetched.Objects != 4 ||
		got.Quota != (api.Sizes{Bytes: 1 << 30, Entries: 1000}) {
		t.Fatalf("adopted %+v; want checkpoint %s at seq %d from ha, s1's token and quota, 4 objects fetched", got, cp.ID, cp.Seq)
	}
	lostPaths := map[string]bool{}
	var lastLost uint64
	for _, l := range got.Lost {
		if l.Seq <= cp.Seq || l.Host != "ha" {
			t.Fatalf("lost change %+v: not after the checkpoint's seq %d on ha", l, cp.Seq)
		}
		lostPaths[l.Path] = true
		lastLost = max(lastLost, l.Seq)
	}
	if len(lostPaths) != len(changed) {
		t.Fatalf("lost paths %v, want %v", lostPaths, changed)
	}
	for _, p := range changed {
		if !lostPaths[p] {
			t.Fatalf("lost paths %v, want %v", lostPaths, changed)
		}
	}
	if gotTree := snapshot(t, filepath.Join(dirB, "s1")); gotTree != want {
		t.Fatalf("B's tree is not the checkpoint's:\n%s\nwant\n%s", gotTree, want)
	}
	if os.Geteuid() == 0 { // the sandbox's identity travels: B's root carries A's mark
		markA, errA := xattr.LGet(rootA, core.MarkXattr)
		markB, errB := xattr.LGet(filepath.Join(dirB, "s1"), core.MarkXattr)
		if errA != nil || errB != nil || len(markA) != 64 || string(markB) != string(markA) {
			t.Errorf("the roots' marks: A %q (%v), B %q (%v); want B's A's", markA, errA, markB, errB)
		}
	}

	// The checkpoint is B's too, once B's store holds it (filled from the
	// tree, after B serves it; until then it answers 503): listed, and the
	// base of changes since it.
	if !waitFor(2*time.Minute, func() bool {
		st, body = named(t, bd, tok, "GET", "s1", "/checkpoints/"+cp.ID, nil)
		return st != 503 || !strings.Contains(string(body), `"code":"EAGAIN"`)
	}) || st != 200 {
		t.Fatalf("B's checkpoint %s of s1: %d %s, want 200 (after 503 EAGAIN while it is stored)", cp.ID, st, body)
	}
	if st, body := named(t, bd, tok, "GET", "s1", "/checkpoints", nil); st != 200 || !strings.Contains(string(body), `"`+cp.ID+`"`) {
		t.Fatalf("B's checkpoints of s1: %d %s, want %s listed", st, body, cp.ID)
	}

	// s1's own token opens it on B; B numbers after what the fleet heard.
	if st, body := named(t, bd, tok, "PUT", "s1", "/fs/write?path=/on-b", []byte("b")); st != 200 {
		t.Fatalf("write on B with s1's token: %d %s", st, body)
	}
	waitMessage(t, b, func(m natsout.Message) bool {
		if m.Host == "hb" && m.Sandbox == "s1" && m.Path == "/on-b" {
			if m.Seq <= lastLost || m.Seq <= cp.Seq {
				t.Fatalf("B's change has seq %d; want it above the checkpoint's %d and the lost %d", m.Seq, cp.Seq, lastLost)
			}
			return true
		}
		return false
	})

	// After a restart of B, s1 is B's as any sandbox of DIR: its tree, its
	// token, its journal numbering on.
	bd.Stop(t)
	bd = startDaemon(t, append([]string{"--sandboxes", dirB, "--state", bd.State}, fleet("hb")...)...)
	waitStatus(t, bd, "s1", 200)
	if st, body := named(t, bd, tok, "PUT", "s1", "/fs/write?path=/on-b-again", []byte("b")); st != 200 {
		t.Fatalf("write on B, restarted, with s1's token: %d %s", st, body)
	}
	waitMessage(t, b, func(m natsout.Message) bool {
		if m.Host == "hb" && m.Sandbox == "s1" && m.Path == "/on-b-again" {
			if m.Seq <= lastLost {
				t.Fatalf("B's change after its restart has seq %d, want it above %d", m.Seq, lastLost)
			}
			return true
		}
		return false
	})
	if fi, err := os.Stat(filepath.Join(dirB, "s1", "d", "b.txt")); err != nil || !fi.ModTime().Equal(old) {
		t.Fatalf("s1's d/b.txt after B's restart: %v, %v; want it as the checkpoint had it", fi, err)
	}

	if st, body := postSandbox(t, bd, map[string]any{"name": "s1", "adopt": true}); st != 409 {
		t.Fatalf("a second adopt of s1: %d %s, want 409", st, body)
	}
	if st, body := postSandbox(t, bd, map[string]any{"name": "nothing", "adopt": true}); st != 404 {
		t.Fatalf("adopt of a sandbox the fleet has no checkpoint of: %d %s, want 404", st, body)
	}
	if st, body := postSandbox(t, bd, map[string]any{"name": "Bad_Name", "adopt": true}); st != 400 {
		t.Fatalf("adopt of a bad name: %d %s, want 400", st, body)
	}
	// A manifest the fleet holds that is refused leaves nothing behind.
	putManifest(t, b, "evil", `{"version":1,"sandbox":"evil","host":"x","checkpoint":{"id":"cp_000000000001","seq":3,"created":"2026-01-01T00:00:00Z"},`+
		`"entries":[{"path":"/","type":"dir","mode":493},{"path":"../x","type":"dir","mode":493}]}`)
	if st, body := postSandbox(t, bd, map[string]any{"name": "evil", "adopt": true}); st != 500 || !bd.LogHas(`entry \"../x\": not a clean path`) {
		t.Fatalf("adopt of a bad manifest: %d %s, want 500 and the entry named in the log:\n%s", st, body, bd.Log())
	}
	ents, err := os.ReadDir(dirB)
	must(t, err)
	if len(ents) != 1 || ents[0].Name() != "s1" {
		t.Fatalf("DIR after a refused adoption holds %v, want s1 alone", ents)
	}
	for _, f := range []string{"token", "journal.db", "checkpoints"} {
		if _, err := os.Lstat(filepath.Join(bd.State, "sandboxes", "evil", f)); err == nil {
			t.Fatalf("a refused adoption left its state's %s", f)
		}
	}

	req, _ := http.NewRequest("POST", bd.URL+"/v1/sandboxes", strings.NewReader(`{"name":"s2","adopt":true}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	res, err := bareClient(bd).Do(req)
	must(t, err)
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("adopt with a sandbox's token: %d, want 403", res.StatusCode)
	}
}

// putManifest puts a manifest into the sandbox's KV as a host would.
func putManifest(t *testing.T, b *natstest.Broker, sandbox, manifest string) {
	t.Helper()
	js := b.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: replicate.BucketOf(sandbox)})
	must(t, err)
	var m struct {
		Checkpoint struct{ ID string } `json:"checkpoint"`
	}
	must(t, json.Unmarshal([]byte(manifest), &m))
	_, err = kv.Put(ctx, m.Checkpoint.ID, []byte(manifest))
	must(t, err)
}

// waitReplicated waits until the sandbox's checkpoints are all in the fleet.
func waitReplicated(t *testing.T, d *Daemon, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := metricsText(t, d)
		if strings.Contains(m, `sandfs_replication_manifests_sent_total{sandbox="`+name+`"} 1`+"\n") &&
			strings.Contains(m, `sandfs_replication_checkpoints_behind{sandbox="`+name+`"} 0`+"\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s: the checkpoint was not replicated in 60 s:\n%s\n%s", name, grepLines(m, "sandfs_replication"), d.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// snapshot is the tree at root, one line an entry: path, type, mode,
// owner, mtime, and the content or target.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		sys := fi.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%s %v uid=%d gid=%d", rel, fi.Mode(), sys.Uid, sys.Gid)
		switch {
		case fi.Mode().IsRegular():
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" mtime=%d %q", fi.ModTime().UnixNano(), c)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" mtime=%d -> %s", fi.ModTime().UnixNano(), target)
		default:
			line += fmt.Sprintf(" mtime=%d", fi.ModTime().UnixNano())
		}
		lines = append(lines, line)
		return nil
	})
	must(t, err)
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
