package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fuseRequests returns the requests the daemon (run with --fuse-debug)
// received while do ran. The log reaches this process a moment after the
// requests, so do is fenced by lookups of fresh names in dir (names the
// kernel cannot know, so each is one LOOKUP), and the requests between the
// two fences' log lines are do's.
func fuseRequests(t *testing.T, d *Daemon, mnt string, do func()) []string {
	t.Helper()
	fence := func() string {
		name := fmt.Sprintf("fence-%d", time.Now().UnixNano())
		os.Stat(filepath.Join(mnt, "dir", name))
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d.Log(), name); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the daemon never logged the lookup of %s:\n%s", name, d.Log())
			}
		}
		return name
	}
	begin := fence()
	do()
	end := fence()
	log := d.Log()
	log = log[strings.Index(log, begin):]
	log = log[strings.Index(log, "\n")+1:]                               // after the first fence's line
	log = log[:strings.LastIndex(log[:strings.Index(log, end)], "\n")+1] // before the second's
	var reqs []string
	rx := regexp.MustCompile(`rx \d+: ([A-Z_]+.*)`)
	for _, l := range strings.Split(log, "\n") {
		if m := rx.FindStringSubmatch(l); m != nil {
			reqs = append(reqs, m[1])
		}
	}
	return reqs
}

// TestFUSECaching: where the kernel watch covers a file (everywhere, .git
// included), the kernel keeps its name and attributes and asks the daemon
// nothing on a warm stat (the journal invalidates them on change, see
// TestFUSECoherence); with --mount-cache 0 it asks every time.
func TestFUSECaching(t *testing.T) {
	const n = 20
	statN := func(t *testing.T, p string) func() {
		return func() {
			for i := 0; i < n; i++ {
				if _, err := os.Stat(p); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cases := []struct {
		name      string
		args      []string
		file      string // relative to the mount
		wantAsked bool
	}{
		{"watched file, default cache", nil, "dir/f", false},
		{"missing name, default cache", nil, "dir/none", false},
		{"under .git, default cache", nil, ".git/HEAD", false},
		{"watched file, --mount-cache 0", []string{"--mount-cache", "0"}, "dir/f", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, mnt := startMirror(t, append([]string{"--fuse-debug"}, tc.args...)...)
			// Until the watch's first walk is done nothing is cacheable.
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d.Log(), "kernel watch ready"); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the kernel watch never became ready:\n%s", d.Log())
				}
			}
			must(t, os.MkdirAll(filepath.Join(mnt, "dir"), 0o755))
			must(t, os.MkdirAll(filepath.Join(mnt, ".git"), 0o755))
			must(t, os.WriteFile(filepath.Join(mnt, "dir", "f"), []byte("x"), 0o644))
			must(t, os.WriteFile(filepath.Join(mnt, ".git", "HEAD"), []byte("ref"), 0o644))
			p := filepath.Join(mnt, tc.file)
			do := statN(t, p)
			if strings.HasSuffix(tc.file, "none") {
				do = func() {
					for i := 0; i < n; i++ {
						if _, err := os.Stat(p); !os.IsNotExist(err) {
							t.Fatalf("stat %s: %v, want not exist", p, err)
						}
					}
				}
			}
			do() // warm
			reqs := fuseRequests(t, d, mnt, do)
			asked := 0
			for _, r := range reqs {
				if strings.HasPrefix(r, "LOOKUP") || strings.HasPrefix(r, "GETATTR") {
					asked++
				}
			}
			switch {
			case tc.wantAsked && asked < n:
				t.Errorf("%d warm stats of %s asked the daemon %d times (%v), want at least %d", n, tc.file, asked, reqs, n)
			case !tc.wantAsked && asked != 0:
				t.Errorf("%d warm stats of %s asked the daemon %d times (%v), want 0", n, tc.file, asked, reqs)
			}
		})
	}
}

// TestFUSEFlush: a handle opened read-only is opened with FOPEN_NOFLUSH, so
// its close costs no round trip (a read-only handle has no write to tell),
// while each close of a handle open for writing still sends FLUSH, at which
// the mirror tells the write (TestFUSEEvents checks the event).
func TestFUSEFlush(t *testing.T) {
	const n = 10
	d, mnt := startMirror(t, "--fuse-debug")
	must(t, os.MkdirAll(filepath.Join(mnt, "dir"), 0o755))
	p := filepath.Join(mnt, "dir", "f")
	must(t, os.WriteFile(p, []byte("hello"), 0o644))
	cases := []struct {
		name      string
		flag      int
		wantFlush int
	}{
		{"read-only", os.O_RDONLY, 0},
		{"write-only", os.O_WRONLY, n},
		{"read-write", os.O_RDWR, n},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reqs := fuseRequests(t, d, mnt, func() {
				for i := 0; i < n; i++ {
					f, err := os.OpenFile(p, tc.flag, 0)
					if err != nil {
						t.Fatal(err)
					}
					if tc.flag == os.O_RDONLY {
						b := make([]byte, 16)
						if k, err := f.Read(b); err != nil || string(b[:k]) != "hello" {
							t.Errorf("read %q, %v; want hello", b[:k], err)
						}
					}
					must(t, f.Close())
				}
			})
			flushes, opens := 0, 0
			for _, r := range reqs {
				switch {
				case strings.HasPrefix(r, "FLUSH"):
					flushes++
				case strings.HasPrefix(r, "OPEN"):
					opens++
				}
			}
			if opens != n {
				t.Errorf("%d opens sent %d OPEN requests (%v), want %d", n, opens, reqs, n)
			}
			if flushes != tc.wantFlush {
				t.Errorf("%d closes of a %s handle sent %d FLUSH requests (%v), want %d", n, tc.name, flushes, reqs, tc.wantFlush)
			}
		})
	}
}

// TestFUSEOutsideWriteAfterClose: a file written through the mount (and
// every other time read back through it), then appended to directly in the
// root at once: the
// write handle's RELEASE (sent after close() returned) may come after the
// append, under the handle's claim. Every append is still told exactly
// once, as external, and the mount shows it once it is told. Repeated, so
// both orders of RELEASE and append happen.
func TestFUSEOutsideWriteAfterClose(t *testing.T) {
	const n = 30
	for _, mode := range fuseModes {
		t.Run(mode.name, func(t *testing.T) {
			d, mnt := startMirror(t, mode.args...)
			w := newWatch(t, d)
			var all []watchEvent
			for i := 0; i < n; i++ {
				name := fmt.Sprintf("after%d", i)
				must(t, os.WriteFile(filepath.Join(mnt, name), []byte("a"), 0o644))
				if i%2 == 1 {
					wantContent(t, filepath.Join(mnt, name), "a")
				}
				f, err := os.OpenFile(filepath.Join(d.Root, name), os.O_APPEND|os.O_WRONLY, 0)
				must(t, err)
				_, err = f.WriteString("b")
				must(t, err)
				must(t, f.Close())
				all = append(all, w.until(t, "/"+name, "external")...)
				wantContent(t, filepath.Join(mnt, name), "ab")
			}
			restPut(t, d, "/end", "end")
			all = append(all, w.until(t, "/end", "api")...)
			for i := 0; i < n; i++ {
				p := fmt.Sprintf("/after%d", i)
				var got []string
				for _, e := range all {
					if e.Path == p {
						got = append(got, e.Origin+" "+e.Type)
					}
				}
				want := "fuse create\nfuse write\nexternal write"
				if strings.Join(got, "\n") != want {
					t.Errorf("%s: got events\n%s\nwant\n%s", p, strings.Join(got, "\n"), want)
				}
			}
		})
	}
}
