package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/api"
	"sandfs/core/checkpoint"
	"sandfs/core/journal"
	"sandfs/rest/httpkit"
)

func decodeAs[T any](t *testing.T, r resp, status int) T {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	return v
}

func TestNamedCheckpointsCRUD(t *testing.T) {
	h := newHarness(t, harnessOpts{State: true})
	os.WriteFile(filepath.Join(h.root, "a.txt"), []byte("alpha"), 0o644)
	os.MkdirAll(filepath.Join(h.root, ".git"), 0o755)
	os.WriteFile(filepath.Join(h.root, ".git", "HEAD"), []byte("ref"), 0o644)

	for _, prefix := range []string{"/v1/sandboxes/default", "/v1/sprites/default"} {
		t.Run(prefix, func(t *testing.T) {
			first := decodeAs[api.Checkpoint](t, h.do(t, req{Method: "POST", Target: prefix + "/checkpoints"}), 201)
			if !strings.HasPrefix(first.ID, "cp_") || first.Reason != "manual" || first.Files != 2 || first.Dirs != 1 || first.Bytes != 8 || first.CreatedAt.IsZero() {
				t.Errorf("first %+v", first)
			}
			named := decodeAs[api.Checkpoint](t, h.do(t, req{Method: "POST", Target: prefix + "/checkpoints",
				Body: strings.NewReader(`{"name":"before the agent","skipExcluded":true}`)}), 201)
			if named.Name != "before the agent" || named.Files != 1 || named.Dirs != 0 || named.NewBytes != 0 || !named.SkipExcluded {
				t.Errorf("named %+v", named)
			}
			list := decodeAs[api.CheckpointList](t, h.do(t, req{Method: "GET", Target: prefix + "/checkpoints"}), 200)
			if list.Count != len(list.Checkpoints) || list.Count < 2 || list.Checkpoints[list.Count-2].ID != first.ID || list.Checkpoints[list.Count-1].ID != named.ID {
				t.Errorf("list %+v", list)
			}
			one := decodeAs[api.Checkpoint](t, h.do(t, req{Method: "GET", Target: prefix + "/checkpoints/" + named.ID}), 200)
			if one != named {
				t.Errorf("get %+v, want %+v", one, named)
			}
			// A fork's base is pinned: refused until the pin goes.
			sb := h.srv.sandboxOf(context.Background())
			if err := checkpoint.Pin(sb, first.ID, "a-fork"); err != nil {
				t.Fatal(err)
			}
			wantNamedError(t, h.do(t, req{Method: "DELETE", Target: prefix + "/checkpoints/" + first.ID}), 409, "EBUSY", "")
			if err := checkpoint.Unpin(sb, first.ID, "a-fork"); err != nil {
				t.Fatal(err)
			}
			del := decodeAs[api.CheckpointDeleted](t, h.do(t, req{Method: "DELETE", Target: prefix + "/checkpoints/" + first.ID}), 200)
			if del.ID != first.ID || !del.Deleted {
				t.Errorf("delete %+v", del)
			}
			wantNamedError(t, h.do(t, req{Method: "DELETE", Target: prefix + "/checkpoints/" + first.ID}), 404, "ENOENT", "")
			wantNamedError(t, h.do(t, req{Method: "GET", Target: prefix + "/checkpoints/" + first.ID}), 404, "ENOENT", "")
		})
	}
	for _, c := range []struct {
		name, method, target, body string
		status                     int
		code                       string
	}{
		{"unknown id", "GET", "/v1/sandboxes/default/checkpoints/cp_000000000000", "", 404, "ENOENT"},
		{"not an id", "GET", "/v1/sandboxes/default/checkpoints/..%2f..%2fetc", "", 404, "ENOENT"},
		{"unknown sandbox", "POST", "/v1/sandboxes/nope/checkpoints", "", 404, "ENOENT"},
		{"unknown sandbox list", "GET", "/v1/sandboxes/nope/checkpoints", "", 404, "ENOENT"},
		{"malformed body", "POST", "/v1/sandboxes/default/checkpoints", `{"name":`, 400, "EINVAL"},
		{"name too long", "POST", "/v1/sandboxes/default/checkpoints", `{"name":"` + strings.Repeat("n", 257) + `"}`, 400, "EINVAL"},
		{"name with a control", "POST", "/v1/sandboxes/default/checkpoints", `{"name":"a\u0007"}`, 400, "EINVAL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := req{Method: c.method, Target: c.target}
			if c.body != "" {
				r.Body = strings.NewReader(c.body)
			}
			wantNamedError(t, h.do(t, r), c.status, c.code, "")
		})
	}
}

func TestNamedCheckpointsNoState(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	e := wantNamedError(t, h.do(t, req{Method: "POST", Target: "/v1/sandboxes/default/checkpoints"}), 409, "ENOTSUP", "")
	if !strings.Contains(e.Error, "keeps no state") {
		t.Errorf("error %q", e.Error)
	}
	wantNamedError(t, h.do(t, req{Method: "GET", Target: "/v1/sandboxes/default/checkpoints"}), 409, "ENOTSUP", "")
	// No state, no checkpoints: any id is unknown.
	wantNamedError(t, h.do(t, req{Method: "GET", Target: "/v1/sandboxes/default/checkpoints/cp_000000000000"}), 404, "ENOENT", "")
	wantNamedError(t, h.do(t, req{Method: "DELETE", Target: "/v1/sandboxes/default/checkpoints/cp_000000000000"}), 404, "ENOENT", "")
	wantNamedError(t, h.do(t, req{Method: "POST", Target: "/v1/sandboxes/default/restore", Body: strings.NewReader(`{"checkpoint":"cp_000000000000"}`)}), 409, "ENOTSUP", "")
}

func TestNamedRestore(t *testing.T) {
	h := newHarness(t, harnessOpts{State: true})
	files := map[string]string{"a.txt": "alpha", "b.txt": "beta", "keep.txt": "keep"}
	for n, c := range files {
		os.WriteFile(filepath.Join(h.root, n), []byte(c), 0o644)
	}
	cp := decodeAs[api.Checkpoint](t, h.do(t, req{Method: "POST", Target: "/v1/sandboxes/default/checkpoints"}), 201)
	put := func(actor, p, content string) {
		t.Helper()
		r := h.do(t, req{Method: "PUT", Target: "/v1/sandboxes/default/fs/write?path=" + p, Body: strings.NewReader(content),
			Header: map[string]string{"X-Sandfs-Actor": actor, "Content-Type": "application/octet-stream"}})
		if r.Status != 200 {
			t.Fatalf("write %s: %d %s", p, r.Status, r.Body)
		}
	}
	put("agent", "/a.txt", "agent's a")
	put("agent", "/b.txt", "agent's b")
	put("agent", "/new.txt", "agent's new")
	put("alice", "/b.txt", "alice's b")
	put("alice", "/keep.txt", "alice's keep")
	read := func(n string) string { b, _ := os.ReadFile(filepath.Join(h.root, n)); return string(b) }
	changed := map[string]string{}
	for _, n := range []string{"a.txt", "b.txt", "keep.txt", "new.txt"} {
		changed[n] = read(n)
	}
	sameAs := func(want map[string]string) {
		t.Helper()
		for n, c := range want {
			if got := read(n); got != c {
				t.Errorf("%s = %q, want %q", n, got, c)
			}
		}
	}

	// Refused: nothing changes and no checkpoint is taken.
	for _, c := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"dot-dot", `{"checkpoint":"` + cp.ID + `","paths":["/a.txt","../../etc/passwd"]}`, 400, "EINVAL"},
		{"nul", `{"checkpoint":"` + cp.ID + `","paths":["a\u0000b"]}`, 400, "EINVAL"},
		{"too long", `{"checkpoint":"` + cp.ID + `","paths":["/` + strings.Repeat("x", 300) + `"]}`, 400, "EINVAL"},
		{"host path", `{"checkpoint":"` + cp.ID + `","paths":["` + filepath.Join(h.root, "a.txt") + `"]}`, 400, "EINVAL"},
		{"unknown checkpoint", `{"checkpoint":"cp_000000000000"}`, 404, "ENOENT"},
		{"no checkpoint", `{"paths":["/a.txt"]}`, 400, "EINVAL"},
		{"paths not a list", `{"checkpoint":"` + cp.ID + `","paths":"/a.txt"}`, 400, "EINVAL"},
		{"actor with a control", `{"checkpoint":"` + cp.ID + `","actor":"a\u001b[2J"}`, 400, "EINVAL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, req{Method: "POST", Target: "/v1/sandboxes/default/restore", Body: strings.NewReader(c.body)})
			wantNamedError(t, r, c.status, c.code, "")
			if strings.Contains(string(r.Body), h.root) {
				t.Errorf("the answer names the host path: %s", r.Body)
			}
		})
	}
	sameAs(changed)
	if l := decodeAs[api.CheckpointList](t, h.do(t, req{Method: "GET", Target: "/v1/sandboxes/default/checkpoints"}), 200); l.Count != 1 {
		t.Errorf("a refused restore took a checkpoint: %+v", l)
	}

	// By actor, dry run first (dryRun spelled both ways).
	for _, dry := range []string{`"dry_run":true`, `"dryRun":true`} {
		res := decodeAs[api.Restore](t, h.do(t, req{Method: "POST", Target: "/v1/sprites/default/restore",
			Body: strings.NewReader(`{"checkpoint":"` + cp.ID + `","actor":"agent",` + dry + `}`)}), 200)
		if !res.DryRun || res.Undo != "" || fmt.Sprint(res.Written) != "[/a.txt]" || fmt.Sprint(res.Removed) != "[/new.txt]" || res.Count != 2 {
			t.Errorf("dry run %+v", res)
		}
		sameAs(changed)
	}
	res := decodeAs[api.Restore](t, h.do(t, req{Method: "POST", Target: "/v1/sandboxes/default/restore",
		Body:   strings.NewReader(`{"checkpoint":"` + cp.ID + `","actor":"agent"}`),
		Header: map[string]string{"X-Sandfs-Actor": "the caller"}}), 200)
	want := []api.RestoreSkip{{Path: "/b.txt", Reason: "changed by api:alice after agent", By: "api:alice"}}
	if res.DryRun || !strings.HasPrefix(res.Undo, "cp_") || fmt.Sprint(res.Written) != "[/a.txt]" || fmt.Sprint(res.Removed) != "[/new.txt]" ||
		fmt.Sprint(res.Skipped) != fmt.Sprint(want) {
		t.Errorf("restore %+v", res)
	}
	sameAs(map[string]string{"a.txt": "alpha", "b.txt": "alice's b", "keep.txt": "alice's keep"})
	if _, err := os.Lstat(filepath.Join(h.root, "new.txt")); err == nil {
		t.Error("new.txt is still there")
	}
	undo := decodeAs[api.Checkpoint](t, h.do(t, req{Method: "GET", Target: "/v1/sandboxes/default/checkpoints/" + res.Undo}), 200)
	if undo.Reason != "before-restore" {
		t.Errorf("undo %+v", undo)
	}
	h.srv.reg.Get("default").Journal().Scan(context.Background(), undo.Seq, func(e journal.Event) bool {
		if e.Actor != "restore:"+cp.ID || e.Origin != journal.API {
			t.Errorf("event %+v is not the restore's", e)
		}
		return true
	})

	// Undo: the changed state is back.
	res = decodeAs[api.Restore](t, h.do(t, req{Method: "POST", Target: "/v1/sandboxes/default/restore",
		Body: strings.NewReader(`{"checkpoint":"` + res.Undo + `"}`)}), 200)
	sameAs(changed)

	// Whole tree, some paths.
	res = decodeAs[api.Restore](t, h.do(t, req{Method: "POST", Target: "/v1/sandboxes/default/restore",
		Body: strings.NewReader(`{"checkpoint":"` + cp.ID + `","paths":["/keep.txt","new.txt"]}`)}), 200)
	if fmt.Sprint(res.Written) != "[/keep.txt]" || fmt.Sprint(res.Removed) != "[/new.txt]" || len(res.Skipped) != 0 || res.Count != 2 {
		t.Errorf("paths %+v", res)
	}
	sameAs(map[string]string{"a.txt": "agent's a", "b.txt": "alice's b", "keep.txt": "keep"})
}

// TestClassifyHistory: the history errors that no request here can
// provoke on demand are mapped as api.md §5a says.
func TestClassifyHistory(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   unix.Errno
		path   string
	}{
		{&fs.PathError{Op: "checkpoint", Path: "/hot", Err: checkpoint.ErrKeptChanging}, 409, unix.EAGAIN, "/hot"},
		{fmt.Errorf("restore by actor: %w", checkpoint.ErrJournalLost), 409, unix.ESTALE, ""},
		{fmt.Errorf("x: %w", checkpoint.ErrNoState), 409, unix.ENOTSUP, ""},
		{fmt.Errorf("%q: %w", "cp_x", checkpoint.ErrUnknown), 404, unix.ENOENT, ""},
		{fmt.Errorf("%q: %w", "cp_x", checkpoint.ErrStoring), 503, unix.EAGAIN, ""},
		{&checkpoint.RestorePathError{Path: "/a/../b", Why: "has a .. component"}, 400, unix.EINVAL, "/a/../b"},
	} {
		k := httpkit.Classify(c.err)
		if k.Status != c.status || k.Errno != c.code || k.Path != c.path || k.Internal || k.Detail == "" {
			t.Errorf("%v: %+v", c.err, k)
		}
	}
}
