package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// Modes through the mount, against the same operations on a plain
// directory of the backing filesystem (the oracle): a process on the mount
// gets the mode its own umask gives, as on the root, never the daemon's
// umask on top; and a non-owner's write clears setuid and setgid as on the
// root, through passthrough or through the daemon. Each operation runs in a
// child (this test binary re-run as modeHelper) with the umask and the
// account asked for, on a directory passed as its descriptor 3.

func init() {
	posixSuite["exact modes"] = testExactModes
	posixSuite["setid cleared by a non-owner write"] = testSetidClearedOnWrite
}

// modeOp is one operation of the helper: op name mode (mode in octal).
type modeOp struct {
	op, name string
	mode     uint32
}

func (o modeOp) String() string { return fmt.Sprintf("%s %s %o", o.op, o.name, o.mode) }

var exactModeOps = []modeOp{
	{"open", "f0777", 0o777},
	{"open", "f04777", 0o4777},
	{"open", "f0620", 0o620},
	{"open", "f01777", 0o1777},
	{"mkdir", "d0777", 0o777},
	{"mkdir", "d01777", 0o1777},
	{"mkdir", "d02755", 0o2755},
	{"fifo", "p0666", 0o666},
}

// account is who the helper runs as.
type account struct {
	name string
	uid  int
}

func accounts(t *testing.T) []account {
	as := []account{{"self", os.Geteuid()}}
	if os.Geteuid() == 0 {
		as = append(as, account{"nobody", 65534})
	} else {
		t.Log("not root: the operations are not tried as nobody")
	}
	return as
}

// modeRun is ops to run in dir under umask.
type modeRun struct {
	dir   string
	umask uint32
	ops   []modeOp
}

// runModeOps runs each run's ops in its dir, as uid with its umask, all in
// one child process (a child costs about a second under -race here).
func runModeOps(t *testing.T, uid int, runs ...modeRun) {
	t.Helper()
	var spec []string
	var files []*os.File
	for i, r := range runs {
		d, err := os.Open(r.dir)
		must(t, err)
		defer d.Close()
		files = append(files, d)
		for _, o := range r.ops {
			spec = append(spec, fmt.Sprintf("%d %o %v", 3+i, r.umask, o))
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestModeHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SANDFS_MODE_HELPER="+strings.Join(spec, ";"), "SANDFS_MODE_UID="+strconv.Itoa(uid))
	cmd.Dir = "/"
	cmd.ExtraFiles = files
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper as uid %d, %v: %v\n%s", uid, spec, err, out)
	}
}

// TestModeHelper is not a test: it is the child runModeOps starts.
func TestModeHelper(t *testing.T) {
	spec := os.Getenv("SANDFS_MODE_HELPER")
	if spec == "" {
		return
	}
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", a...)
		os.Exit(1)
	}
	uid, err := strconv.Atoi(os.Getenv("SANDFS_MODE_UID"))
	if err != nil {
		fail("SANDFS_MODE_UID: %v", err)
	}
	if uid != os.Geteuid() {
		// Drop to the account before acting: the directory is reached by
		// its descriptor, so the parents' modes do not matter.
		if err := syscall.Setgroups(nil); err != nil {
			fail("setgroups: %v", err)
		}
		if err := syscall.Setgid(uid); err != nil {
			fail("setgid: %v", err)
		}
		if err := syscall.Setuid(uid); err != nil {
			fail("setuid: %v", err)
		}
	}
	for _, s := range strings.Split(spec, ";") {
		var o modeOp
		var dirfd int
		var um uint32
		if _, err := fmt.Sscanf(s, "%d %o %s %s %o", &dirfd, &um, &o.op, &o.name, &o.mode); err != nil {
			fail("%q: %v", s, err)
		}
		syscall.Umask(int(um))
		var err error
		switch o.op {
		case "open":
			var fd int
			if fd, err = unix.Openat(dirfd, o.name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, o.mode); err == nil {
				unix.Close(fd)
			}
		case "mkdir":
			err = unix.Mkdirat(dirfd, o.name, o.mode)
		case "fifo":
			err = unix.Mknodat(dirfd, o.name, unix.S_IFIFO|o.mode, 0)
		case "write", "trunc":
			flags := unix.O_WRONLY | unix.O_CLOEXEC
			if o.op == "trunc" {
				flags |= unix.O_TRUNC
			}
			var fd int
			if fd, err = unix.Openat(dirfd, o.name, flags, 0); err == nil {
				if o.op == "write" {
					_, err = unix.Write(fd, []byte("x"))
				}
				if cerr := unix.Close(fd); err == nil {
					err = cerr
				}
			}
		default:
			fail("unknown op %q", o.op)
		}
		if err != nil {
			fail("%s as uid %d: %v", s, os.Geteuid(), err)
		}
	}
	os.Exit(0)
}

// lstatMode is the mode, uid and gid of p.
func lstatMode(t *testing.T, p string) (uint32, uint32, uint32) {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(p, &st))
	return st.Mode, st.Uid, st.Gid
}

// openDir makes name in dir, open to everyone (0777).
func openDir(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	must(t, os.Mkdir(p, 0o777))
	must(t, os.Chmod(p, 0o777))
	return p
}

// testExactModes: open(O_CREAT), mkdir and mknod under umask 0, 022 and 077,
// as root and as nobody, give on dir the modes and owners they give on a
// plain directory.
func testExactModes(t *testing.T, dir string) {
	native := t.TempDir()
	umasks := []uint32{0, 0o022, 0o077}
	for _, a := range accounts(t) {
		var runs []modeRun
		for _, um := range umasks {
			sub := fmt.Sprintf("%s-%03o", a.name, um)
			runs = append(runs, modeRun{openDir(t, dir, sub), um, exactModeOps}, modeRun{openDir(t, native, sub), um, exactModeOps})
		}
		runModeOps(t, a.uid, runs...)
		for i := 0; i < len(runs); i += 2 {
			got, want := runs[i], runs[i+1]
			for _, o := range exactModeOps {
				gm, gu, gg := lstatMode(t, filepath.Join(got.dir, o.name))
				wm, wu, wg := lstatMode(t, filepath.Join(want.dir, o.name))
				if gm != wm || gu != wu || gg != wg {
					t.Errorf("%s, umask %03o, %v: got mode %o owner %d:%d, want (native) %o %d:%d", a.name, got.umask, o, gm, gu, gg, wm, wu, wg)
				}
			}
		}
	}
}

// testSetidClearedOnWrite: a write, or an open with O_TRUNC, by nobody (not
// the owner, with write permission) clears setuid and setgid of a 06777
// file of root's, and root's own write (CAP_FSETID) keeps them, as on a plain
// directory.
func testSetidClearedOnWrite(t *testing.T, dir string) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "setid cleared on write: a write by another account needs root")
	}
	native := t.TempDir()
	cases := []struct {
		name string
		uid  int
		op   string
	}{
		{"nobody writes", 65534, "write"},
		{"nobody truncates", 65534, "trunc"},
		{"root (the owner) writes", 0, "write"},
	}
	for i, c := range cases {
		var runs []modeRun
		for _, base := range []string{dir, native} {
			d := openDir(t, base, fmt.Sprintf("w%d", i))
			p := filepath.Join(d, "f")
			must(t, os.WriteFile(p, nil, 0o666))
			must(t, os.Chmod(p, 0o777|os.ModeSetuid|os.ModeSetgid))
			runs = append(runs, modeRun{d, 0o022, []modeOp{{c.op, "f", 0}}})
		}
		runModeOps(t, c.uid, runs...)
		var modes [2]uint32
		for j, r := range runs {
			p := filepath.Join(r.dir, "f")
			modes[j], _, _ = lstatMode(t, p)
			if c.op == "write" {
				wantContent(t, p, "x")
			}
		}
		if modes[0] != modes[1] {
			t.Errorf("%s: got mode %o, want (native) %o", c.name, modes[0], modes[1])
		}
		if c.uid != 0 && modes[1]&(unix.S_ISUID|unix.S_ISGID) != 0 {
			t.Errorf("%s: the native directory kept set-id bits (%o): the oracle is not what this test expects", c.name, modes[1])
		}
	}
}
