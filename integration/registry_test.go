package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The live registry (--sandboxes DIR, api.md "The live registry"): the
// daemon serves every subdirectory of DIR, made or removed while it runs,
// and POST/DELETE /v1/sandboxes make and remove them.

// appearWithin is how soon a sandbox made or removed must be seen so.
const appearWithin = time.Second

// startRegistry runs a daemon serving a fresh --sandboxes DIR (plus args).
func startRegistry(t *testing.T, args ...string) (*Daemon, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sandboxes")
	must(t, os.Mkdir(dir, 0o755))
	return startDaemon(t, append([]string{"--sandboxes", dir}, args...)...), dir
}

// named sends method to sandbox name's route rest (a /v1/sandboxes/NAME
// route) with body; it answers the status and the body.
func named(t testing.TB, d *Daemon, token, method, name, rest string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, d.URL+"/v1/sandboxes/"+name+rest, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil && method != "PUT" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// createSandbox is POST /v1/sandboxes {name}; it answers the token.
func createSandbox(t testing.TB, d *Daemon, name string) string {
	t.Helper()
	st, b := postSandbox(t, d, map[string]any{"name": name})
	if st != http.StatusCreated {
		t.Fatalf("POST /v1/sandboxes %s: %d %s", name, st, b)
	}
	var out struct{ Name, Token string }
	if err := json.Unmarshal(b, &out); err != nil || out.Name != name {
		t.Fatalf("POST /v1/sandboxes %s answered %s (%v)", name, b, err)
	}
	return out.Token
}

func postSandbox(t testing.TB, d *Daemon, body any) (int, []byte) {
	t.Helper()
	j, _ := json.Marshal(body)
	resp, err := http.Post(d.URL+"/v1/sandboxes", "application/json", bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// discardAtCleanup discards the fork name when the test ends, so its
// temp directory holds no overlay mount.
func discardAtCleanup(t testing.TB, d *Daemon, name string) {
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", d.URL+"/v1/sandboxes/"+name, nil)
		if resp, err := d.Client().Do(req); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("discarding the fork %s: %v %v", name, resp, err)
		} else {
			resp.Body.Close()
		}
	})
}

// waitStatus waits up to appearWithin for the sandbox's root listing to
// answer want (200: served; 404: not).
func waitStatus(t testing.TB, d *Daemon, name string, want int) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		st, b := named(t, d, "", "GET", name, "/fs/list?path=/", nil)
		if st == want {
			return time.Since(start)
		}
		if time.Since(start) > appearWithin {
			t.Fatalf("sandbox %s: %d %s after %v, want %d\n%s", name, st, b, appearWithin, want, d.Log())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRegistryLive: 50 sandboxes made and removed (half by mkdir and rmdir
// in DIR, half by POST and DELETE) while clients work in 3 others; each
// appears and disappears within a second, and no request sees another
// sandbox's file.
func TestRegistryLive(t *testing.T) {
	d, dir := startRegistry(t)
	workers := []string{"w0", "w1", "w2"}
	for _, w := range workers {
		createSandbox(t, d, w)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ops atomic.Int64
	errs := make(chan error, 16)
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := workOnce(t, d, w, i); err != nil {
					errs <- err
					return
				}
				ops.Add(1)
			}
		}()
	}
	var appear, gone time.Duration
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("s%02d", i)
		byHand := i%2 == 0
		if byHand {
			must(t, os.Mkdir(filepath.Join(dir, name), 0o755))
		} else {
			createSandbox(t, d, name)
		}
		appear = max(appear, waitStatus(t, d, name, 200))
		if err := workOnce(t, d, name, 0); err != nil {
			t.Fatal(err)
		}
		if byHand {
			must(t, os.RemoveAll(filepath.Join(dir, name)))
		} else if st, b := named(t, d, "", "DELETE", name, "", nil); st/100 != 2 {
			t.Fatalf("DELETE %s: %d %s", name, st, b)
		}
		gone = max(gone, waitStatus(t, d, name, 404))
		if !byHand {
			if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
				t.Errorf("DIR/%s after DELETE: %v", name, err)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("50 sandboxes: slowest to appear %v, to go %v; %d worker rounds meanwhile", appear, gone, ops.Load())
	if ops.Load() < 30 {
		t.Errorf("only %d worker rounds", ops.Load())
	}
}

// workOnce writes a file carrying the sandbox's name, reads it back, and
// lists the root: every name there must be the sandbox's own.
func workOnce(t testing.TB, d *Daemon, name string, i int) error {
	file := fmt.Sprintf("/%s-%d", name, i%8)
	want := fmt.Sprintf("%s round %d", name, i)
	if st, b := named(t, d, "", "PUT", name, "/fs/write?path="+url.QueryEscape(file), []byte(want)); st != 200 {
		return fmt.Errorf("%s: write %s: %d %s", name, file, st, b)
	}
	st, b := named(t, d, "", "GET", name, "/fs/read?path="+url.QueryEscape(file), nil)
	if st != 200 || string(b) != want {
		return fmt.Errorf("%s: read %s: %d %q, want %q", name, file, st, b, want)
	}
	st, b = named(t, d, "", "GET", name, "/fs/list?path=/", nil)
	var list struct {
		Entries []struct{ Name string }
	}
	if err := json.Unmarshal(b, &list); st != 200 || err != nil {
		return fmt.Errorf("%s: list: %d %s", name, st, b)
	}
	for _, e := range list.Entries {
		if !strings.HasPrefix(e.Name, name+"-") {
			return fmt.Errorf("sandbox %s lists %q: another sandbox's file", name, e.Name)
		}
	}
	return nil
}

// TestRegistryNames: a name that is no DNS label is refused 400 by POST
// and changes nothing; a directory so named in DIR is not served.
func TestRegistryNames(t *testing.T) {
	d, dir := startRegistry(t)
	before, _ := os.ReadDir(filepath.Dir(dir))
	for _, name := range []string{"..", ".", "a/b", "../x", "Upper", "a_b", "-a", "a-", "", strings.Repeat("a", 64), "a b", "%2e%2e"} {
		st, b := postSandbox(t, d, map[string]any{"name": name})
		if st != 400 {
			t.Errorf("POST {name:%q}: %d %s, want 400", name, st, b)
		}
	}
	if st, b := postSandbox(t, d, map[string]any{"name": "default"}); st != 409 {
		t.Errorf("POST {name:default}: %d %s, want 409", st, b)
	}
	after, _ := os.ReadDir(filepath.Dir(dir))
	inDir, _ := os.ReadDir(dir)
	if len(before) != len(after) || len(inDir) != 0 {
		t.Errorf("refused names made something: %v → %v, DIR %v", before, after, inDir)
	}
	// By hand: not served, one log line each; a symlink to a directory
	// is not a sandbox either.
	for _, n := range []string{"Upper", "a_b", "x.y"} {
		must(t, os.Mkdir(filepath.Join(dir, n), 0o755))
	}
	must(t, os.Symlink(t.TempDir(), filepath.Join(dir, "link")))
	must(t, os.Mkdir(filepath.Join(dir, "ok"), 0o755))
	waitStatus(t, d, "ok", 200)
	for _, n := range []string{"Upper", "a_b", "x.y", "link"} {
		if st, b := named(t, d, "", "GET", url.PathEscape(n), "/fs/list?path=/", nil); st != 404 {
			t.Errorf("DIR/%s served: %d %s", n, st, b)
		}
	}
	for _, n := range []string{"Upper", "a_b", "x.y"} {
		if c := strings.Count(d.Log(), "name="+n); c != 1 {
			t.Errorf("%d log lines for DIR/%s, want 1:\n%s", c, n, d.Log())
		}
	}
}
