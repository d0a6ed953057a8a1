package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestForkCopy: a daemon started with --fork-copy makes each fork a copy
// of the checkpoint's tree, no overlay, and says so (the answer's copy
// and copyWhy, the log, the CLI); the copy is the parent's tree (modes,
// symlinks, their times, empty directories; owners as root); what either
// writes after stays its own; it merges back; a restart without the flag
// serves it as it is; DELETE discards it and leaves the parent whole. It
// needs no root: the copy is what a daemon that is not root makes.
func TestForkCopy(t *testing.T) {
	d, dir := startRegistry(t, "--fork-copy")
	createSandbox(t, d, "main")
	main := filepath.Join(dir, "main")
	testenv.Mk(t, main, map[string]string{"a.txt": "alpha", "src/b.go": "package b\n", "empty/": "", "ln": "->a.txt"})
	must(t, os.Chmod(filepath.Join(main, "src"), 0o750))
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	must(t, unix.Lutimes(filepath.Join(main, "ln"), []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())}))
	if os.Geteuid() == 0 {
		must(t, os.Lchown(filepath.Join(main, "src/b.go"), 65534, 65534))
	}

	if st, b := postSandbox(t, d, map[string]any{"name": "copy-0", "from": "main", "checkpoint": "cp_000000000000"}); st != http.StatusNotFound {
		t.Errorf("a copy of an unknown checkpoint: %d %s, want 404", st, b)
	}
	if _, err := os.Lstat(filepath.Join(d.State, "forks", "copy-0")); !os.IsNotExist(err) {
		t.Errorf("a refused copy left its directory: %v", err)
	}

	st, b := postSandbox(t, d, map[string]any{"name": "copy-1", "from": "main"})
	var made struct {
		Name, Token, From, Checkpoint, CopyWhy string
		Copy                                   bool
	}
	if json.Unmarshal(b, &made); st != http.StatusCreated || made.Token == "" || made.From != "main" ||
		!strings.HasPrefix(made.Checkpoint, "cp_") || !made.Copy || !strings.Contains(made.CopyWhy, "--fork-copy") {
		t.Fatalf("fork by copy: %d %s", st, b)
	}
	if !d.LogHas("forked by copy: asked for (--fork-copy)") {
		t.Errorf("the log does not say the fork is a copy:\n%s", d.Log())
	}
	// A copy's tree is all its own: its usage is the parent's tree's.
	if want, got := [2]int64{15, 5}, waitForkUsage(t, d, "copy-1", [2]int64{15, 5}); got != want {
		t.Errorf("the copy's usage %v, want its whole tree's %v", got, want)
	}
	base := filepath.Join(d.State, "forks", "copy-1")
	forkRoot := filepath.Join(base, "root")
	var sfs unix.Statfs_t
	must(t, unix.Statfs(forkRoot, &sfs))
	if sfs.Type == 0x794c7630 { // overlayfs's magic
		t.Errorf("the copy's root is an overlay")
	}
	for _, sub := range []string{"upper", "work"} {
		if _, err := os.Lstat(filepath.Join(base, sub)); !os.IsNotExist(err) {
			t.Errorf("a copy has %s/: %v", sub, err)
		}
	}
	if rec, err := os.ReadFile(filepath.Join(base, "fork.json")); err != nil || !strings.Contains(string(rec), `"copy": true`) {
		t.Errorf("the copy's record: %s, %v", rec, err)
	}
	if got, want := digestTree(t, forkRoot), digestTree(t, main); got != want {
		t.Fatalf("the copy's tree:\n%s\nwant the parent's:\n%s", got, want)
	}
	var a, c unix.Stat_t
	must(t, unix.Lstat(filepath.Join(main, "ln"), &a))
	must(t, unix.Lstat(filepath.Join(forkRoot, "ln"), &c))
	if a.Mtim != c.Mtim {
		t.Errorf("the copy's symlink mtime %v, want %v", c.Mtim, a.Mtim)
	}
	must(t, unix.Lstat(filepath.Join(main, "src/b.go"), &a))
	must(t, unix.Lstat(filepath.Join(forkRoot, "src/b.go"), &c))
	if a.Uid != c.Uid || a.Gid != c.Gid || a.Mtim != c.Mtim {
		t.Errorf("the copy's src/b.go: %d:%d at %v; want %d:%d at %v", c.Uid, c.Gid, c.Mtim, a.Uid, a.Gid, a.Mtim)
	}

	// Each side's writes stay its own.
	if st, b := named(t, d, made.Token, "PUT", "copy-1", "/fs/write?path=/a.txt", []byte("fork's")); st != http.StatusOK {
		t.Fatalf("write in the copy: %d %s", st, b)
	}
	must(t, os.WriteFile(filepath.Join(main, "src/b.go"), []byte("package b // parent's\n"), 0o644))
	wantFile(t, filepath.Join(main, "a.txt"), "alpha")
	wantFile(t, filepath.Join(forkRoot, "a.txt"), "fork's")
	wantFile(t, filepath.Join(forkRoot, "src/b.go"), "package b\n")
	if st, b := named(t, d, made.Token, "GET", "copy-1", "/fs/read?path=/ln", nil); st != http.StatusOK || string(b) != "fork's" {
		t.Errorf("the copy's symlink through its routes: %d %q", st, b)
	}

	// The CLI says so too; its fork is discarded by the CLI.
	r := d.CLI(t, nil, "fork", "main", "copy-2")
	if r.Code != 0 || !strings.Contains(r.Stdout, "\ncopy asked for (--fork-copy)\n") {
		t.Fatalf("sandfs fork: %+v", r)
	}
	if r := d.CLI(t, nil, "sandbox", "rm", "copy-2"); r.Code != 0 {
		t.Fatalf("sandfs sandbox rm: %+v", r)
	}

	// A restart without the flag: the copy is served as it is.
	d.Stop(t)
	d = startDaemon(t, "--sandboxes", dir, "--state", d.State)
	waitStatus(t, d, "copy-1", http.StatusOK)
	if st, b := named(t, d, made.Token, "GET", "copy-1", "/fs/read?path=/a.txt", nil); st != http.StatusOK || string(b) != "fork's" {
		t.Errorf("the copy after a restart: %d %q", st, b)
	}

	// It merges back: its checkpoint, pinned, is the base.
	if st, b := named(t, d, "", "POST", "copy-1", "/merge", []byte(`{}`)); st != http.StatusOK {
		t.Fatalf("merge of the copy: %d %s", st, b)
	}
	wantFile(t, filepath.Join(main, "a.txt"), "fork's")
	wantFile(t, filepath.Join(main, "src/b.go"), "package b // parent's\n")

	if st, b := named(t, d, "", "DELETE", "copy-1", "", nil); st != http.StatusOK {
		t.Fatalf("discard: %d %s", st, b)
	}
	if _, err := os.Lstat(base); !os.IsNotExist(err) {
		t.Errorf("the copy's directory after the discard: %v", err)
	}
	waitStatus(t, d, "copy-1", http.StatusNotFound)
	wantFile(t, filepath.Join(main, "src/b.go"), "package b // parent's\n")
	if st, b := named(t, d, "", "DELETE", "main", "/checkpoints/"+made.Checkpoint, nil); st != http.StatusOK {
		t.Errorf("DELETE of the checkpoint after the discard: %d %s", st, b)
	}
}

// TestForkCopyRefused: a daemon whose root is not the host's (its own
// user namespace: no trusted.* xattrs, no overlay) is refused the
// overlay and makes the fork by copy unasked, and says why.
func TestForkCopyRefused(t *testing.T) {
	if out, err := exec.Command("unshare", "--user", "--map-root-user", "true").CombinedOutput(); err != nil {
		testenv.Skip(t, nil, "a fork refused its overlay NOT TESTED: cannot make a user namespace (unshare --user): %v %s", err, out)
	}
	wrapper := filepath.Join(t.TempDir(), "userns-sandfs")
	must(t, os.WriteFile(wrapper, []byte("#!/bin/sh\nexec unshare --user --map-root-user "+sandfsBin(t)+" \"$@\"\n"), 0o755))
	dir := filepath.Join(t.TempDir(), "sandboxes")
	must(t, os.Mkdir(dir, 0o755))
	d := startDaemonWith(t, daemonOptions{Bin: wrapper}, "--sandboxes", dir)
	createSandbox(t, d, "main")
	main := filepath.Join(dir, "main")
	testenv.Mk(t, main, map[string]string{"a.txt": "alpha", "src/b.go": "package b\n", "empty/": "", "ln": "->a.txt"})

	st, b := postSandbox(t, d, map[string]any{"name": "copy-1", "from": "main"})
	var made struct {
		CopyWhy string
		Copy    bool
	}
	if json.Unmarshal(b, &made); st != http.StatusCreated || !made.Copy || !strings.Contains(made.CopyWhy, "refused") {
		t.Fatalf("a fork refused its overlay: %d %s; want a copy saying why", st, b)
	}
	if !d.LogHas("forked by copy: " + made.CopyWhy) {
		t.Errorf("the log does not say why the fork is a copy:\n%s", d.Log())
	}
	if got, want := digestTree(t, filepath.Join(d.State, "forks", "copy-1", "root")), digestTree(t, main); got != want {
		t.Fatalf("the copy's tree:\n%s\nwant the parent's:\n%s", got, want)
	}
}

// TestForkCopyMountRefused: a fork whose checkpoint's tree is made but
// whose overlay mount the kernel refuses is made a copy unasked, and says
// why; its tree is the checkpoint's and what it writes stays its own. The
// refusal is the kernel's: the daemon runs as root without CAP_SYS_ADMIN
// (as in a container that drops it), so the mount is refused (EPERM),
// while the tree, made by a first fork before, needs no privilege to read.
func TestForkCopyMountRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "a fork refused its overlay mount NOT TESTED: an overlay mount needs root")
	}
	if out, err := exec.Command("setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "true").CombinedOutput(); err != nil {
		testenv.Skip(t, nil, "a fork refused its overlay mount NOT TESTED: cannot drop CAP_SYS_ADMIN (setpriv): %v %s", err, out)
	}
	d, dir := startRegistry(t)
	createSandbox(t, d, "main")
	main := filepath.Join(dir, "main")
	testenv.Mk(t, main, map[string]string{"a.txt": "alpha", "src/b.go": "package b\n", "empty/": "", "ln": "->a.txt"})
	must(t, os.Chmod(filepath.Join(main, "src"), 0o750))
	// A first fork, by a daemon with every privilege, makes the
	// checkpoint's tree; it is discarded, the tree stays.
	st, b := postSandbox(t, d, map[string]any{"name": "first", "from": "main"})
	var first struct {
		Checkpoint string
		Copy       bool
	}
	if json.Unmarshal(b, &first); st != http.StatusCreated || first.Copy {
		t.Fatalf("the first fork, an overlay: %d %s", st, b)
	}
	unmountAtEnd(t, filepath.Join(d.State, "forks", "first", "root"))
	if st, b := named(t, d, "", "DELETE", "first", "", nil); st != http.StatusOK {
		t.Fatalf("discard of the first fork: %d %s", st, b)
	}
	d.Stop(t)

	wrapper := filepath.Join(t.TempDir(), "no-sys-admin-sandfs")
	must(t, os.WriteFile(wrapper, []byte("#!/bin/sh\nexec setpriv --bounding-set -sys_admin --inh-caps -sys_admin "+sandfsBin(t)+" \"$@\"\n"), 0o755))
	d = startDaemonWith(t, daemonOptions{Bin: wrapper}, "--sandboxes", dir, "--state", d.State)
	wantRefusedCopy(t, d, main, map[string]any{"name": "copy-1", "from": "main", "checkpoint": first.Checkpoint}, "not permitted")
}

// TestForkCopyStateOnOverlay: a daemon whose state is on an overlay (a
// container's root) is refused each fork's overlay mount, as an overlay
// is not an upper layer the kernel takes (EINVAL): the fork is a copy,
// says why, and is discarded whole.
func TestForkCopyStateOnOverlay(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "a fork whose state is on an overlay NOT TESTED: an overlay mount needs root")
	}
	layers := t.TempDir()
	for _, l := range []string{"lower", "upper", "work"} {
		must(t, os.Mkdir(filepath.Join(layers, l), 0o700))
	}
	state := t.TempDir()
	forks := filepath.Join(state, "forks")
	must(t, os.Mkdir(forks, 0o700))
	opts := "lowerdir=" + filepath.Join(layers, "lower") + ",upperdir=" + filepath.Join(layers, "upper") + ",workdir=" + filepath.Join(layers, "work")
	if err := unix.Mount("overlay", forks, "overlay", 0, opts); err != nil {
		testenv.Skip(t, nil, "a fork whose state is on an overlay NOT TESTED: cannot mount an overlay on %s: %v", forks, err)
	}
	t.Cleanup(func() { unix.Unmount(forks, unix.MNT_DETACH) }) // after the daemon's stop: cleanups run last first
	dir := filepath.Join(t.TempDir(), "sandboxes")
	must(t, os.Mkdir(dir, 0o755))
	d := startDaemon(t, "--sandboxes", dir, "--state", state)
	createSandbox(t, d, "main")
	main := filepath.Join(dir, "main")
	testenv.Mk(t, main, map[string]string{"a.txt": "alpha", "src/b.go": "package b\n", "empty/": "", "ln": "->a.txt"})
	must(t, os.Chmod(filepath.Join(main, "src"), 0o750))
	wantRefusedCopy(t, d, main, map[string]any{"name": "copy-1", "from": "main"}, "upperdir")
	if st, b := named(t, d, "", "DELETE", "copy-1", "", nil); st != http.StatusOK {
		t.Fatalf("discard: %d %s", st, b)
	}
	if _, err := os.Lstat(filepath.Join(forks, "copy-1")); !os.IsNotExist(err) {
		t.Errorf("the copy's directory after the discard: %v", err)
	}
}

// wantRefusedCopy makes the fork body of main (its tree now the
// checkpoint's) and checks it is a copy whose why says the overlay mount
// was refused, naming why; that its tree is the checkpoint's; and that
// what it writes stays its own.
func wantRefusedCopy(t *testing.T, d *Daemon, main string, body map[string]any, why string) {
	t.Helper()
	want := digestTree(t, main)
	name := body["name"].(string)
	st, b := postSandbox(t, d, body)
	var made struct {
		Token, CopyWhy string
		Copy           bool
	}
	if json.Unmarshal(b, &made); st != http.StatusCreated || !made.Copy ||
		!strings.Contains(made.CopyWhy, "the overlay mount was refused") || !strings.Contains(made.CopyWhy, why) {
		t.Fatalf("a fork refused its overlay mount: %d %s; want a copy saying the mount was refused (%s)", st, b, why)
	}
	if !d.LogHas("forked by copy: " + made.CopyWhy) {
		t.Errorf("the log does not say why the fork is a copy:\n%s", d.Log())
	}
	base := filepath.Join(d.State, "forks", name)
	unmountAtEnd(t, filepath.Join(base, "root"))
	for _, sub := range []string{"upper", "work"} {
		if _, err := os.Lstat(filepath.Join(base, sub)); !os.IsNotExist(err) {
			t.Errorf("a copy has %s/: %v", sub, err)
		}
	}
	if rec, err := os.ReadFile(filepath.Join(base, "fork.json")); err != nil || !strings.Contains(string(rec), `"copy": true`) {
		t.Errorf("the copy's record: %s, %v", rec, err)
	}
	forkRoot := filepath.Join(base, "root")
	if got := digestTree(t, forkRoot); got != want {
		t.Fatalf("the copy's tree:\n%s\nwant the checkpoint's:\n%s", got, want)
	}
	if st, b := named(t, d, made.Token, "PUT", name, "/fs/write?path=/a.txt", []byte("fork's")); st != http.StatusOK {
		t.Fatalf("write in the copy: %d %s", st, b)
	}
	if st, b := named(t, d, made.Token, "PUT", name, "/fs/write?path=/src/new.go", []byte("package b // new\n")); st != http.StatusOK {
		t.Fatalf("a new file in the copy: %d %s", st, b)
	}
	wantFile(t, filepath.Join(forkRoot, "a.txt"), "fork's")
	if st, b := named(t, d, made.Token, "GET", name, "/fs/read?path=/ln", nil); st != http.StatusOK || string(b) != "fork's" {
		t.Errorf("the copy's symlink through its routes: %d %q", st, b)
	}
	if got := digestTree(t, main); got != want {
		t.Errorf("the parent after the copy's writes:\n%s\nwant it as it was:\n%s", got, want)
	}
}
