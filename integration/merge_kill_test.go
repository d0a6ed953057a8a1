package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/internal/testenv"
)

// TestForkMergeKill9: the daemon killed (SIGKILL) while it merges a fork
// of 2,000 changed files. After the restart nothing is half made: no temp
// is left, every file is whole (the parent's bytes or the fork's), each
// path is told at most once (by the merge, or found at the start), and
// the merge asked again finishes the work.
func TestForkMergeKill9(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "fork merges NOT TESTED: an overlay mount needs root")
	}
	const n = 2000
	d, dir := startRegistry(t)
	createSandbox(t, d, "main")
	main := filepath.Join(dir, "main")
	tree := map[string]string{}
	for i := 0; i < n; i++ {
		tree[fmt.Sprintf("d%02d/f%04d", i%20, i)] = fmt.Sprintf("base %d\n", i)
	}
	testenv.Mk(t, main, tree)
	if st, b := postSandbox(t, d, map[string]any{"name": "try", "from": "main"}); st != http.StatusCreated {
		t.Fatalf("fork: %d %s", st, b)
	}
	fork := filepath.Join(d.State, "forks", "try", "root")
	unmountAtEnd(t, fork)
	paths := slices.Sorted(maps.Keys(tree))
	for _, p := range paths { // the last told is the last written
		must(t, os.WriteFile(filepath.Join(fork, p), []byte("fork's "+p+"\n"), 0o644))
	}
	first := filepath.Join(main, "d00/f0000")
	mustWait(t, "the fork's journal to hear its writes", func() bool {
		st, b := named(t, d, "", "GET", "try", "/events?last=1", nil)
		return st == http.StatusOK && strings.Contains(string(b), `"path":"/`+paths[n-1]+`"`)
	})

	done := make(chan struct{})
	go func() {
		defer close(done)
		// Its answer never comes: the daemon dies first.
		resp, err := d.Client().Post(d.URL+"/v1/sandboxes/try/merge", "application/json", strings.NewReader(`{}`))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Logf("the merge answered before the kill: %d %.300s", resp.StatusCode, b)
		}
	}()
	mustWait(t, "the merge's first file", func() bool {
		b, _ := os.ReadFile(first)
		return strings.HasPrefix(string(b), "fork's")
	})
	d.Signal(t, syscall.SIGKILL)
	if _, exited := d.Wait(30 * time.Second); !exited {
		t.Fatal("the daemon did not die within 30s of SIGKILL")
	}
	<-done
	merged := 0
	for p, base := range tree {
		b, err := os.ReadFile(filepath.Join(main, p))
		switch {
		case err != nil:
			t.Errorf("%s after the kill: %v", p, err)
		case string(b) == "fork's "+p+"\n":
			merged++
		case string(b) != base:
			t.Errorf("%s after the kill: torn: %q", p, b)
		}
	}
	t.Logf("killed with %d of %d files merged", merged, n)

	d = startDaemon(t, "--sandboxes", dir, "--state", d.State)
	waitStatus(t, d, "try", http.StatusOK)
	filepath.WalkDir(main, func(p string, e fs.DirEntry, err error) error {
		if err == nil && core.IsTempName(e.Name()) {
			t.Errorf("a temp left after the restart: %s", p)
		}
		return nil
	})
	st, b := named(t, d, "", "POST", "try", "/merge", []byte(`{}`))
	var res struct{ Written, Removed []string }
	if json.Unmarshal(b, &res); st != http.StatusOK || len(res.Written) != n-merged {
		t.Errorf("the merge asked again: %d, wrote %d, want %d", st, len(res.Written), n-merged)
	}
	for p := range tree {
		wantFile(t, filepath.Join(main, p), "fork's "+p+"\n")
	}
	st, b = named(t, d, "", "GET", "main", "/events?limit=10000", nil)
	var evs struct {
		Events []struct {
			Path, Type, Actor string
			FoundAtStart      bool
		}
	}
	if json.Unmarshal(b, &evs); st != http.StatusOK {
		t.Fatalf("events: %d %s", st, b)
	}
	told := map[string]int{}
	for _, e := range evs.Events {
		if e.Type == "write" && (e.Actor == "merge:try" || e.FoundAtStart) {
			told[e.Path]++
		}
	}
	for p := range tree {
		if c := told["/"+p]; c != 1 {
			t.Errorf("/%s told %d times, want once", p, c)
		}
	}
}

// unmountAtEnd detaches the mount at p when the test ends, so a test that
// failed before discarding its fork leaves no mount in its temp dirs.
func unmountAtEnd(t *testing.T, p string) {
	t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
}

func mustWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !waitFor(time.Minute, cond) {
		t.Fatalf("waited a minute for %s", what)
	}
}
