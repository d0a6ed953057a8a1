package integration

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandfs/api"
	"sandfs/natsout/natstest"
)

// TestAdoptRemovedWhileStoring: a sandbox taken up is served before its
// store is filled from its tree; removed at once, the filling stops (or
// has ended) without harm: the removal answers, the log tells the
// checkpoint stored or not stored, the daemon serves on, and the name
// taken up again from the fleet has the checkpoint's tree and, once
// stored, the checkpoint.
func TestAdoptRemovedWhileStoring(t *testing.T) {
	b := natstest.Start(t)
	fleet := func(host string) []string {
		return []string{"--events", b.URL(), "--events-host", host, "--replicate", "events"}
	}
	a, dirA := startRegistry(t, fleet("ha")...)
	if st, body := postSandbox(t, a, map[string]any{"name": "s1"}); st != 201 {
		t.Fatalf("POST s1: %d %s", st, body)
	}
	files := map[string]string{}
	for i := range 2000 {
		files[fmt.Sprintf("d%02d/f%04d", i%20, i)] = fmt.Sprintf("file %d\n%s", i, strings.Repeat("x", 1000))
	}
	rootA := filepath.Join(dirA, "s1")
	writeFiles(t, rootA, files)
	st, body := named(t, a, "", "POST", "s1", "/checkpoints", []byte(`{}`))
	if st != 201 {
		t.Fatalf("checkpoint: %d %s", st, body)
	}
	var cp struct{ ID string }
	must(t, json.Unmarshal(body, &cp))
	want := snapshot(t, rootA)
	waitReplicated(t, a, "s1")
	a.Signal(t, syscall.SIGKILL)
	a.Wait(30 * time.Second)

	bd, dirB := startRegistry(t, fleet("hb")...)
	if st, body := postSandbox(t, bd, map[string]any{"name": "s1", "adopt": true}); st != 201 {
		t.Fatalf("adopt s1: %d %s\n%s", st, body, bd.Log())
	}
	if st, body := named(t, bd, "", "DELETE", "s1", "", nil); st != 200 {
		t.Fatalf("DELETE s1 just taken up: %d %s\n%s", st, body, bd.Log())
	}
	stored := "stored checkpoint " + cp.ID + " of sandbox s1 from its tree"
	notStored := "sandbox s1: its checkpoint " + cp.ID + " from the fleet was not stored on this host"
	if !waitFor(time.Minute, func() bool { l := bd.Log(); return strings.Contains(l, stored) || strings.Contains(l, notStored) }) {
		t.Fatalf("hb's log tells neither the checkpoint stored nor not stored:\n%s", bd.Log())
	}
	for _, l := range strings.Split(bd.Log(), "\n") {
		if strings.Contains(l, stored) || strings.Contains(l, notStored) {
			t.Logf("the first take-up's store: %s", l)
		}
	}

	var adopted api.SandboxAdopted
	st, body = postSandbox(t, bd, map[string]any{"name": "s1", "adopt": true})
	if st != 201 {
		t.Fatalf("adopt s1 again: %d %s\n%s", st, body, bd.Log())
	}
	must(t, json.Unmarshal(body, &adopted))
	if adopted.Checkpoint != cp.ID || adopted.Fetched.Objects != int64(len(files)) {
		t.Fatalf("adopted again %+v; want checkpoint %s, its %d objects fetched (the removed store's went with it)", adopted, cp.ID, len(files))
	}
	if got := snapshot(t, filepath.Join(dirB, "s1")); got != want {
		t.Fatalf("hb's tree taken up again is not the checkpoint's:\n%s\nwant\n%s", got, want)
	}
	if !waitFor(2*time.Minute, func() bool {
		st, _ = named(t, bd, adopted.Token, "GET", "s1", "/checkpoints/"+cp.ID, nil)
		return st != 503
	}) || st != 200 {
		t.Fatalf("hb's checkpoint %s after the second take-up: %d; want 200 once stored\n%s", cp.ID, st, bd.Log())
	}
}
