package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFUSEListings: directory listings through the mount are whole and
// true, by cache or not. Where the kernel takes it (FUSE_NO_OPENDIR_SUPPORT)
// and the mount caches, directories are opened with no OPENDIR: a warm walk
// sends the daemon no OPENDIR, RELEASEDIR or READDIR at all, while an API
// change, an outside change and a change through the mount each show in
// the next listing; a listing longer than one READDIR reply resumes at the
// offset telldir gave; fsync of a directory works with no handle. With
// --mount-cache 0 every listing is opened and read anew.
func TestFUSEListings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		cached bool
	}{
		{"default cache", nil, true},
		{"--mount-cache 0", []string{"--mount-cache", "0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, mnt := startMirror(t, append([]string{"--fuse-debug"}, tc.args...)...)
			waitWatchReady(t, d)
			must(t, os.MkdirAll(filepath.Join(mnt, "dir"), 0o755))
			big := filepath.Join(mnt, "big")
			must(t, os.Mkdir(big, 0o755))
			var want []string
			for i := 0; i < 1500; i++ { // several READDIR replies' worth
				name := fmt.Sprintf("file-with-a-longish-name-%04d", i)
				must(t, os.WriteFile(filepath.Join(big, name), nil, 0o644))
				want = append(want, name)
			}
			checkListing(t, big, want)

			reqs := fuseRequests(t, d, mnt, func() { checkListing(t, big, want) })
			dirReqs := 0
			for _, r := range reqs {
				if strings.HasPrefix(r, "OPENDIR") || strings.HasPrefix(r, "RELEASEDIR") || strings.HasPrefix(r, "READDIR") {
					dirReqs++
				}
			}
			if tc.cached && dirReqs != 0 {
				t.Errorf("a warm listing sent the daemon %d directory requests, want none:\n%s", dirReqs, strings.Join(reqs, "\n"))
			}
			if !tc.cached && !slices.ContainsFunc(reqs, func(r string) bool { return strings.HasPrefix(r, "OPENDIR") }) {
				t.Errorf("with --mount-cache 0 a listing sent no OPENDIR:\n%s", strings.Join(reqs, "\n"))
			}

			// Through the API: seen at the next listing.
			apiPut(t, d, "/big/by-api", "x")
			want = append(want, "by-api")
			checkListing(t, big, want)
			// Outside, in the root: seen once the journal told it.
			must(t, os.WriteFile(filepath.Join(d.Root, "big", "by-outside"), nil, 0o644))
			want = append(want, "by-outside")
			waitListing(t, big, want)
			// Through the mount.
			must(t, os.Remove(filepath.Join(big, "file-with-a-longish-name-0007")))
			want = slices.DeleteFunc(want, func(n string) bool { return n == "file-with-a-longish-name-0007" })
			checkListing(t, big, want)

			checkSeek(t, big)
			f, err := os.Open(big)
			must(t, err)
			if err := f.Sync(); err != nil {
				t.Errorf("fsync of a directory through the mount: %v", err)
			}
			f.Close()
		})
	}
}

// checkListing fails the test unless dir lists exactly want.
func checkListing(t *testing.T, dir string, want []string) {
	t.Helper()
	if got := listing(t, dir); !slices.Equal(got, sorted(want)) {
		t.Fatalf("%s lists %d names, want %d; missing %v, extra %v", dir, len(got), len(want), minus(want, got), minus(got, want))
	}
}

// waitListing waits for dir to list exactly want.
func waitListing(t *testing.T, dir string, want []string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := listing(t, dir)
		if slices.Equal(got, sorted(want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never listed what the root holds; missing %v, extra %v", dir, minus(want, got), minus(got, want))
		}
	}
}

func listing(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(dir)
	must(t, err)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	must(t, err)
	slices.Sort(names)
	return names
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// checkSeek reads dir a little at a time, notes the offset after the
// 100th entry (the next entry's telldir), reads on, then seeks back to
// it: the entries read after the seek are those read after that point
// the first time.
func checkSeek(t *testing.T, dir string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fd)
	read := func() (names []string, offs []int64) {
		buf := make([]byte, 1024) // a few entries per getdents
		for {
			n, err := unix.Getdents(fd, buf)
			must(t, err)
			if n == 0 {
				return
			}
			for b := buf[:n]; len(b) > 0; {
				off := int64(nativeEndianUint64(b[8:16]))
				reclen := int(b[16]) | int(b[17])<<8
				name := string(b[19:reclen])
				names = append(names, name[:strings.IndexByte(name, 0)])
				offs = append(offs, off)
				b = b[reclen:]
			}
		}
	}
	all, offs := read()
	if len(all) < 200 {
		t.Fatalf("getdents read %d entries of %s", len(all), dir)
	}
	_, err = unix.Seek(fd, offs[99], io.SeekStart)
	must(t, err)
	again, _ := read()
	if !slices.Equal(again, all[100:]) {
		t.Errorf("after a seek to the 100th entry's offset: %d entries, want the %d after it (first %v, want %v)", len(again), len(all)-100, again[:min(3, len(again))], all[100:103])
	}
}

func nativeEndianUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// apiPut writes body to the sandbox path p through the sandbox-agent API.
func apiPut(t *testing.T, d *Daemon, p, body string) {
	t.Helper()
	req, _ := http.NewRequest("PUT", d.BaseURL()+"/v1/fs/file?path="+url.QueryEscape(p), strings.NewReader(body))
	resp, err := d.Client().Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT %s: %d", p, resp.StatusCode)
	}
}
