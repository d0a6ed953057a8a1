package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandfs/api"
)

// inodeOf is the inode of the file at p.
func inodeOf(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	must(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestMoveBackInPlace: s1 moves ha → hb, 100 of its files change on hb,
// one is added and one removed, and it moves back to ha, whose DIR still
// holds the old root: ha takes it up there. What hb sent and ha fetched
// is the 101 new objects alone; ha's tree is hb's byte for byte (the
// removed file gone), a file that did not change keeps its inode (only
// what differs was written); ha numbers above every seq hb gave, and a
// reader's cursor on hb's last seq reads on at ha; s1's token works there.
//
// ha held the old root, watched, while s1 was away (daemon/hold.go).
// Untouched, it is taken as the move's checkpoint without a walk;
// written behind its back meanwhile, ha walks it, and the undo
// checkpoint keeps what was written.
func TestMoveBackInPlace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		behind bool
	}{{"untouched", false}, {"written while away", true}} {
		t.Run(tc.name, func(t *testing.T) { testMoveBackInPlace(t, tc.behind) })
	}
}

func testMoveBackInPlace(t *testing.T, behind bool) {
	b, ha, dirA, hb, dirB, made := movableS1(t, nil)
	rootA, rootB := filepath.Join(dirA, "s1"), filepath.Join(dirB, "s1")
	files := map[string]string{"keep.txt": "kept as it was"}
	for i := range 120 {
		files[fmt.Sprintf("f/%03d", i)] = fmt.Sprintf("orig-%03d", i)
	}
	writeFiles(t, rootA, files)
	waitPlaced(t, ha, "GET", ha.URL+"/v1/sandboxes/s1/fs/read?path=%2Ff%2F119", "", 200)

	res, body := placedDo(t, "POST", ha.URL+"/v1/sandboxes/s1/move", `{"to":"hb"}`)
	if res.StatusCode != 200 {
		t.Fatalf("move to hb: %d %s\n--- ha\n%s\n--- hb\n%s", res.StatusCode, body, ha.Log(), hb.Log())
	}
	var moved api.SandboxMoved
	must(t, json.Unmarshal([]byte(body), &moved))
	keptIno := inodeOf(t, filepath.Join(rootA, "f/110"))
	if behind {
		writeFiles(t, rootA, map[string]string{"stray.txt": "written on ha while away", "keep.txt": "changed on ha while away"})
	}

	// On hb: 100 files changed, one added, one removed.
	changed := map[string]string{"added.txt": "added on hb"}
	want := api.Fetched{Objects: 101, Bytes: int64(len("added on hb"))}
	for i := range 100 {
		c := fmt.Sprintf("new-%03d", i)
		changed[fmt.Sprintf("f/%03d", i)] = c
		want.Bytes += int64(len(c))
	}
	writeFiles(t, rootB, changed)
	must(t, os.Remove(filepath.Join(rootB, "f/119")))
	waitPlaced(t, hb, "GET", hb.URL+"/v1/sandboxes/s1/fs/read?path=%2Fadded.txt", "", 200)

	res, body = placedDo(t, "POST", hb.URL+"/v1/sandboxes/s1/move", `{"to":"ha"}`)
	if res.StatusCode != 200 {
		t.Fatalf("move back to ha: %d %s\n--- ha\n%s\n--- hb\n%s", res.StatusCode, body, ha.Log(), hb.Log())
	}
	var back api.SandboxMoved
	must(t, json.Unmarshal([]byte(body), &back))
	t.Logf("moved back %+v", back)
	if back.From != "hb" || back.To != "ha" || back.Sent != want || back.Fetched != want {
		t.Fatalf("moved back %+v; want %+v sent and fetched (the changed and added files' objects)\n--- ha\n%s", back, want, ha.Log())
	}
	if !ha.LogHas("took sandbox s1 up on its old root") {
		t.Fatalf("ha did not take s1 up in place:\n%s", ha.Log())
	}
	wantUnchanged := "unchanged_since=" + moved.Checkpoint
	if behind {
		wantUnchanged = `unchanged_since=""`
	}
	if !strings.Contains(ha.Log(), wantUnchanged) {
		t.Fatalf("ha's take-up does not say %s:\n%s", wantUnchanged, ha.Log())
	}
	// The undo is the tree handed to hb, and what was written behind
	// ha's back when it was.
	var list api.CheckpointList
	res, body = placedDo(t, "GET", ha.URL+"/v1/sandboxes/s1/checkpoints", "")
	must(t, json.Unmarshal([]byte(body), &list))
	var undo, handed api.Checkpoint
	for _, c := range list.Checkpoints {
		switch {
		case c.ID == moved.Checkpoint:
			handed = c
		case c.Reason == "before-restore":
			undo = c
		}
	}
	wantUndo := handed
	if behind {
		wantUndo.Files++
		wantUndo.Bytes += int64(len("written on ha while away") + len("changed on ha while away") - len(files["keep.txt"]))
	}
	if res.StatusCode != 200 || handed.ID == "" || undo.ID == "" || undo.Files != wantUndo.Files || undo.Bytes != wantUndo.Bytes {
		t.Fatalf("ha's checkpoints: the undo %+v, the one handed %+v; want %d files, %d bytes in the undo\n%s",
			undo, handed, wantUndo.Files, wantUndo.Bytes, body)
	}

	// ha's tree is the checkpoint's, hb's root untouched since; what did
	// not change kept its inode.
	if got, want := snapshot(t, rootA), snapshot(t, rootB); got != want {
		t.Fatalf("ha's tree after the move back:\n%s\nwant hb's\n%s", got, want)
	}
	if _, err := os.Lstat(filepath.Join(rootA, "f/119")); !os.IsNotExist(err) {
		t.Fatalf("f/119, removed on hb, on ha: %v", err)
	}
	if got := inodeOf(t, filepath.Join(rootA, "f/110")); got != keptIno {
		t.Fatalf("f/110, unchanged, has inode %d on ha, was %d: rewritten", got, keptIno)
	}

	// hb's last seq: a cursor on it reads on at ha, whose events number
	// above every seq hb gave.
	hbLast := uint64(0)
	for _, m := range streamOf(t, b, "s1") {
		if m.Host == "hb" {
			hbLast = max(hbLast, m.Seq)
		}
	}
	if hbLast < back.Seq {
		t.Fatalf("hb's events in the stream reach %d, below its move checkpoint's %d", hbLast, back.Seq)
	}
	if res, got := placedDo(t, "PUT", ha.URL+"/v1/sandboxes/s1/fs/write?path=/on-a", "a"); res.StatusCode != 200 {
		t.Fatalf("write on ha after the move back: %d %s", res.StatusCode, got)
	}
	res, body = placedDo(t, "GET", ha.URL+"/v1/sandboxes/s1/events?since="+fmt.Sprint(hbLast), "")
	var page struct {
		Events []struct {
			Seq   uint64 `json:"seq"`
			Path  string `json:"path"`
			Actor string `json:"actor"`
		} `json:"events"`
		Overflow bool `json:"overflow"`
	}
	must(t, json.Unmarshal([]byte(body), &page))
	if res.StatusCode != 200 || page.Overflow || len(page.Events) == 0 {
		t.Fatalf("ha's events since hb's last seq %d: %d %s; want them, no overflow", hbLast, res.StatusCode, body)
	}
	sawWrite, restored := false, map[string]bool{}
	for i, e := range page.Events {
		if e.Seq <= hbLast || i > 0 && e.Seq != page.Events[i-1].Seq+1 {
			t.Fatalf("ha's events since %d: %s; want seqs above it, without a gap", hbLast, body)
		}
		sawWrite = sawWrite || e.Path == "/on-a"
		if e.Actor == "restore:"+back.Checkpoint {
			restored[e.Path] = true
		}
	}
	// The take-up's restore is journaled: the paths it rewrote, each to
	// what hb had.
	if behind && (!restored["/stray.txt"] || !restored["/keep.txt"]) {
		t.Fatalf("ha's events since %d: want the restore's of /stray.txt and /keep.txt, written while away: %s", hbLast, body)
	}
	if !sawWrite || !restored["/f/000"] || !restored["/added.txt"] || !restored["/f/119"] || restored["/f/110"] {
		t.Fatalf("ha's events since %d: want the restore's of /f/000, /added.txt, /f/119 (none of /f/110), and the write of /on-a: %s", hbLast, body)
	}

	// The stream holds each seq of s1 once: ha's before the first move,
	// hb's up to its move back, ha's above them.
	deadline := time.Now().Add(60 * time.Second)
	for {
		seen := map[uint64]string{}
		onA := false
		for _, m := range streamOf(t, b, "s1") {
			if h, dup := seen[m.Seq]; dup {
				t.Fatalf("seq %d of s1 is in the stream twice (%s, %s)", m.Seq, h, m.Host)
			}
			seen[m.Seq] = m.Host
			if m.Host == "hb" && m.Seq > back.Seq || m.Host == "ha" && m.Seq > moved.Seq && m.Seq <= hbLast {
				t.Fatalf("seq %d of s1 from %s; ha moved it at %d, hb at %d, hb's last %d", m.Seq, m.Host, moved.Seq, back.Seq, hbLast)
			}
			onA = onA || m.Host == "ha" && m.Path == "/on-a"
		}
		if onA {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ha's write of /on-a is not in the stream\n%s", ha.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// s1's own token works on ha.
	req, _ := http.NewRequest("GET", ha.URL+"/v1/sandboxes/s1/fs/read?path=%2Fadded.txt", nil)
	req.Header.Set("Authorization", "Bearer "+made.Token)
	rt, err := bareClient(ha).Do(req)
	must(t, err)
	rt.Body.Close()
	if rt.StatusCode != 200 {
		t.Fatalf("s1's token on ha after the move back: %d", rt.StatusCode)
	}
}
