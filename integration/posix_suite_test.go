package integration

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// posixSuite is one conformance suite, run on three access paths: a plain
// directory, the mount and the daemon's HTTP API (suite_fs_test.go). Each
// case works in a directory of its own (empty) and must pass on every path
// that offers what it needs.
var posixSuite = map[string]posixCase{
	"create": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"setgid directory": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"append": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"truncate": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"rename over existing": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"rename noreplace": portableCase(opWrite|opRead|opMove, func(t *testing.T, fsys suiteFS) {
		must(t, fsys.Write("a", strings.NewReader("A")))
		must(t, fsys.Write("b", strings.NewReader("B")))
		wantErrno(t, fsys.Move("a", "b"), unix.EEXIST)
		wantRead(t, fsys, "b", "B")
		must(t, fsys.Move("a", "c"))
		wantRead(t, fsys, "c", "A")
	}),
	"rename exchange": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"hard links": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"symlinks": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"xattrs": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"chmod": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"utimens": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"readdir while modifying": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"large sequential io": portableCase(opWrite|opRead, func(t *testing.T, fsys suiteFS) {
		const blocks = 32
		h := sha256.New()
		io.Copy(h, &blockReader{blocks: blocks})
		want := h.Sum(nil)
		must(t, fsys.Write("big", &blockReader{blocks: blocks}))
		f, err := fsys.Read("big")
		must(t, err)
		defer f.Close()
		h2 := sha256.New()
		n, err := io.CopyBuffer(h2, f, make([]byte, 1<<20))
		must(t, err)
		if n != blocks<<20 || !bytes.Equal(h2.Sum(nil), want) {
			t.Errorf("got %d bytes (sum differs: %v), want %d", n, !bytes.Equal(h2.Sum(nil), want), blocks<<20)
		}
	}),
	"random io": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"fsync and fallocate": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"locks": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"mkdir rmdir unlink": portableCase(opMkdir|opWrite|opRemove, func(t *testing.T, fsys suiteFS) {
		must(t, fsys.Mkdir("d"))
		wantErrno(t, fsys.Mkdir("d"), unix.EEXIST)
		must(t, fsys.Write("d/f", strings.NewReader("")))
		wantErrno(t, fsys.Remove("d"), unix.ENOTEMPTY)
		must(t, fsys.Remove("d/f"))
		must(t, fsys.Remove("d"))
	}),
	"unlink a directory, rmdir a file": syscallCase(func(t *testing.T, dir string) {
		d := filepath.Join(dir, "d")
		must(t, os.Mkdir(d, 0o750))
		must(t, os.WriteFile(filepath.Join(d, "f"), nil, 0o644))
		wantErrno(t, unix.Rmdir(d), unix.ENOTEMPTY)
		wantErrno(t, unix.Unlink(d), unix.EISDIR)
		wantErrno(t, unix.Rmdir(filepath.Join(d, "f")), unix.ENOTDIR)
		must(t, os.Remove(filepath.Join(d, "f")))
		must(t, unix.Rmdir(d))
	}),
	"unlink while open": syscallCase(func(t *testing.T, dir string) {
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
	}),
	"long paths": portableCase(opMkdir|opWrite|opRead|opStat, func(t *testing.T, fsys suiteFS) {
		name := strings.Repeat("n", 200)
		p := "."
		for range 15 { // ~3000 bytes below the case's directory
			p = path.Join(p, name)
			must(t, fsys.Mkdir(p))
		}
		f := path.Join(p, "f")
		must(t, fsys.Write(f, strings.NewReader("deep")))
		wantRead(t, fsys, f, "deep")
		_, err := fsys.Stat(strings.Repeat("x", 256))
		wantErrno(t, err, unix.ENAMETOOLONG)
	}),
	"list and stat": portableCase(opWrite|opMkdir|opList|opStat|opRemove, func(t *testing.T, fsys suiteFS) {
		var want []string
		for i := range 50 {
			name := fmt.Sprintf("f%02d", i)
			must(t, fsys.Write(name, strings.NewReader(strings.Repeat("x", i))))
			want = append(want, name)
		}
		must(t, fsys.Mkdir("sub"))
		want = append(want, "sub")
		wantList(t, fsys, ".", want)
		st, err := fsys.Stat("f07")
		must(t, err)
		if st.Size != 7 || st.Dir || st.Symlink {
			t.Errorf("f07: got %+v, want a file of 7 bytes", st)
		}
		st, err = fsys.Stat("sub")
		must(t, err)
		if !st.Dir {
			t.Errorf("sub: got %+v, want a directory", st)
		}
		wantList(t, fsys, "sub", nil)
		_, err = fsys.Stat("none")
		wantErrno(t, err, unix.ENOENT)
		_, err = fsys.List("none")
		wantErrno(t, err, unix.ENOENT)
		for _, name := range want[:10] {
			must(t, fsys.Remove(name))
		}
		wantList(t, fsys, ".", want[10:])
	}),
	"mknod fifo": syscallCase(func(t *testing.T, dir string) {
		p := filepath.Join(dir, "fifo")
		must(t, unix.Mkfifo(p, 0o600))
		if st := lstat(t, p); st.Mode&unix.S_IFMT != unix.S_IFIFO {
			t.Errorf("got mode %o, want a FIFO", st.Mode)
		}
	}),
}
