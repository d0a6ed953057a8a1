package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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
	d := startDaemon(t, append([]string{"--mount", mnt}, args...)...)
	if !mounted(t, mnt) {
		t.Fatalf("daemon ready but %s is not mounted:\n%s", mnt, d.Log())
	}
	return d, mnt
}

// posixSuite is one conformance suite, run on a plain directory and on the
// mount: each case works in dir (empty, its own) and must pass on both.
var posixSuite = map[string]func(t *testing.T, dir string){
	"create": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "f")
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
		must(t, err)
		_, err = f.WriteString("hello")
		must(t, err)
		must(t, f.Close())
		_, err = os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
		wantErrno(t, err, unix.EEXIST)
		fi, err := os.Stat(p)
		must(t, err)
		if fi.Size() != 5 || fi.Mode().Perm() != 0o640&^umask() {
			t.Errorf("got size %d mode %v, want 5 and %v", fi.Size(), fi.Mode().Perm(), fs.FileMode(0o640&^umask()))
		}
		wantContent(t, p, "hello")
	},
	"setgid directory": func(t *testing.T, dir string) {
		if os.Geteuid() != 0 {
			testenv.Skip(t, nil, "setgid directory: giving a directory to another group needs root")
		}
		d := filepath.Join(dir, "shared")
		must(t, os.Mkdir(d, 0o755))
		must(t, os.Chown(d, 0, 65534))
		must(t, os.Chmod(d, 0o775|fs.ModeSetgid))
		must(t, os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644))
		must(t, os.Mkdir(filepath.Join(d, "sub"), 0o755))
		must(t, os.Symlink("f", filepath.Join(d, "l")))
		must(t, os.WriteFile(filepath.Join(dir, "plain"), []byte("x"), 0o644))
		for _, c := range []struct {
			path       string
			gid        uint32
			wantSetgid bool
		}{
			{"shared/f", 65534, false},             // the directory's group, not the caller's
			{"shared/sub", 65534, true},            // and a directory inherits setgid
			{"shared/l", 65534, false},             // symlinks too
			{"plain", uint32(os.Getegid()), false}, // elsewhere the caller's group
		} {
			var st unix.Stat_t
			must(t, unix.Lstat(filepath.Join(dir, c.path), &st))
			if st.Gid != c.gid || (st.Mode&unix.S_ISGID != 0) != c.wantSetgid {
				t.Errorf("%s: gid %d, mode %o; want gid %d, setgid %v", c.path, st.Gid, st.Mode, c.gid, c.wantSetgid)
			}
		}
	},
	"append": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "f")
		must(t, os.WriteFile(p, []byte("ab"), 0o644))
		for _, s := range []string{"cd", "ef"} {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteString(s)
			must(t, err)
			must(t, f.Close())
		}
		wantContent(t, p, "abcdef")
	},
	"truncate": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "f")
		must(t, os.WriteFile(p, []byte("0123456789"), 0o644))
		must(t, os.Truncate(p, 3))
		wantContent(t, p, "012")
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		must(t, err)
		must(t, f.Truncate(5))
		must(t, f.Close())
		wantContent(t, p, "012\x00\x00")
		f, err = os.OpenFile(p, os.O_RDWR|os.O_TRUNC, 0)
		must(t, err)
		must(t, f.Close())
		wantContent(t, p, "")
	},
	"rename over existing": func(t *testing.T, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		must(t, os.WriteFile(a, []byte("A"), 0o644))
		must(t, os.WriteFile(b, []byte("B"), 0o644))
		must(t, os.Rename(a, b))
		wantContent(t, b, "A")
		_, err := os.Lstat(a)
		wantErrno(t, err, unix.ENOENT)
		must(t, os.Mkdir(filepath.Join(dir, "d1"), 0o755))
		must(t, os.Mkdir(filepath.Join(dir, "d2"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "d2", "x"), nil, 0o644))
		wantErrno(t, unix.Rename(filepath.Join(dir, "d1"), filepath.Join(dir, "d2")), unix.ENOTEMPTY)
	},
	"rename noreplace": func(t *testing.T, dir string) {
		a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
		must(t, os.WriteFile(a, []byte("A"), 0o644))
		must(t, os.WriteFile(b, []byte("B"), 0o644))
		wantErrno(t, unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE), unix.EEXIST)
		wantContent(t, b, "B")
		must(t, unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, c, unix.RENAME_NOREPLACE))
		wantContent(t, c, "A")
	},
	"rename exchange": func(t *testing.T, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		must(t, os.WriteFile(a, []byte("A"), 0o644))
		must(t, os.Mkdir(b, 0o755))
		must(t, unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE))
		wantContent(t, b, "A")
		fi, err := os.Lstat(a)
		must(t, err)
		if !fi.IsDir() {
			t.Errorf("got %v at a after exchange, want a directory", fi.Mode())
		}
		wantErrno(t, unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, filepath.Join(dir, "none"), unix.RENAME_EXCHANGE), unix.ENOENT)
	},
	"hard links": func(t *testing.T, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		must(t, os.WriteFile(a, []byte("one"), 0o644))
		must(t, os.Link(a, b))
		must(t, os.WriteFile(b, []byte("two"), 0o644))
		wantContent(t, a, "two")
		sa, sb := lstat(t, a), lstat(t, b)
		if sa.Ino != sb.Ino || sa.Nlink != 2 {
			t.Errorf("got ino %d/%d nlink %d, want equal inodes and nlink 2", sa.Ino, sb.Ino, sa.Nlink)
		}
		must(t, os.Remove(a))
		if st := lstat(t, b); st.Nlink != 1 {
			t.Errorf("got nlink %d after unlink, want 1", st.Nlink)
		}
		wantErrno(t, os.Link(filepath.Join(dir, "none"), filepath.Join(dir, "c")), unix.ENOENT)
	},
	"symlinks": func(t *testing.T, dir string) {
		must(t, os.WriteFile(filepath.Join(dir, "target"), []byte("T"), 0o644))
		l := filepath.Join(dir, "l")
		must(t, os.Symlink("target", l))
		got, err := os.Readlink(l)
		must(t, err)
		if got != "target" {
			t.Errorf("got readlink %q, want target", got)
		}
		wantContent(t, l, "T")
		if st := lstat(t, l); st.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("got mode %o, want a symlink", st.Mode)
		}
		must(t, os.Symlink("missing", filepath.Join(dir, "dangling")))
		_, err = os.Stat(filepath.Join(dir, "dangling"))
		wantErrno(t, err, unix.ENOENT)
		must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
		must(t, os.Symlink("../target", filepath.Join(dir, "sub", "up")))
		wantContent(t, filepath.Join(dir, "sub", "up"), "T")
	},
	"xattrs": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "f")
		must(t, os.WriteFile(p, nil, 0o644))
		if err := unix.Setxattr(p, "user.sandfs", []byte("v1"), 0); err != nil {
			if errors.Is(err, unix.ENOTSUP) {
				testenv.Skip(t, nil, "user xattrs not supported by the backing filesystem")
			}
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, err := unix.Getxattr(p, "user.sandfs", buf)
		must(t, err)
		if string(buf[:n]) != "v1" {
			t.Errorf("got %q, want v1", buf[:n])
		}
		wantErrno(t, unix.Setxattr(p, "user.sandfs", []byte("v2"), unix.XATTR_CREATE), unix.EEXIST)
		n, err = unix.Listxattr(p, buf)
		must(t, err)
		if !bytes.Contains(buf[:n], []byte("user.sandfs\x00")) {
			t.Errorf("got list %q, want user.sandfs in it", buf[:n])
		}
		must(t, unix.Removexattr(p, "user.sandfs"))
		_, err = unix.Getxattr(p, "user.sandfs", buf)
		wantErrno(t, err, unix.ENODATA)
	},
	"chmod": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "f")
		must(t, os.WriteFile(p, nil, 0o644))
		for _, m := range []uint32{0o750, 0o4755, 0o2711, 0o600} {
			must(t, unix.Chmod(p, m))
			if st := lstat(t, p); st.Mode&0o7777 != m {
				t.Errorf("got mode %o, want %o", st.Mode&0o7777, m)
			}
		}
		f, err := os.Open(p)
		must(t, err)
		must(t, f.Chmod(0o640))
		f.Close()
		if st := lstat(t, p); st.Mode&0o7777 != 0o640 {
			t.Errorf("got mode %o after fchmod, want 640", st.Mode&0o7777)
		}
	},
	"utimens": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "f")
		must(t, os.WriteFile(p, nil, 0o644))
		at := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
		mt := time.Date(2011, 12, 13, 14, 15, 16, 17000, time.UTC)
		must(t, os.Chtimes(p, at, mt))
		st := lstat(t, p)
		if got := time.Unix(st.Mtim.Unix()); !got.Equal(mt) {
			t.Errorf("got mtime %v, want %v", got, mt)
		}
		if got := time.Unix(st.Atim.Unix()); !got.Equal(at) {
			t.Errorf("got atime %v, want %v", got, at)
		}
		must(t, os.Symlink("f", filepath.Join(dir, "l")))
		ts := []unix.Timespec{unix.NsecToTimespec(at.UnixNano()), unix.NsecToTimespec(at.UnixNano())}
		must(t, unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(dir, "l"), ts, unix.AT_SYMLINK_NOFOLLOW))
		if lst := lstat(t, filepath.Join(dir, "l")); !time.Unix(lst.Mtim.Unix()).Equal(at) {
			t.Errorf("got symlink mtime %v, want %v", time.Unix(lst.Mtim.Unix()), at)
		}
	},
	"readdir while modifying": func(t *testing.T, dir string) {
		const n = 200
		for i := range n {
			must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), nil, 0o644))
		}
		d, err := os.Open(dir)
		must(t, err)
		defer d.Close()
		seen := map[string]int{}
		first, err := d.Readdirnames(50)
		must(t, err)
		for _, nm := range first {
			seen[nm]++
		}
		// Remove some not yet seen, add new ones, then read the rest.
		removed := map[string]bool{}
		for i := n - 1; i >= n-20; i-- {
			nm := fmt.Sprintf("f%03d", i)
			if seen[nm] == 0 {
				must(t, os.Remove(filepath.Join(dir, nm)))
				removed[nm] = true
			}
		}
		for i := range 20 {
			must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("new%02d", i)), nil, 0o644))
		}
		rest, err := d.Readdirnames(-1)
		must(t, err)
		for _, nm := range rest {
			seen[nm]++
		}
		for i := range n {
			nm := fmt.Sprintf("f%03d", i)
			if removed[nm] {
				continue
			}
			if seen[nm] != 1 {
				t.Errorf("got %s %d times, want once", nm, seen[nm])
			}
		}
	},
	"large sequential io": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "big")
		f, err := os.Create(p)
		must(t, err)
		block := make([]byte, 1<<20)
		h := sha256.New()
		for i := range 32 {
			for j := range block {
				block[j] = byte(i*7 + j*13)
			}
			h.Write(block)
			_, err := f.Write(block)
			must(t, err)
		}
		must(t, f.Close())
		want := h.Sum(nil)
		f, err = os.Open(p)
		must(t, err)
		defer f.Close()
		h2 := sha256.New()
		n, err := io.CopyBuffer(h2, f, make([]byte, 1<<20))
		must(t, err)
		if n != 32<<20 || !bytes.Equal(h2.Sum(nil), want) {
			t.Errorf("got %d bytes (sum differs: %v), want %d", n, !bytes.Equal(h2.Sum(nil), want), 32<<20)
		}
	},
	"random io": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "r")
		const size = 4 << 20
		shadow := make([]byte, size)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
		must(t, err)
		defer f.Close()
		must(t, f.Truncate(size))
		rng := rand.New(rand.NewPCG(1, 2))
		for range 200 {
			off := rng.IntN(size - 1)
			n := 1 + rng.IntN(min(65536, size-off))
			buf := make([]byte, n)
			for i := range buf {
				buf[i] = byte(rng.Uint32())
			}
			_, err := f.WriteAt(buf, int64(off))
			must(t, err)
			copy(shadow[off:], buf)
			roff := rng.IntN(size - 1)
			rn := 1 + rng.IntN(min(65536, size-roff))
			got := make([]byte, rn)
			_, err = f.ReadAt(got, int64(roff))
			must(t, err)
			if !bytes.Equal(got, shadow[roff:roff+rn]) {
				t.Fatalf("read at %d+%d differs from what was written", roff, rn)
			}
		}
		all, err := os.ReadFile(p)
		must(t, err)
		if !bytes.Equal(all, shadow) {
			t.Error("whole file differs from what was written")
		}
	},
	"fsync and fallocate": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "f")
		f, err := os.Create(p)
		must(t, err)
		defer f.Close()
		_, err = f.WriteString("data")
		must(t, err)
		must(t, f.Sync())
		must(t, unix.Fdatasync(int(f.Fd())))
		must(t, unix.Fallocate(int(f.Fd()), 0, 0, 1<<20))
		if st := lstat(t, p); st.Size != 1<<20 {
			t.Errorf("got size %d after fallocate, want %d", st.Size, 1<<20)
		}
		d, err := os.Open(dir)
		must(t, err)
		must(t, d.Sync())
		d.Close()
	},
	"locks": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "lock")
		must(t, os.WriteFile(p, nil, 0o644))
		f1, err := os.OpenFile(p, os.O_RDWR, 0)
		must(t, err)
		defer f1.Close()
		f2, err := os.OpenFile(p, os.O_RDWR, 0)
		must(t, err)
		defer f2.Close()
		must(t, unix.Flock(int(f1.Fd()), unix.LOCK_EX))
		wantErrno(t, unix.Flock(int(f2.Fd()), unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK)
		must(t, unix.Flock(int(f1.Fd()), unix.LOCK_UN))
		must(t, unix.Flock(int(f2.Fd()), unix.LOCK_EX|unix.LOCK_NB))
		must(t, unix.Flock(int(f2.Fd()), unix.LOCK_UN))
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 10}
		must(t, unix.FcntlFlock(f1.Fd(), unix.F_OFD_SETLK, &lk))
		lk2 := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 5, Len: 10}
		wantErrno(t, unix.FcntlFlock(f2.Fd(), unix.F_OFD_SETLK, &lk2), unix.EAGAIN)
		probe := unix.Flock_t{Type: unix.F_WRLCK, Start: 0, Len: 1}
		must(t, unix.FcntlFlock(f2.Fd(), unix.F_OFD_GETLK, &probe))
		if probe.Type != unix.F_WRLCK {
			t.Errorf("got GETLK type %d, want the conflicting write lock", probe.Type)
		}
		lk2.Start = 10
		must(t, unix.FcntlFlock(f2.Fd(), unix.F_OFD_SETLK, &lk2))
	},
	"mkdir rmdir unlink": func(t *testing.T, dir string) {
		d := filepath.Join(dir, "d")
		must(t, os.Mkdir(d, 0o750))
		wantErrno(t, os.Mkdir(d, 0o750), unix.EEXIST)
		must(t, os.WriteFile(filepath.Join(d, "f"), nil, 0o644))
		wantErrno(t, unix.Rmdir(d), unix.ENOTEMPTY)
		wantErrno(t, unix.Unlink(d), unix.EISDIR)
		wantErrno(t, unix.Rmdir(filepath.Join(d, "f")), unix.ENOTDIR)
		must(t, os.Remove(filepath.Join(d, "f")))
		must(t, unix.Rmdir(d))
	},
	"unlink while open": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "f")
		must(t, os.WriteFile(p, []byte("still here"), 0o644))
		f, err := os.Open(p)
		must(t, err)
		defer f.Close()
		must(t, os.Remove(p))
		b, err := io.ReadAll(f)
		must(t, err)
		if string(b) != "still here" {
			t.Errorf("got %q, want still here", b)
		}
	},
	"long paths": func(t *testing.T, dir string) {
		name := strings.Repeat("n", 200)
		p := dir
		for range 15 { // ~3000 bytes below dir
			p = filepath.Join(p, name)
		}
		must(t, os.MkdirAll(p, 0o755))
		f := filepath.Join(p, "f")
		must(t, os.WriteFile(f, []byte("deep"), 0o644))
		wantContent(t, f, "deep")
		_, err := os.Stat(filepath.Join(dir, strings.Repeat("x", 256)))
		wantErrno(t, err, unix.ENAMETOOLONG)
	},
	"mknod fifo": func(t *testing.T, dir string) {
		p := filepath.Join(dir, "fifo")
		must(t, unix.Mkfifo(p, 0o600))
		if st := lstat(t, p); st.Mode&unix.S_IFMT != unix.S_IFIFO {
			t.Errorf("got mode %o, want a FIFO", st.Mode)
		}
	},
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

func TestPOSIXConformance(t *testing.T) {
	run := func(t *testing.T, base string) {
		for name, tc := range posixSuite {
			t.Run(name, func(t *testing.T) {
				dir := filepath.Join(base, strings.ReplaceAll(name, " ", "_"))
				must(t, os.Mkdir(dir, 0o755))
				tc(t, dir)
			})
		}
	}
	t.Run("tempdir", func(t *testing.T) { run(t, t.TempDir()) })
	for _, mode := range fuseModes {
		t.Run("mount/"+mode.name, func(t *testing.T) {
			_, mnt := startMirror(t, mode.args...)
			run(t, mnt)
		})
	}
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
		var hout syncBuffer
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

func wantContent(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Errorf("read %s: %v", p, err)
		return
	}
	if string(b) != want {
		t.Errorf("got %q in %s, want %q", b, p, want)
	}
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

// logEvent is one "msg=event" line of a daemon run with --log-events.
type logEvent map[string]string

var logKV = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S*)`)

func parseEvents(log string) []logEvent {
	var out []logEvent
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, " msg=event ") {
			continue
		}
		e := logEvent{}
		for _, m := range logKV.FindAllStringSubmatch(l, -1) {
			v := m[2]
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			e[m[1]] = v
		}
		out = append(out, e)
	}
	return out
}

// waitEvent polls the daemon's event log until one matches.
func waitEvent(t *testing.T, d *Daemon, match func(logEvent) bool) []logEvent {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		evs := parseEvents(d.Log())
		for _, e := range evs {
			if match(e) {
				return evs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("event not seen in 15s; log:\n%s", d.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFUSEEvents(t *testing.T) {
	for _, mode := range fuseModes {
		t.Run(mode.name, func(t *testing.T) { testEvents(t, mode.args) })
	}
}

// testEvents: a write through the mount is create + write with origin fuse,
// pid and uid, never also external; a rename is one rename with old_path.
func testEvents(t *testing.T, args []string) {
	d, mnt := startMirror(t, append([]string{"--log-events"}, args...)...)
	watch := newWatch(t, d)
	must(t, os.WriteFile(filepath.Join(mnt, "new"), []byte("data"), 0o644))
	must(t, os.Rename(filepath.Join(mnt, "new"), filepath.Join(mnt, "renamed")))
	must(t, os.Mkdir(filepath.Join(mnt, "dir"), 0o755))
	must(t, os.Remove(filepath.Join(mnt, "renamed")))
	// inotify keeps order: once an outside write made after all that is
	// told, every echo of the changes above has been read.
	must(t, os.WriteFile(filepath.Join(d.Root, "sentinel"), []byte("s"), 0o644))
	evs := waitEvent(t, d, func(e logEvent) bool { return e["path"] == "/sentinel" && e["origin"] == "external" })

	var got []string
	for _, e := range evs {
		if e["path"] == "/sentinel" {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s<-%s %s", e["type"], e["path"], e["old_path"], e["origin"]))
		if e["origin"] == "fuse" {
			if pid, _ := strconv.Atoi(e["pid"]); pid <= 0 {
				t.Errorf("fuse event %v has no pid", e)
			}
			if e["uid"] != strconv.Itoa(os.Getuid()) {
				t.Errorf("fuse event %v: got uid %s, want %d", e, e["uid"], os.Getuid())
			}
		}
	}
	want := []string{
		"create /new<- fuse",
		"write /new<- fuse",
		"rename /renamed<-/new fuse",
		"create /dir<- fuse",
		"remove /renamed<- fuse",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got events in the log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The same through the AIO watch route.
	got = nil
	for _, e := range watch.until(t, "/sentinel", "external") {
		if e.Path == "/sentinel" {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s<-%s %s", e.Type, e.Path, e.OldPath, e.Origin))
		if e.Origin == "fuse" && (e.Pid == nil || *e.Pid == 0 || e.Uid == nil) {
			t.Errorf("fuse event %+v over the watch route has no pid or uid", e)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got events over /v2/watch\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// watchEvent is an event as the AIO watch route tells it.
type watchEvent struct {
	Type    string  `json:"type"`
	Path    string  `json:"path"`
	OldPath string  `json:"old_path"`
	Origin  string  `json:"origin"`
	Pid     *uint32 `json:"pid"`
	Uid     *uint32 `json:"uid"`
}

// aioWatch is a watcher on "/" made through POST /v2/watch.
type aioWatch struct {
	d      *Daemon
	id     string
	cursor uint64
}

func newWatch(t *testing.T, d *Daemon) *aioWatch {
	t.Helper()
	var out struct {
		Data struct {
			WatcherID     string `json:"watcher_id"`
			InitialCursor uint64 `json:"initial_cursor"`
		} `json:"data"`
	}
	resp, err := http.Post(d.URL+"/v2/watch", "application/json", strings.NewReader(`{"path":"/","recursive":true,"debounce":50}`))
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil || out.Data.WatcherID == "" {
		t.Fatalf("POST /v2/watch: %s: %s", resp.Status, b)
	}
	return &aioWatch{d: d, id: out.Data.WatcherID, cursor: out.Data.InitialCursor}
}

// until polls the watcher until an event on path with origin arrives, and
// returns every event up to then.
func (w *aioWatch) until(t *testing.T, path, origin string) []watchEvent {
	t.Helper()
	var all []watchEvent
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		var out struct {
			Data struct {
				Events []watchEvent `json:"events"`
				Cursor uint64       `json:"cursor"`
			} `json:"data"`
		}
		resp, err := http.Get(fmt.Sprintf("%s/v2/watch/%s/poll?cursor=%d&timeout=2", w.d.URL, w.id, w.cursor))
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
			t.Fatalf("poll: %s: %s", resp.Status, b)
		}
		w.cursor = out.Data.Cursor
		all = append(all, out.Data.Events...)
		for _, e := range out.Data.Events {
			if e.Path == path && e.Origin == origin {
				return all
			}
		}
	}
	t.Fatalf("no %s event on %s over the watch route in 15s; got %+v", origin, path, all)
	return nil
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
