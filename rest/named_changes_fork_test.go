package rest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/checkpoint"
)

// TestNamedChangesSinceFork: on a fork, since=fork lists what the fork
// changed, with diffs whose old side is the parent's checkpoint (not the
// parent's tree now); on a sandbox that is not a fork it is refused. The
// fork is a sandbox over a copy of the checkpoint's tree that the fake
// Manager names a fork (the overlay itself is the integration test's).
func TestNamedChangesSinceFork(t *testing.T) {
	var m *fakeManager
	rh := newRegHarness(t, regOpts{Manager: func(rh *regHarness) Manager {
		m = newFakeManager(t)(rh).(*fakeManager)
		return m
	}})
	base := map[string]string{"m.txt": "one\ntwo\n", "gone.txt": "bye\n", "kept.txt": "kept\n"}
	open := func(name string, o core.Options) *core.Sandbox {
		root := t.TempDir()
		for p, c := range base {
			if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sb, err := core.Open(name, root, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		if err := rh.reg.Add(name, sb, ""); err != nil {
			t.Fatal(err)
		}
		return sb
	}
	parent := open("main", core.Options{StateDir: t.TempDir()})
	cp, err := checkpoint.Create(context.Background(), parent, checkpoint.Options{Name: "fork try-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parent.WriteFile(context.Background(), "/m.txt", strings.NewReader("the parent's later\n"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	open("try-1", core.Options{})
	m.mu.Lock()
	m.forks = map[string]fakeFork{"try-1": {from: "main", cp: cp.ID}}
	m.mu.Unlock()

	wantStatus(t, rh.do(t, req{Method: "PUT", Target: "/v1/sandboxes/try-1/fs/write?path=/m.txt", Body: strings.NewReader("one\n2\n"),
		Header: map[string]string{"X-Sandfs-Actor": "agent-1", "Content-Type": "application/octet-stream"}}), 200)
	wantStatus(t, rh.do(t, req{Method: "DELETE", Target: "/v1/sandboxes/try-1/fs/delete?path=/gone.txt"}), 200)
	wantStatus(t, rh.do(t, req{Method: "PUT", Target: "/v1/sandboxes/try-1/fs/write?path=/new.txt", Body: strings.NewReader("fresh\n"),
		Header: map[string]string{"X-Sandfs-Actor": "agent-1", "Content-Type": "application/octet-stream"}}), 200)

	for _, prefix := range sandboxesPrefixes {
		r := rh.do(t, req{Method: "GET", Target: prefix + "/try-1/changes?since=fork&diff=true"})
		wantStatus(t, r, 200)
		got := decode[api.Changes](t, r)
		if got.Since != (api.ChangesSince{Seq: 0, Checkpoint: cp.ID, Fork: "main"}) || got.Lost || got.Count != 3 {
			t.Fatalf("%s: since %+v lost %v count %d", prefix, got.Since, got.Lost, got.Count)
		}
		for i, w := range []struct{ row, diff string }{
			{"deleted /gone.txt by api", "--- a/gone.txt\n+++ b/gone.txt\n@@ -1 +0,0 @@\n-bye\n"},
			{"modified /m.txt by agent-1", "--- a/m.txt\n+++ b/m.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"},
			{"added /new.txt by agent-1", "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+fresh\n"},
		} {
			c := got.Changes[i]
			if row := rowsOf(api.Changes{Changes: []api.Change{c}}); row != w.row || c.Diff != w.diff || c.DiffUnavailable != "" {
				t.Errorf("%s: row %q diff %q unavailable %q, want %q diff %q", prefix, row, c.Diff, c.DiffUnavailable, w.row, w.diff)
			}
		}
	}

	for _, target := range []string{"/v1/sandboxes/a/changes?since=fork", "/v1/sprites/main/changes?since=fork&diff=true"} {
		e := wantNamedError(t, rh.do(t, req{Method: "GET", Target: target}), 400, "EINVAL", "")
		if !strings.Contains(e.Error, "not a fork") {
			t.Errorf("%s: error %q", target, e.Error)
		}
	}
}
