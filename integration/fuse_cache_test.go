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

// TestFUSECaching: where the kernel watch covers a file, the kernel keeps
// its name and attributes and asks the daemon nothing on a warm stat (the
// journal invalidates them on change, see TestFUSECoherence); under a
// directory never watched (.git), and everywhere with --mount-cache 0, it
// asks every time.
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
		{"under .git, default cache", nil, ".git/HEAD", true},
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
