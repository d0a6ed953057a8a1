package rest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/rest/named"
)

// Merge merges a fork the test made (addFork) as the daemon does, from
// the checkpoint it was made from.
func (m *fakeManager) Merge(ctx context.Context, name, into string, o checkpoint.MergeOptions) (string, checkpoint.MergeResult, error) {
	m.mu.Lock()
	ff, ok := m.forks[name]
	m.mu.Unlock()
	if !ok {
		return "", checkpoint.MergeResult{}, fmt.Errorf("sandbox %s is not a fork: %w", name, fs.ErrInvalid)
	}
	if into != "" && into != ff.from {
		return "", checkpoint.MergeResult{}, fmt.Errorf("fork %s merges into %s only: %w", name, ff.from, fs.ErrInvalid)
	}
	o.Checkpoint, o.Fork, o.Name = ff.cp, m.rh.reg.Get(name), name
	res, err := checkpoint.Merge(ctx, m.rh.reg.Get(ff.from), o)
	return ff.from, res, err
}

// addFork serves "main" (with state) and "try", a copy of main's tree at
// a checkpoint, with its own token; then both change /c.txt differently
// and the fork alone writes /a.txt.
func addFork(t *testing.T, rh *regHarness) {
	t.Helper()
	root, fork := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "c.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	main, err := core.Open("main", root, core.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { main.Close() })
	cp, err := checkpoint.Create(context.Background(), main, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", root+"/.", fork).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	f, err := core.Open("try", fork, core.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for _, add := range []struct {
		name string
		sb   *core.Sandbox
		tok  string
	}{{"main", main, ""}, {"try", f, "tok-try"}} {
		if err := rh.reg.Add(add.name, add.sb, add.tok); err != nil {
			t.Fatal(err)
		}
	}
	rh.roots["main"], rh.roots["try"] = root, fork
	m := rh.srv.manager.(*fakeManager)
	m.mu.Lock()
	m.forks["try"] = fakeFork{from: "main", cp: cp.ID}
	m.mu.Unlock()
	for _, w := range []struct {
		sb            *core.Sandbox
		path, content string
	}{{f, "/a.txt", "alpha, the fork's\n"}, {f, "/c.txt", "one\ntwo, the fork's\n"}, {main, "/c.txt", "one\ntwo, ours\n"}} {
		if _, err := w.sb.WriteFile(context.Background(), w.path, strings.NewReader(w.content), core.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMergeRoute(t *testing.T) {
	rh := newRegHarness(t, regOpts{Token: "daemon-tok", Tokens: map[string]string{"a": "tok-a"}, Manager: newFakeManager(t)})
	rh.token = "daemon-tok"
	addFork(t, rh)
	post := func(target, body string, hdr map[string]string) resp {
		return rh.do(t, req{Method: "POST", Target: target, Body: strings.NewReader(body), Header: hdr})
	}
	// Refusals first: each changes nothing.
	for _, tc := range []struct {
		name, target, body string
		token              string
		status             int
		code, msg          string
	}{
		{"bad strategy", "/v1/sandboxes/try/merge", `{"strategy":"mine"}`, "", 400, "EINVAL", `"strategy" is mine`},
		{"unknown field", "/v1/sandboxes/try/merge", `{"stratgy":"ours"}`, "", 400, "EINVAL", "unknown field"},
		{"empty into", "/v1/sandboxes/try/merge", `{"into":""}`, "", 400, "EINVAL", `"into" is empty`},
		{"into another", "/v1/sandboxes/try/merge", `{"into":"a"}`, "", 400, "EINVAL", "merges into main only"},
		{"not a fork", "/v1/sandboxes/a/merge", `{}`, "", 400, "EINVAL", "not a fork"},
		{"unknown sandbox", "/v1/sandboxes/nope/merge", `{}`, "", 404, "ENOENT", ""},
		{"dotdot path", "/v1/sandboxes/try/merge", `{"paths":["/x/../y"]}`, "", 400, "EINVAL", "restore path"},
		{"the fork's own token", "/v1/sandboxes/try/merge", `{}`, "tok-try", 403, "EACCES", ""},
		{"another sandbox's token", "/v1/sandboxes/try/merge", `{}`, "tok-a", 403, "EACCES", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr map[string]string
			if tc.token != "" {
				hdr = map[string]string{"Authorization": "Bearer " + tc.token}
			}
			r := post(tc.target, tc.body, hdr)
			wantStatus(t, r, tc.status)
			e := decode[named.ErrorBody](t, r)
			if e.Code != tc.code || !strings.Contains(e.Error, tc.msg) {
				t.Errorf("got %+v, want code %s and %q", e, tc.code, tc.msg)
			}
			rh.wantOnDisk(t, "main", "a.txt", "alpha\n")
			rh.wantOnDisk(t, "main", "c.txt", "one\ntwo, ours\n")
		})
	}
	// Under "fail", the conflict is a 409 naming it, and nothing is merged.
	r := post("/v1/sandboxes/try/merge", `{}`, nil)
	wantStatus(t, r, 409)
	got := decode[api.Merge](t, r)
	if got.Code != "EEXIST" || got.Fork != "try" || got.Into != "main" || got.Strategy != "fail" || len(got.Conflicts) != 1 || got.Count != 0 || got.Undo != "" {
		t.Fatalf("409: %+v", got)
	}
	c := got.Conflicts[0]
	wantDiff := "--- a/c.txt\n+++ b/c.txt\n@@ -1,2 +1,2 @@\n one\n-two, ours\n+two, the fork's\n"
	if c.Path != "/c.txt" || c.Diff != wantDiff || c.Base == nil || c.Base.Mode != "0644" || c.Ours.ETag == "" || c.Theirs.ETag == "" || c.Took != "" {
		t.Errorf("conflict %+v", c)
	}
	rh.wantOnDisk(t, "main", "a.txt", "alpha\n")
	// A dry run with "ours" says what it would write, and writes nothing.
	r = post("/v1/sprites/try/merge", `{"strategy":"ours","dryRun":true}`, nil)
	wantStatus(t, r, 200)
	if got := decode[api.Merge](t, r); !got.DryRun || fmt.Sprint(got.Written) != "[/a.txt]" || got.Undo != "" || got.Conflicts[0].Took != "ours" {
		t.Errorf("dry run: %+v", got)
	}
	rh.wantOnDisk(t, "main", "a.txt", "alpha\n")
	// "theirs" takes the fork's side of the conflict too.
	r = post("/v1/sandboxes/try/merge", `{"into":"main","strategy":"theirs"}`, nil)
	wantStatus(t, r, 200)
	done := decode[api.Merge](t, r)
	if fmt.Sprint(done.Written) != "[/a.txt /c.txt]" || done.Count != 2 || !strings.HasPrefix(done.Undo, "cp_") {
		t.Errorf("merge: %+v", done)
	}
	rh.wantOnDisk(t, "main", "a.txt", "alpha, the fork's\n")
	rh.wantOnDisk(t, "main", "c.txt", "one\ntwo, the fork's\n")
	// Its undo is a checkpoint of main, before the merge.
	r = rh.do(t, req{Method: "GET", Target: "/v1/sandboxes/main/checkpoints/" + done.Undo})
	wantStatus(t, r, 200)
	if cp := decode[api.Checkpoint](t, r); cp.Reason != checkpoint.ReasonBeforeMerge {
		t.Errorf("undo %+v", cp)
	}
}

// Without a Manager the daemon merges nothing: 405.
func TestMergeRouteNoManager(t *testing.T) {
	rh := newRegHarness(t, regOpts{})
	r := rh.do(t, req{Method: "POST", Target: "/v1/sandboxes/a/merge", Body: strings.NewReader(`{}`)})
	wantStatus(t, r, 405)
}
