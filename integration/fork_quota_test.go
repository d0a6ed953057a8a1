package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestForkQuota: a fork's usage is what it wrote, its upper, not the tree
// it shares with its parent: none right after the fork of a 6 MiB tree;
// after a new file, an append to a lower file (copied up whole), a chmod
// (a metacopy) and a removal (a whiteout), what a walk of the upper finds;
// a fork bounded far below its parent's tree writes under its bound and
// is refused past it; a restart counts the same.
func TestForkQuota(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "fork quotas NOT TESTED: an overlay mount needs root")
	}
	d, dir := startRegistry(t)
	state := d.State
	t.Cleanup(func() { // before the temp dirs go: a failed test leaves its forks mounted
		for _, f := range []string{"wide", "tight"} {
			_ = unix.Unmount(filepath.Join(state, "forks", f, "root"), unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		}
	})
	createSandbox(t, d, "main")
	main := filepath.Join(dir, "main")
	big, b2 := randomBytes(t, 4<<20), randomBytes(t, 2<<20)
	must(t, os.MkdirAll(filepath.Join(main, "big"), 0o755))
	must(t, os.WriteFile(filepath.Join(main, "big/a.bin"), big, 0o644))
	must(t, os.WriteFile(filepath.Join(main, "big/b.bin"), b2, 0o644))
	must(t, os.WriteFile(filepath.Join(main, "small.txt"), []byte("small"), 0o644))
	must(t, os.WriteFile(filepath.Join(main, "gone.txt"), []byte("gone"), 0o644))

	for _, f := range []map[string]any{
		{"name": "wide", "from": "main"},
		{"name": "tight", "from": "main", "quota": map[string]int64{"bytes": 256 << 10}},
	} {
		if st, b := postSandbox(t, d, f); st != http.StatusCreated {
			t.Fatalf("fork %v: %d %s", f, st, b)
		}
	}
	upper := func(name string) string { return filepath.Join(d.State, "forks", name, "upper") }
	newFile := randomBytes(t, 100<<10)

	steps := []struct {
		name string
		do   func(t *testing.T)
		// want is each fork's usage after the step (bytes, entries):
		// what a walk of its upper finds, held to these numbers too.
		want map[string][2]int64
	}{
		{"just forked", func(*testing.T) {}, map[string][2]int64{"wide": {0, 0}, "tight": {0, 0}}},
		{"written", func(t *testing.T) {
			if st, b := named(t, d, "", "PUT", "wide", "/fs/write?path=/new.bin", newFile); st != http.StatusOK {
				t.Fatalf("write: %d %s", st, b)
			}
			// In place: the overlay copies big/b.bin up whole, and big/ with it.
			if st, b := aioWrite(t, d, "wide", `{"path":"/big/b.bin","content":"more","append":true}`); st != http.StatusOK {
				t.Fatalf("append: %d %s", st, b)
			}
			if st, b := named(t, d, "", "POST", "wide", "/fs/chmod", []byte(`{"path":"/small.txt","mode":"0600"}`)); st != http.StatusOK {
				t.Fatalf("chmod: %d %s", st, b)
			}
			if st, b := named(t, d, "", "DELETE", "wide", "/fs/delete?path=/gone.txt", nil); st != http.StatusOK {
				t.Fatalf("delete: %d %s", st, b)
			}
			appended := append(bytes.Clone(b2), "more"...)
			wantBytes(t, filepath.Join(upper("wide"), "new.bin"), newFile)
			wantBytes(t, filepath.Join(upper("wide"), "big/b.bin"), appended)
			wantBytes(t, filepath.Join(d.State, "forks", "wide", "root", "big/b.bin"), appended)
			wantBytes(t, filepath.Join(main, "big/b.bin"), b2)
			// new.bin, big/, big/b.bin, small.txt (metadata only); gone.txt's whiteout no entry.
		}, map[string][2]int64{"wide": {100<<10 + 2<<20 + 4, 4}, "tight": {0, 0}}},
		{"under and over a bound", func(t *testing.T) {
			// Rewrites of its own file free what they replace, at once:
			// three of them stay under a bound two would pass otherwise.
			for i := range 3 {
				if st, b := named(t, d, "", "PUT", "tight", "/fs/write?path=/new.bin", newFile); st != http.StatusOK {
					t.Fatalf("write %d under the bound: %d %s", i, st, b)
				}
				if got := sandboxUsage(t, d, "tight"); got[0] != 100<<10 {
					t.Fatalf("usage after write %d: %v, want 100 KiB at once", i, got)
				}
			}
			// Removing a lower file frees none of the fork's bytes: the
			// 4 MiB were never its own.
			if st, b := named(t, d, "", "DELETE", "tight", "/fs/delete?path=/big/a.bin", nil); st != http.StatusOK {
				t.Fatalf("delete: %d %s", st, b)
			}
			if got := sandboxUsage(t, d, "tight"); got[0] != 100<<10 {
				t.Fatalf("usage after removing a lower file: %v, want 100 KiB still", got)
			}
			st, b := named(t, d, "", "PUT", "tight", "/fs/write?path=/more.bin", make([]byte, 200<<10))
			if st != 507 || !strings.Contains(string(b), `"code":"ENOSPC"`) || !strings.Contains(string(b), "bytes limit 262144") {
				t.Fatalf("write past the bound: %d %s, want 507 ENOSPC", st, b)
			}
			wantBytes(t, filepath.Join(upper("tight"), "new.bin"), newFile)
			if _, err := os.Lstat(filepath.Join(upper("tight"), "more.bin")); !os.IsNotExist(err) {
				t.Errorf("the refused write left more.bin in the upper: %v", err)
			}
			// new.bin, and big/ copied up to hold a.bin's whiteout.
		}, map[string][2]int64{"wide": {100<<10 + 2<<20 + 4, 4}, "tight": {100 << 10, 2}}},
		{"restarted", func(t *testing.T) {
			d.Stop(t)
			d = startDaemon(t, "--sandboxes", dir, "--state", d.State)
			waitStatus(t, d, "wide", http.StatusOK)
			waitStatus(t, d, "tight", http.StatusOK)
		}, map[string][2]int64{"wide": {100<<10 + 2<<20 + 4, 4}, "tight": {100 << 10, 2}}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do(t)
			for name, want := range s.want {
				b, e, err := testenv.UpperUsage(upper(name))
				must(t, err)
				if b != want[0] || e != want[1] {
					t.Errorf("%s: a walk of its upper finds %d bytes %d entries, want %d and %d", name, b, e, want[0], want[1])
				}
				if got := waitForkUsage(t, d, name, want); got != want {
					t.Errorf("%s: GET /v1/sandboxes shows usage %v, want its upper's %v", name, got, want)
				}
			}
		})
		if t.Failed() {
			t.Fatalf("after %q:\n%s", s.name, d.Log())
		}
	}
}

// aioWrite is POST /v2/fs/write with body on sandbox name.
func aioWrite(t *testing.T, d *Daemon, name, body string) (int, []byte) {
	t.Helper()
	res, err := d.Client().Post(d.URL+"/v2/fs/write?sandbox="+name, "application/json", strings.NewReader(body))
	must(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// waitForkUsage is sandbox name's usage in GET /v1/sandboxes once it is
// want, or after 15 s: a fork's counts settle by a scan of its upper a
// moment after each write (core/quota, "Forks").
func waitForkUsage(t *testing.T, d *Daemon, name string, want [2]int64) [2]int64 {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := sandboxUsage(t, d, name)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sandboxUsage is sandbox name's usage (bytes, entries) in GET /v1/sandboxes.
func sandboxUsage(t *testing.T, d *Daemon, name string) [2]int64 {
	t.Helper()
	res, err := d.Client().Get(d.URL + "/v1/sandboxes")
	must(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var list struct {
		Sandboxes []struct {
			Name  string
			Usage struct{ Bytes, Entries int64 }
		}
	}
	if err := json.Unmarshal(b, &list); res.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("GET /v1/sandboxes: %d %s (%v)", res.StatusCode, b, err)
	}
	for _, s := range list.Sandboxes {
		if s.Name == name {
			return [2]int64{s.Usage.Bytes, s.Usage.Entries}
		}
	}
	t.Fatalf("GET /v1/sandboxes lacks %s: %s", name, b)
	return [2]int64{}
}

// randomBytes is n bytes no two files share.
func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// wantBytes holds the file p to want, without printing either.
func wantBytes(t *testing.T, p string, want []byte) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, want) {
		t.Errorf("%s: %d bytes (%v), want the %d written", p, len(b), err, len(want))
	}
}
