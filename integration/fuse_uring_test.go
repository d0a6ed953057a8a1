package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sandfs/internal/testenv"
)

// FUSE over io_uring (serve --fuse-uring): the mount works the same, its
// requests go over the ring where the kernel offers it, and over
// /dev/fuse where it does not.

const enableURing = "/sys/module/fuse/parameters/enable_uring"

// setEnableURing sets the kernel's enable_uring to v ("Y" or "N") for the
// test, and puts the old value back after it.
func setEnableURing(t *testing.T, v string) {
	t.Helper()
	old, err := os.ReadFile(enableURing)
	if err != nil {
		testenv.Skip(t, nil, "FUSE over io_uring NOT TESTED: %v (a kernel 6.14+ built with CONFIG_FUSE_IO_URING has it)", err)
	}
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "FUSE over io_uring NOT TESTED: setting %s needs root", enableURing)
	}
	if err := os.WriteFile(enableURing, []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(enableURing, bytes.TrimSpace(old), 0o644); err != nil {
			t.Errorf("restoring %s to %s: %v", enableURing, old, err)
		}
	})
}

var uringMetric = regexp.MustCompile(`(?m)^sandfs_fuse_uring_requests_total\{sandbox="default"\} (\d+)$`)

// uringRequests is the daemon's sandfs_fuse_uring_requests_total for the
// sandbox default.
func uringRequests(t *testing.T, d *Daemon) int {
	t.Helper()
	m := uringMetric.FindStringSubmatch(metricsText(t, d))
	if m == nil {
		t.Fatalf("/metrics has no sandfs_fuse_uring_requests_total for default:\n%s", grepLines(metricsText(t, d), "sandfs_fuse"))
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestFUSEURing(t *testing.T) {
	requireFUSE(t)
	for _, mode := range fuseModes {
		t.Run("ring/"+mode.name, func(t *testing.T) { testURing(t, mode.args) })
	}
	t.Run("unmount", testURingUnmount)
	t.Run("fallback", func(t *testing.T) {
		setEnableURing(t, "N")
		d, mnt := startMirror(t, "--fuse-uring", "--log-events")
		// LogHas waits for its line; the line that must not be there is
		// looked for in the log as it is.
		if !d.LogHas("does not offer FUSE over io_uring") || strings.Contains(d.Log(), "fuse: serving over io_uring") {
			t.Fatalf("with enable_uring=N the daemon should say it serves over /dev/fuse:\n%s", d.Log())
		}
		uringFiles(t, d, mnt)
		if n := uringRequests(t, d); n != 0 {
			t.Errorf("sandfs_fuse_uring_requests_total = %d over /dev/fuse, want 0", n)
		}
		d.Stop(t)
		if mounted(t, mnt) {
			t.Errorf("%s still mounted after the daemon stopped", mnt)
		}
	})
}

// testURing: with enable_uring=Y the mount serves over the ring, with
// passthrough (no READ or WRITE reaches the daemon) or without (every
// READ and WRITE goes through the ring's payload buffers).
func testURing(t *testing.T, args []string) {
	setEnableURing(t, "Y")
	d, mnt := startMirror(t, append([]string{"--fuse-uring", "--log-events"}, args...)...)
	if !d.LogHas("fuse: serving over io_uring") {
		t.Fatalf("the daemon does not serve over io_uring:\n%s", d.Log())
	}
	before := uringRequests(t, d)
	uringFiles(t, d, mnt)
	uringGit(t, mnt)
	uringParallel(t, mnt)
	if n := uringRequests(t, d); n <= before || n < 100 {
		t.Errorf("sandfs_fuse_uring_requests_total went from %d to %d: the requests did not go over the ring", before, n)
	}
	d.Stop(t)
	if mounted(t, mnt) {
		t.Errorf("%s still mounted after the daemon stopped", mnt)
	}
	if strings.Contains(d.Log(), "did not end with the connection") {
		t.Errorf("the ring's queues outlived the unmount:\n%s", d.Log())
	}
}

// uringFiles writes, reads, renames and removes through the mount, a
// large file too (past one ring payload), and checks the root and the
// journal's events (origin fuse, each told once).
func uringFiles(t *testing.T, d *Daemon, mnt string) {
	t.Helper()
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB: several WRITEs and READs
	must(t, os.WriteFile(filepath.Join(mnt, "new"), []byte("data"), 0o644))
	must(t, os.WriteFile(filepath.Join(mnt, "big"), big, 0o644))
	must(t, os.Rename(filepath.Join(mnt, "new"), filepath.Join(mnt, "renamed")))
	must(t, os.Mkdir(filepath.Join(mnt, "dir"), 0o755))
	must(t, os.WriteFile(filepath.Join(mnt, "dir", "f"), []byte("in dir"), 0o600))
	if b, err := os.ReadFile(filepath.Join(mnt, "renamed")); err != nil || string(b) != "data" {
		t.Fatalf("read renamed through the mount: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "big")); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("read big through the mount: %d bytes %v, want %d", len(b), err, len(big))
	}
	if b, err := os.ReadFile(filepath.Join(d.Root, "dir", "f")); err != nil || string(b) != "in dir" {
		t.Fatalf("dir/f on the root: %q %v", b, err)
	}
	ents, err := os.ReadDir(mnt)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "big dir renamed" {
		t.Errorf("readdir of the mount: %v", names)
	}
	must(t, os.Remove(filepath.Join(mnt, "renamed")))
	if _, err := os.Stat(filepath.Join(d.Root, "renamed")); !os.IsNotExist(err) {
		t.Errorf("renamed still on the root: %v", err)
	}
	var got []string
	for _, e := range eventsBeforeSentinel(t, d) {
		got = append(got, e.line())
		// The caller, from the request's in header: as over /dev/fuse.
		if pid, _ := strconv.Atoi(e["pid"]); e["origin"] == "fuse" && (pid <= 0 || e["uid"] != strconv.Itoa(os.Getuid())) {
			t.Errorf("fuse event %v: pid %s uid %s, want a pid and uid %d", e, e["pid"], e["uid"], os.Getuid())
		}
	}
	want := []string{
		"create /new<- fuse",
		"write /new<- fuse",
		"create /big<- fuse",
		"write /big<- fuse",
		"rename /renamed<-/new fuse",
		"create /dir<- fuse",
		"create /dir/f<- fuse",
		"write /dir/f<- fuse",
		"remove /renamed<- fuse",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// uringGit makes a repository in the mount and commits to it: many
// small requests of every kind (lookups, creates, renames, fsyncs).
func uringGit(t *testing.T, mnt string) {
	t.Helper()
	repo := filepath.Join(mnt, "repo")
	must(t, os.MkdirAll(filepath.Join(repo, "src", "pkg"), 0o755))
	for i := range 40 {
		must(t, os.WriteFile(filepath.Join(repo, "src", "pkg", fmt.Sprintf("f%02d.txt", i)), []byte(strings.Repeat(fmt.Sprintf("line %d\n", i), i+1)), 0o644))
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "first over the ring")
	if st := git("status", "--porcelain"); st != "" {
		t.Errorf("git status after the commit is not clean:\n%s", st)
	}
	if log := git("log", "--oneline"); !strings.Contains(log, "first over the ring") || strings.Count(log, "\n") != 1 {
		t.Errorf("git log: %q", log)
	}
	if files := git("ls-files"); strings.Count(files, "\n") != 40 {
		t.Errorf("git ls-files has %d files, want 40", strings.Count(files, "\n"))
	}
	if fsck := git("fsck", "--no-progress"); strings.Contains(fsck, "error") {
		t.Errorf("git fsck: %s", fsck)
	}
}

// uringParallel has many threads (so both CPUs' queues, and both entries
// of each) write, read back, rename and remove files at once.
func uringParallel(t *testing.T, mnt string) {
	t.Helper()
	dir := filepath.Join(mnt, "par")
	must(t, os.Mkdir(dir, 0o755))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				data := bytes.Repeat([]byte{byte(w), byte(i)}, 20000+w*1000+i)
				p := filepath.Join(dir, fmt.Sprintf("w%d-%d", w, i))
				if err := os.WriteFile(p, data, 0o644); err != nil {
					errs <- err
					return
				}
				if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, data) {
					errs <- fmt.Errorf("%s: read %d bytes (%v), wrote %d", p, len(b), err, len(data))
					return
				}
				if err := os.Rename(p, p+".r"); err != nil {
					errs <- err
					return
				}
				if err := os.Remove(p + ".r"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("par/ after the workers: %d entries, %v", len(ents), err)
	}
}

// testURingUnmount: a sandbox removed while the daemon runs takes its
// mount's ring with it: no queue goroutine is left, and the next
// sandbox's mount gets a ring of its own.
func testURingUnmount(t *testing.T) {
	setEnableURing(t, "Y")
	dbg := freeAddr(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	d, _ := startRegistry(t, "--mount-all", mnt, "--fuse-uring", "--debug-listen", dbg)
	queues := func() int {
		t.Helper()
		res, err := debugClient.Get("http://" + dbg + "/debug/pprof/goroutine?debug=2")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		return strings.Count(b.String(), "sandfs/fusefs/uring.(*Transport).queue(")
	}
	base := queues() // the fixed default's mount
	for _, name := range []string{"one", "two"} {
		createSandbox(t, d, name)
		at := filepath.Join(mnt, name)
		waitMounted(t, d, at, true)
		must(t, os.WriteFile(filepath.Join(at, "f"), []byte(name), 0o644))
		if b, err := os.ReadFile(filepath.Join(at, "f")); err != nil || string(b) != name {
			t.Fatalf("%s: read %q %v", name, b, err)
		}
		if n := queues(); n <= base {
			t.Fatalf("%s: %d ring queue goroutines, %d before the mount", name, n, base)
		}
		if st, b := named(t, d, "", "DELETE", name, "", nil); st/100 != 2 {
			t.Fatalf("DELETE %s: %d %s", name, st, b)
		}
		waitMounted(t, d, at, false)
		deadline := time.Now().Add(5 * time.Second)
		for queues() != base {
			if time.Now().After(deadline) {
				t.Fatalf("%s unmounted but %d ring queue goroutines are left, want %d", name, queues(), base)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if strings.Contains(d.Log(), "did not end with the connection") {
		t.Errorf("a ring outlived its unmount:\n%s", d.Log())
	}
}
