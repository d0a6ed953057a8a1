package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// umask on top; and a write or truncation by anyone without CAP_FSETID
// clears setuid and setgid as on the root, through passthrough or through
// the daemon (setidCases). Each operation runs in a child (this test binary re-run as
// modeHelper) with the umask and the account asked for, on a directory
// passed as its descriptor 3.

func init() {
	posixSuite["exact modes"] = syscallCase(testExactModes)
	posixSuite["setid cleared by a non-owner write"] = syscallCase(testSetidClearedOnWrite)
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
	{"open", "f06755", 0o6755},
	{"open", "f0620", 0o620},
	{"open", "f01777", 0o1777},
	{"open", "f0", 0},
	{"mkdir", "d0777", 0o777},
	{"mkdir", "d01777", 0o1777},
	{"mkdir", "d02755", 0o2755},
	{"mkdir", "d0700", 0o700},
	{"mkdir", "d0", 0},
	{"fifo", "p0666", 0o666},
	{"fifo", "p0777", 0o777},
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
		case "write", "trunc", "ftruncate":
			flags := unix.O_WRONLY | unix.O_CLOEXEC
			if o.op == "trunc" {
				flags |= unix.O_TRUNC
			}
			var fd int
			if fd, err = unix.Openat(dirfd, o.name, flags, 0); err == nil {
				switch o.op {
				case "write":
					_, err = unix.Write(fd, []byte("x"))
				case "ftruncate":
					err = unix.Ftruncate(fd, 1)
				}
				if cerr := unix.Close(fd); err == nil {
					err = cerr
				}
			}
		case "truncate":
			// truncate(2) by name: no open file, so the kernel clears the
			// bits in the size change itself (SETATTR on the mount).
			err = unix.Truncate(fmt.Sprintf("/proc/self/fd/%d/%s", dirfd, o.name), 1)
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

// setidCases are the writes of testSetidClearedOnWrite: each makes a file
// of owner:group with mode, then runs op as uid (whose group is uid too);
// native is the mode the kernel leaves on a plain directory (checked too:
// it is what the case means). The kernel clears setuid, and setgid where
// the group may execute or the writer is not in the file's group, when
// anyone without CAP_FSETID writes or truncates, the owner included; root
// keeps them.
//
// Through the mount the daemon clears them (FUSE_HANDLE_KILLPRIV_V2,
// fusefs/killpriv.go), by the same rule, so the mode must be the native one.
var setidCases = []struct {
	name              string
	owner, group, uid int
	mode, native      uint32
	op                string
}{
	{"nobody writes", 0, 0, 65534, 0o6777, 0o777, "write"},
	{"nobody opens with O_TRUNC", 0, 0, 65534, 0o6777, 0o777, "trunc"},
	{"nobody truncates by name", 0, 0, 65534, 0o6777, 0o777, "truncate"},
	{"nobody ftruncates", 0, 0, 65534, 0o6777, 0o777, "ftruncate"},
	{"nobody writes, setgid without group exec, not in the group", 0, 0, 65534, 0o6766, 0o766, "write"},
	{"nobody writes, setgid without group exec, in the group", 0, 65534, 65534, 0o6766, 0o2766, "write"},
	{"nobody, the owner, writes", 65534, 65534, 65534, 0o6777, 0o777, "write"},
	{"nobody, the owner, truncates by name", 65534, 65534, 65534, 0o6777, 0o777, "truncate"},
	{"root writes (CAP_FSETID)", 0, 0, 0, 0o6777, 0o6777, "write"},
	{"root truncates by name (CAP_FSETID)", 0, 0, 0, 0o6777, 0o6777, "truncate"},
}

// makeSetidFile makes dir/f of owner:group, with mode (chown first: a
// chown clears the bits).
func makeSetidFile(t *testing.T, dir string, owner, group int, mode uint32) {
	t.Helper()
	p := filepath.Join(dir, "f")
	must(t, os.WriteFile(p, nil, 0o666))
	must(t, os.Chown(p, owner, group))
	must(t, unix.Chmod(p, mode))
	if m, _, _ := lstatMode(t, p); m&0o7777 != mode {
		t.Fatalf("%s: made mode %o, want %o", p, m&0o7777, mode)
	}
}

// testSetidClearedOnWrite: writes and truncations (O_TRUNC, truncate(2),
// ftruncate) by nobody clear setuid and setgid on dir as on a plain
// directory; root's keep them. The suite runs on the mount with and
// without passthrough (fuseModes); TestSetidWritePath checks that the
// write really took each path.
func testSetidClearedOnWrite(t *testing.T, dir string) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "setid cleared on write: a write by another account needs root")
	}
	native := t.TempDir()
	// runs[i] are case i's runs, on dir and on native; one child per
	// account runs every case of that account (a child costs about a
	// second under -race).
	runs := make([][2]modeRun, len(setidCases))
	byUID := map[int][]modeRun{}
	for i, c := range setidCases {
		for j, base := range []string{dir, native} {
			d := openDir(t, base, fmt.Sprintf("w%d", i))
			makeSetidFile(t, d, c.owner, c.group, c.mode)
			runs[i][j] = modeRun{d, 0o022, []modeOp{{c.op, "f", 0}}}
			byUID[c.uid] = append(byUID[c.uid], runs[i][j])
		}
	}
	for uid, rs := range byUID {
		runModeOps(t, uid, rs...)
	}
	for i, c := range setidCases {
		var modes [2]uint32
		for j, r := range runs[i] {
			p := filepath.Join(r.dir, "f")
			modes[j], _, _ = lstatMode(t, p)
			switch c.op {
			case "write":
				wantContent(t, p, "x")
			case "truncate", "ftruncate":
				wantContent(t, p, "\x00")
			}
		}
		if modes[0] != modes[1] {
			t.Errorf("%s: got mode %o, want (native) %o", c.name, modes[0], modes[1])
		}
		if modes[1]&0o7777 != c.native {
			t.Errorf("%s: the native directory left mode %o, want %o: the oracle is not what this test expects", c.name, modes[1]&0o7777, c.native)
		}
	}
}

// TestSetidWritePath: nobody's write of a setid file through the mount
// goes where the mode says (straight to the backing file under
// passthrough, a WRITE to the daemon without), and either way clears the
// bits. --fuse-debug's log tells the path: the OPEN reply names a backing
// file, or a WRITE request reaches the daemon.
func TestSetidWritePath(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "setid write path: a write by another account needs root")
	}
	for _, mode := range fuseModes {
		t.Run(mode.name, func(t *testing.T) {
			d, mnt := startMirror(t, append([]string{"--fuse-debug"}, mode.args...)...)
			dir := openDir(t, mnt, "w")
			makeSetidFile(t, dir, 0, 0, 0o6777)
			before := len(d.Log())
			runModeOps(t, 65534, modeRun{dir, 0o022, []modeOp{{"write", "f", 0}}})
			if m, _, _ := lstatMode(t, filepath.Join(dir, "f")); m&0o7777 != 0o777 {
				t.Errorf("mode %o after nobody's write, want 0777", m&0o7777)
			}
			wantContent(t, filepath.Join(dir, "f"), "x")
			log := d.Log()[before:]
			backing := strings.Contains(log, "backing=")
			write := regexp.MustCompile(`rx \d+: WRITE n`).MatchString(log)
			switch {
			case mode.args == nil && !kernelAtLeast(6, 9):
				t.Logf("kernel older than 6.9: passthrough not expected (backing %v, WRITE %v)", backing, write)
			case mode.args == nil && (!backing || write):
				t.Errorf("passthrough: OPEN gave a backing file %v, a WRITE reached the daemon %v; want true, false:\n%s", backing, write, log)
			case mode.args != nil && (backing || !write):
				t.Errorf("%s: OPEN gave a backing file %v, a WRITE reached the daemon %v; want false, true:\n%s", mode.name, backing, write, log)
			}
		})
	}
}

// kernelAtLeast reports whether the running kernel is major.minor or later.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var a, b int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &a, &b); err != nil {
		return false
	}
	return a > major || (a == major && b >= minor)
}
