package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The rule this file checks (fusefs/doc.go, "Deadlocks"): a kernel
// notification is never sent while the daemon holds anything a FUSE handler
// may wait for. A notify of a name waits for its directory's lock; a
// process creating, renaming or removing in that directory holds that lock
// while it waits for the daemon's answer. If the notifying goroutine held a
// lock that answer needs, neither would ever move.

// stressFor is how long TestFUSENotifyStress runs its writers; stuckAfter
// is how long one request may take before the watchdog calls it stuck;
// each writer waits pace between its operations.
const (
	stressFor  = 45 * time.Second
	stuckAfter = 10 * time.Second
	pace       = 2 * time.Millisecond
)

// TestFUSENotifyStress: creates, renames and removes through the mount, in
// a few directories, while REST calls and an outside writer change the same
// directories (every change of theirs makes the mirror invalidate the
// kernel's caches of those directories). Every request ends: a watchdog
// fails the test when one takes longer than stuckAfter, with the daemon's
// goroutines and kernel stacks, and aborts the FUSE connection so the test
// itself ends.
func TestFUSENotifyStress(t *testing.T) {
	dbg := freeAddr(t)
	d, mnt := startMirror(t, "--debug-listen", dbg)
	dirs := []string{"d0", "d1", "d2", "d3/deep"}
	for _, dir := range dirs {
		must(t, os.MkdirAll(filepath.Join(d.Root, dir), 0o755))
	}
	wd := newWatchdog(t, d, dbg, mnt)
	defer wd.stop()

	end := time.Now().Add(stressFor)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	var errs []string
	run := func(way string, id int, op func(dir string, i int) error) {
		defer wg.Done()
		for i := 0; time.Now().Before(end) && !wd.fired(); i++ {
			// Paced, so that the daemon keeps up even as a race build on
			// two busy cores: what is tested is that every request ends,
			// not how many the daemon serves (an outside writer at full
			// speed makes a REST call wait for every change queued before
			// it, up to the outbox's bound: the order the journal
			// promises).
			time.Sleep(pace)
			err := op(dirs[(i+id)%len(dirs)], i)
			mu.Lock()
			if err != nil && len(errs) < 20 {
				errs = append(errs, fmt.Sprintf("%s%d: %v", way, id, err))
			}
			counts[way]++
			mu.Unlock()
		}
	}
	for id := range 2 {
		wg.Add(2)
		go run("mount", id, func(dir string, i int) error {
			return churn(filepath.Join(mnt, dir), fmt.Sprintf("m%d-%d", id, i), wd.begin)
		})
		go run("api", id, func(dir string, i int) error {
			return apiChurn(d, "/"+dir, fmt.Sprintf("a%d-%d", id, i), wd.begin)
		})
	}
	wg.Add(2)
	go run("outside", 0, func(dir string, i int) error { return churn(filepath.Join(d.Root, dir), fmt.Sprintf("o-%d", i), nil) })
	go run("list", 0, func(dir string, i int) error {
		defer wd.begin("readdir " + dir)()
		_, err := os.ReadDir(filepath.Join(mnt, dir))
		return err
	})
	wg.Wait()
	if wd.fired() {
		t.FailNow() // the watchdog said why
	}
	t.Logf("operations: %v", counts)
	for _, way := range []string{"mount", "api", "outside", "list"} {
		if counts[way] == 0 {
			t.Errorf("no %s operation ran", way)
		}
	}
	// Errors are allowed only where the writers raced each other for one
	// name; there are none such: each writes its own names.
	if len(errs) > 0 {
		t.Errorf("operations failed:\n%s", strings.Join(errs, "\n"))
	}
	// The mount and the root agree once the journal has caught up.
	for _, dir := range dirs {
		waitFor(10*time.Second, func() bool { return sameNames(filepath.Join(d.Root, dir), filepath.Join(mnt, dir)) })
		if !sameNames(filepath.Join(d.Root, dir), filepath.Join(mnt, dir)) {
			t.Errorf("%s: the mount lists %v, the root %v", dir, names(filepath.Join(mnt, dir)), names(filepath.Join(d.Root, dir)))
		}
	}
}

// churn creates name in dir, renames it, makes and removes a directory
// beside it, and removes the file: each step takes dir's lock in the
// kernel. track notes each step under way (nil: none).
func churn(dir, name string, track func(string) func()) error {
	p, q, sub := filepath.Join(dir, name), filepath.Join(dir, name+".r"), filepath.Join(dir, name+".d")
	steps := []struct {
		what string
		do   func() error
	}{
		{"create " + p, func() error { return os.WriteFile(p, []byte(name), 0o644) }},
		{"rename " + p, func() error { return os.Rename(p, q) }},
		{"mkdir " + sub, func() error { return os.Mkdir(sub, 0o755) }},
		{"rmdir " + sub, func() error { return os.Remove(sub) }},
		{"unlink " + q, func() error { return os.Remove(q) }},
	}
	for _, st := range steps {
		end := func() {}
		if track != nil {
			end = track(st.what)
		}
		err := st.do()
		end()
		if err != nil {
			return err
		}
	}
	return nil
}

// apiChurn is churn through the sandbox-agent routes.
func apiChurn(d *Daemon, dir, name string, track func(string) func()) error {
	p, q := dir+"/"+name, dir+"/"+name+".r"
	steps := []struct{ method, path, body string }{
		{"PUT", "/v1/fs/file?path=" + url.QueryEscape(p), name},
		{"POST", "/v1/fs/move", fmt.Sprintf(`{"from":%q,"to":%q}`, p, q)},
		{"POST", "/v1/fs/mkdir?path=" + url.QueryEscape(q+".d"), ""},
		{"DELETE", "/v1/fs/entry?path=" + url.QueryEscape(q+".d"), ""},
		{"DELETE", "/v1/fs/entry?path=" + url.QueryEscape(q), ""},
	}
	for _, s := range steps {
		end := track(s.method + " " + s.path)
		err := apiStep(d, s.method, s.path, s.body)
		end()
		if err != nil {
			return err
		}
	}
	return nil
}

func apiStep(d *Daemon, method, path, body string) error {
	req, err := http.NewRequest(method, d.URL+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	if method == "POST" && body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.Client().Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	return nil
}

func names(dir string) []string {
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func sameNames(a, b string) bool {
	return fmt.Sprint(names(a)) == fmt.Sprint(names(b))
}
