package integration

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// requireFUSE skips loudly (testenv.Skip) where the machine cannot mount FUSE, and fails
// instead when SANDFS_REQUIRE_FUSE=1 (CI).
func requireFUSE(t *testing.T) {
	t.Helper()
	if missing := fuseMissing(); missing != "" {
		testenv.Skip(t, nil, "FUSE TESTS NOT RUN: missing %s", missing)
	}
}

// fuseMissing says what the machine lacks to mount FUSE ("" for nothing).
func fuseMissing() string {
	var missing []string
	if _, err := os.Stat("/dev/fuse"); err != nil {
		missing = append(missing, "/dev/fuse")
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		missing = append(missing, "fusermount3 (apt-get install fuse3)")
	}
	return strings.Join(missing, ", ")
}

// mounted reports whether mnt is a mount point in this process's view.
func mounted(t *testing.T, mnt string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && f[4] == mnt {
			return true
		}
	}
	return false
}

// startMirror runs a daemon serving a fresh root mounted at a fresh
// mountpoint. The daemon is a subprocess: this process may use the mount.
func startMirror(t *testing.T, args ...string) (*Daemon, string) {
	t.Helper()
	requireFUSE(t)
	mnt := t.TempDir()
	if os.Getenv("SANDFS_TEST_FUSE_URING") == "1" && !slices.Contains(args, "--fuse-uring") {
		// Every mirror test over FUSE over io_uring (enable_uring=Y set by
		// the caller; TestFUSEURing checks the ring is used).
		args = append(args, "--fuse-uring")
	}
	d := startDaemon(t, append([]string{"--mount", mnt}, args...)...)
	if !mounted(t, mnt) {
		t.Fatalf("daemon ready but %s is not mounted:\n%s", mnt, d.Log())
	}
	return d, mnt
}

// fuseModes are the ways the mirror runs: FUSE passthrough where the kernel
// grants it (the default), and every read and write through the daemon.
var fuseModes = []struct {
	name string
	args []string
}{
	{"passthrough", nil},
	{"no-passthrough", []string{"--no-passthrough"}},
}

// TestFUSECoherence: in every mode a change made through REST is seen
// through the mount at the next system call. An outside change is seen at
// the next system call once the journal has told it (the mirror invalidates
// the kernel's caches before the event can be read), and with
// --mount-cache 0 (strict: the kernel asks every time) at the next system
// call with no wait at all.
func TestFUSECoherence(t *testing.T) {
	for _, mode := range fuseModes {
		t.Run(mode.name, func(t *testing.T) { testCoherence(t, mode.args, false) })
	}
	t.Run("strict", func(t *testing.T) { testCoherence(t, []string{"--mount-cache", "0"}, true) })
}

func testCoherence(t *testing.T, args []string, strict bool) {
	d, mnt := startMirror(t, args...)
	root := d.Root
	w := newWatch(t, d)
	// told waits, unless strict, until the journal has told the outside
	// change of API path p: from then on the mount must show it.
	told := func(p string) {
		t.Helper()
		if !strict {
			w.until(t, p, "external")
		}
	}

	t.Run("REST write then read through the mount", func(t *testing.T) {
		must(t, os.WriteFile(filepath.Join(mnt, "r"), []byte("old"), 0o644))
		wantContent(t, filepath.Join(mnt, "r"), "old")
		restPut(t, d, "/r", "new from REST")
		wantContent(t, filepath.Join(mnt, "r"), "new from REST")
	})
	t.Run("outside create after a negative lookup", func(t *testing.T) {
		_, err := os.Stat(filepath.Join(mnt, "late"))
		wantErrno(t, err, unix.ENOENT)
		must(t, os.WriteFile(filepath.Join(root, "late"), []byte("here"), 0o644))
		told("/late")
		wantContent(t, filepath.Join(mnt, "late"), "here")
	})
	t.Run("outside append then stat", func(t *testing.T) {
		p := filepath.Join(mnt, "grow")
		must(t, os.WriteFile(p, []byte("12345"), 0o644))
		wantContent(t, p, "12345")
		f, err := os.OpenFile(filepath.Join(root, "grow"), os.O_APPEND|os.O_WRONLY, 0)
		must(t, err)
		_, err = f.WriteString("678")
		must(t, err)
		must(t, f.Close())
		told("/grow")
		fi, err := os.Stat(p)
		must(t, err)
		if fi.Size() != 8 {
			t.Errorf("got size %d through the mount, want 8", fi.Size())
		}
		wantContent(t, p, "12345678")
	})
	t.Run("outside delete", func(t *testing.T) {
		p := filepath.Join(mnt, "gone")
		must(t, os.WriteFile(p, []byte("x"), 0o644))
		wantContent(t, p, "x")
		must(t, os.Remove(filepath.Join(root, "gone")))
		told("/gone")
		_, err := os.Stat(p)
		wantErrno(t, err, unix.ENOENT)
	})
	t.Run("outside delete of a file held open for writing", func(t *testing.T) {
		// An editor's file: the handle's claim covers its writes, never
		// an outside remove of its name.
		p := filepath.Join(mnt, "held")
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
		must(t, err)
		defer f.Close()
		_, err = f.WriteString("kept open")
		must(t, err)
		must(t, os.Remove(filepath.Join(root, "held")))
		told("/held")
		_, err = os.Stat(p)
		wantErrno(t, err, unix.ENOENT)
	})
	t.Run("outside rename", func(t *testing.T) {
		must(t, os.Mkdir(filepath.Join(mnt, "dir"), 0o755))
		must(t, os.WriteFile(filepath.Join(mnt, "dir", "a"), []byte("A"), 0o644))
		wantContent(t, filepath.Join(mnt, "dir", "a"), "A")
		must(t, os.Rename(filepath.Join(root, "dir"), filepath.Join(root, "dir2")))
		told("/dir2")
		_, err := os.Stat(filepath.Join(mnt, "dir", "a"))
		wantErrno(t, err, unix.ENOENT)
		wantContent(t, filepath.Join(mnt, "dir2", "a"), "A")
		must(t, os.WriteFile(filepath.Join(mnt, "dir2", "b"), []byte("B"), 0o644))
		wantContent(t, filepath.Join(root, "dir2", "b"), "B")
	})
	t.Run("outside move out of the root", func(t *testing.T) {
		// A directory the kernel knows, held open through the mount, moved
		// out of the root: the mount must not show it as it is outside.
		must(t, os.Mkdir(filepath.Join(mnt, "leaving"), 0o755))
		fd, err := unix.Open(filepath.Join(mnt, "leaving"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		must(t, err)
		defer unix.Close(fd)
		var st unix.Stat_t
		must(t, unix.Fstat(fd, &st))
		away := filepath.Join(t.TempDir(), "away")
		must(t, os.Rename(filepath.Join(root, "leaving"), away))
		told("/leaving")
		must(t, os.Chmod(away, 0o700))
		if err := unix.Fstat(fd, &st); err == nil && st.Mode&0o777 == 0o700 {
			t.Errorf("fstat through the mount shows the directory as it is outside the root (mode %o)", st.Mode&0o777)
		}
		_, err = os.Stat(filepath.Join(mnt, "leaving"))
		wantErrno(t, err, unix.ENOENT)
	})
	t.Run("outside change under .git", func(t *testing.T) {
		// .git is watched like any directory (a watcher's default
		// excludes hide it, but the journal tells it): the kernel caches
		// there, and its changes invalidate it.
		all := newWatchExcluding(t, d, `[]`)
		told := func(p string) {
			t.Helper()
			if !strict {
				all.until(t, p, "external")
			}
		}
		p := filepath.Join(mnt, ".git", "HEAD")
		must(t, os.Mkdir(filepath.Join(mnt, ".git"), 0o755))
		must(t, os.WriteFile(p, []byte("ref: a"), 0o644))
		wantContent(t, p, "ref: a")
		must(t, os.WriteFile(filepath.Join(root, ".git", "HEAD"), []byte("ref: main"), 0o644))
		told("/.git/HEAD")
		if fi, err := os.Stat(p); err != nil || fi.Size() != 9 {
			t.Errorf("stat through the mount: %v, %v; want size 9", fi, err)
		}
		wantContent(t, p, "ref: main")
		_, err := os.Stat(filepath.Join(mnt, ".git", "index"))
		wantErrno(t, err, unix.ENOENT)
		must(t, os.WriteFile(filepath.Join(root, ".git", "index"), []byte("i"), 0o644))
		told("/.git/index")
		wantContent(t, filepath.Join(mnt, ".git", "index"), "i")
	})
	t.Run("write through the mount then REST read", func(t *testing.T) {
		must(t, os.WriteFile(filepath.Join(mnt, "m"), []byte("via mount"), 0o644))
		if got := restGet(t, d, "/m"); got != "via mount" {
			t.Errorf("got %q over REST, want %q", got, "via mount")
		}
		f, err := os.OpenFile(filepath.Join(mnt, "m"), os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.WriteString("+more")
		must(t, err)
		// Still open: REST sees the bytes already (no write-back cache).
		if got := restGet(t, d, "/m"); got != "via mount+more" {
			t.Errorf("got %q over REST, want %q", got, "via mount+more")
		}
		must(t, f.Close())
	})
}

func TestFUSELifecycle(t *testing.T) {
	requireFUSE(t)
	t.Run("SIGTERM leaves no mount", func(t *testing.T) {
		d, mnt := startMirror(t)
		must(t, os.WriteFile(filepath.Join(mnt, "f"), []byte("x"), 0o644))
		d.Stop(t)
		if mounted(t, mnt) {
			t.Errorf("%s still mounted after SIGTERM:\n%s", mnt, d.Log())
		}
	})
	t.Run("busy unmount is detached lazily and reported", func(t *testing.T) {
		d, mnt := startMirror(t)
		f, err := os.Create(filepath.Join(mnt, "held"))
		must(t, err)
		defer f.Close()
		d.Stop(t)
		if !strings.Contains(d.Log(), "detached lazily") {
			t.Errorf("daemon did not report the busy unmount:\n%s", d.Log())
		}
		if mounted(t, mnt) {
			t.Errorf("%s still mounted after SIGTERM", mnt)
		}
	})
	t.Run("direct mount when asked", func(t *testing.T) {
		if os.Geteuid() != 0 {
			testenv.Skip(t, nil, "a direct mount needs root")
		}
		d, mnt := startMirror(t, "--direct-mount")
		must(t, os.WriteFile(filepath.Join(mnt, "f"), []byte("direct"), 0o644))
		wantContent(t, filepath.Join(d.Root, "f"), "direct")
		d.Stop(t)
		if mounted(t, mnt) {
			t.Errorf("%s still mounted after SIGTERM:\n%s", mnt, d.Log())
		}
	})
	t.Run("a mount per named sandbox", func(t *testing.T) {
		root, other := t.TempDir(), t.TempDir()
		mnt, mnt2 := t.TempDir(), t.TempDir()
		d := startDaemon(t, "--root", root, "--sandbox", "two="+other, "--mount", mnt, "--mount", "two="+mnt2)
		must(t, os.WriteFile(filepath.Join(mnt, "f"), []byte("one"), 0o644))
		must(t, os.WriteFile(filepath.Join(mnt2, "f"), []byte("two"), 0o644))
		wantContent(t, filepath.Join(root, "f"), "one")
		wantContent(t, filepath.Join(other, "f"), "two")
		d.Stop(t)
		for _, m := range []string{mnt, mnt2} {
			if mounted(t, m) {
				t.Errorf("%s still mounted after SIGTERM:\n%s", m, d.Log())
			}
		}
	})
	t.Run("kill -9 then restart over the stale mount", func(t *testing.T) {
		root, mnt := t.TempDir(), t.TempDir()
		d := startDaemon(t, "--root", root, "--mount", mnt)
		must(t, os.MkdirAll(filepath.Join(mnt, "a", "b"), 0o755))
		must(t, os.WriteFile(filepath.Join(mnt, "a", "b", "f"), []byte("intact"), 0o644))
		// Another process holds the file open and has its cwd on the mount
		// while the daemon dies.
		holder := exec.Command("sh", "-c", `exec 3<"$1"; cd "$2" || exit 9; echo ready; read go; cat <&3; echo " rc=$?"; ls >/dev/null 2>&1; echo "ls=$?"`,
			"sh", filepath.Join(mnt, "a", "b", "f"), filepath.Join(mnt, "a"))
		hin, err := holder.StdinPipe()
		must(t, err)
		var hout testenv.Buffer
		holder.Stdout, holder.Stderr = &hout, &hout
		must(t, holder.Start())
		hdone := make(chan error, 1)
		go func() { hdone <- holder.Wait() }()
		if !waitFor(10*time.Second, func() bool { return strings.Contains(hout.String(), "ready") }) {
			t.Fatalf("holder not ready: %s", hout.String())
		}
		must(t, d.cmd.Process.Kill())
		if _, exited := d.Wait(10 * time.Second); !exited {
			t.Fatal("daemon did not die on SIGKILL")
		}
		if !mounted(t, mnt) {
			t.Fatalf("expected a stale mount at %s after SIGKILL", mnt)
		}
		d2 := startDaemon(t, "--root", root, "--mount", mnt)
		if !strings.Contains(d2.Log(), "stale mount") {
			t.Errorf("restart did not report the stale mount:\n%s", d2.Log())
		}
		wantContent(t, filepath.Join(mnt, "a", "b", "f"), "intact")
		restPut(t, d2, "/a/b/g", "after restart")
		wantContent(t, filepath.Join(mnt, "a", "b", "g"), "after restart")
		// The holder's fd and cwd belong to the detached old mount: it gets
		// an answer (the bytes through passthrough, or ENOTCONN), never hangs.
		hin.Write([]byte("go\n"))
		select {
		case <-hdone:
		case <-time.After(20 * time.Second):
			holder.Process.Kill()
			t.Fatalf("the process holding a file on the killed mount hung: %s", hout.String())
		}
		t.Logf("holder after the restart: %q", hout.String())
		if !strings.Contains(hout.String(), "rc=") || !strings.Contains(hout.String(), "ls=") {
			t.Errorf("holder output %q", hout.String())
		}
		d2.Stop(t)
		if mounted(t, mnt) {
			t.Errorf("%s still mounted after SIGTERM", mnt)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErrno(t *testing.T, err error, want unix.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("got error %v, want %v", err, want)
	}
}

// wantContent checks what the host path p holds.
func wantContent(t *testing.T, p, want string) {
	t.Helper()
	wantRead(t, hostFS{}, p, want)
}

func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(p, &st))
	return st
}

func umask() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

func restPut(t *testing.T, d *Daemon, p, body string) {
	t.Helper()
	req, err := http.NewRequest("PUT", d.URL+"/v1/fs/file?path="+url.QueryEscape(p), strings.NewReader(body))
	must(t, err)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT %s: %s", p, resp.Status)
	}
}

func restGet(t *testing.T, d *Daemon, p string) string {
	t.Helper()
	resp, err := http.Get(d.URL + "/v1/fs/file?path=" + url.QueryEscape(p))
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s: %s", p, resp.Status, b)
	}
	return string(b)
}

// TestFUSECallerIdentity: files are created with the caller's uid, gid and
// umask, and the kernel checks each caller against mode and owner
// (allow_other, default_permissions).
func TestFUSECallerIdentity(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "needs root to run a process as another user")
	}
	d, mnt := startMirror(t)
	for p := filepath.Dir(mnt); p != "/" && p != filepath.Clean(os.TempDir()); p = filepath.Dir(p) {
		must(t, os.Chmod(p, 0o755))
	}
	must(t, os.Chmod(d.Root, 0o777))
	must(t, os.WriteFile(filepath.Join(d.Root, "secret"), []byte("root only"), 0o600))
	cmd := exec.Command("sh", "-c", "umask 027; echo hi > mine; mkdir dir; cat secret")
	cmd.Dir = mnt
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Errorf("got %v %q reading a 0600 root file as nobody, want permission denied", err, out)
	}
	for name, mode := range map[string]uint32{"mine": 0o640, "dir": 0o750} {
		st := lstat(t, filepath.Join(d.Root, name))
		if st.Uid != 65534 || st.Gid != 65534 || st.Mode&0o7777 != mode {
			t.Errorf("%s: got owner %d:%d mode %o, want 65534:65534 %o", name, st.Uid, st.Gid, st.Mode&0o7777, mode)
		}
	}
}
