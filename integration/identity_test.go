package integration

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/statedir"
	"sandfs/internal/testenv"
)

// TestRootIdentityTravels: a root copied with cp -a (as root, xattrs kept)
// to another filesystem, with its state directory, is still the sandbox:
// the changes made to the copy while no daemon served it are told at the
// next start, exactly those, though every device and inode is new. A
// directory without the sandbox's mark, or with a user.* xattr of the
// mark's name and value set by an unprivileged process, is another root:
// it keeps a state of its own and is not compared with the sandbox's.
func TestRootIdentityTravels(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "the root's mark is a trusted.* xattr and the copy a tmpfs: the test must run as root")
	}
	state, root := t.TempDir(), t.TempDir()
	args := func(root, state string) []string { return []string{"--root", root, "--state", state, "--no-auth"} }
	d := startDaemon(t, args(root, state)...)
	for p, body := range map[string]string{"/keep.txt": "same", "/edit.txt": "old", "/gone.txt": "x", "/dir/f": "1", "/mode.sh": "#!"} {
		req, _ := http.NewRequest("PUT", d.URL+"/v1/sandboxes/default/fs/write?path="+p+"&mkdirParents=true", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("PUT %s: %s", p, resp.Status)
		}
	}
	var seq uint64
	if !waitFor(60*time.Second, func() bool { seq = getChanges(t, d, "").UntilSeq; return seq >= 5 }) {
		t.Fatalf("the writes are not in the journal (seq %d):\n%s", seq, d.Log())
	}
	d.Stop(t)
	if _, err := unix.Lgetxattr(root, "trusted.sandfs.id", make([]byte, 128)); err != nil {
		testenv.Skip(t, nil, "the root was not marked (trusted xattrs: %v):\n%s", err, d.Log())
	}

	// The move: the root to a fresh tmpfs, the state beside it.
	moved := filepath.Join(testenv.Tmpfs(t, "size=64m"), "root")
	copyState := filepath.Join(t.TempDir(), "state")
	for _, c := range [][2]string{{root, moved}, {state, copyState}} {
		if out, err := exec.Command("cp", "-a", c[0], c[1]).CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s %s: %v\n%s", c[0], c[1], err, out)
		}
	}
	var a, b unix.Stat_t
	must(t, unix.Stat(root, &a))
	must(t, unix.Stat(moved, &b))
	if a.Dev == b.Dev {
		t.Fatalf("the copy is on the root's filesystem (device %d)", a.Dev)
	}
	id, err := os.ReadFile(filepath.Join(statedir.Sandbox(copyState, "default"), statedir.IdentityFile))
	must(t, err)
	ident := strings.TrimSpace(string(id))

	// While no daemon serves it.
	must(t, os.WriteFile(filepath.Join(moved, "edit.txt"), []byte("new and longer"), 0o644))
	must(t, os.WriteFile(filepath.Join(moved, "new.txt"), []byte("made while down"), 0o644))
	must(t, os.Remove(filepath.Join(moved, "gone.txt")))
	must(t, os.Chmod(filepath.Join(moved, "mode.sh"), 0o755))

	d = startDaemon(t, args(moved, copyState)...)
	want := "added /new.txt\ndeleted /gone.txt\nmodified /edit.txt\nmodified /mode.sh"
	got := ""
	waitFor(60*time.Second, func() bool {
		var rows []string
		for _, c := range getChanges(t, d, fmt.Sprintf("since=%d", seq)).Changes {
			rows = append(rows, c.Change+" "+c.Path+" by "+c.Last.Origin)
		}
		sort.Strings(rows)
		got = strings.Join(rows, "\n")
		return strings.Count(got, "\n") >= 3
	})
	if got != strings.ReplaceAll(want, "\n", " by external\n")+" by external" {
		t.Errorf("changes after the move:\n%s\nwant (by external):\n%s\nlog:\n%s", got, want, d.Log())
	}
	// Logged after what the comparison found: the lines before it are in.
	if !d.LogHas("changes made while the daemon was down") {
		t.Errorf("the log does not tell the changes found:\n%s", d.Log())
	}
	if log := d.Log(); strings.Contains(log, "another directory") || strings.Contains(log, "another root") {
		t.Errorf("the moved root was taken for another:\n%s", d.Log())
	}
	d.Stop(t)

	// Another root under the moved state: one without the mark, and one
	// whose unprivileged owner set user.sandfs.id to the identity (and
	// could not set trusted.sandfs.id).
	for _, tc := range []struct {
		name   string
		attack bool
	}{{"no mark", false}, {"user xattr by nobody", true}} {
		t.Run(tc.name, func(t *testing.T) {
			other := filepath.Join(testenv.NobodyDir(t), "root")
			must(t, os.Mkdir(other, 0o755))
			must(t, os.WriteFile(filepath.Join(other, "keep.txt"), []byte("same"), 0o644))
			if tc.attack {
				must(t, os.Chown(other, testenv.Nobody, testenv.Nobody))
				at := testenv.StartAttacker(t, "TestNobodyAttacker", "mark", other, ident)
				if l := at.WaitLine(t, "set user.sandfs.id", 30*time.Second); l != "set user.sandfs.id: ok" {
					testenv.Skip(t, nil, "user xattrs on %s: %q", other, l)
				}
				if l := at.WaitLine(t, "set trusted.sandfs.id", 30*time.Second); l == "set trusted.sandfs.id: ok" || l == "" {
					t.Fatalf("an unprivileged process marked the root: %q", l)
				}
				at.Stop()
			}
			st := filepath.Join(t.TempDir(), "state")
			if out, err := exec.Command("cp", "-a", copyState, st).CombinedOutput(); err != nil {
				t.Fatalf("cp -a: %v\n%s", err, out)
			}
			d := startDaemon(t, args(other, st)...)
			if !waitFor(60*time.Second, func() bool { return d.LogHas("belongs to another root") }) {
				t.Fatalf("the other root took the sandbox's state:\n%s", d.Log())
			}
			if rows := getChanges(t, d, "").Changes; len(rows) != 0 {
				t.Errorf("the other root has the sandbox's journal: %+v", rows)
			}
			kept, err := os.ReadFile(filepath.Join(statedir.Sandbox(st, "default"), "root"))
			must(t, err)
			var ms unix.Stat_t
			must(t, unix.Stat(moved, &ms))
			if !strings.HasPrefix(string(kept), fmt.Sprintf("%x-%x", ms.Dev, ms.Ino)) {
				t.Errorf("the sandbox's state now records the root %q", kept)
			}
		})
	}
}

// TestMirrorHidesMark: the mark on the root is the daemon's: the mirror
// neither lists nor reads it, and a process on the mount, root too,
// cannot set or remove it.
func TestMirrorHidesMark(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "the root's mark is a trusted.* xattr: the test must run as root")
	}
	d, mnt := startMirror(t)
	buf := make([]byte, 4096)
	if _, err := unix.Lgetxattr(d.Root, "trusted.sandfs.id", buf); err != nil {
		testenv.Skip(t, nil, "the root was not marked (trusted xattrs: %v)", err)
	}
	n, err := unix.Listxattr(mnt, buf)
	must(t, err)
	if strings.Contains(string(buf[:n]), "trusted.sandfs.id") {
		t.Errorf("the mount lists the mark: %q", buf[:n])
	}
	if _, err := unix.Getxattr(mnt, "trusted.sandfs.id", buf); err != unix.ENODATA {
		t.Errorf("reading the mark on the mount: %v, want ENODATA", err)
	}
	if err := unix.Setxattr(mnt, "trusted.sandfs.id", []byte(strings.Repeat("ab", 32)), 0); err != unix.EPERM {
		t.Errorf("setting the mark on the mount: %v, want EPERM", err)
	}
	if err := unix.Removexattr(mnt, "trusted.sandfs.id"); err != unix.EPERM {
		t.Errorf("removing the mark on the mount: %v, want EPERM", err)
	}
}
