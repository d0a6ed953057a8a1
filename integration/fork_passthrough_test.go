package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sandfs/internal/testenv"
)

// TestForkMountPassthrough: a fork's mirror (--mount-all) hands the kernel
// its overlay's files as backing files, as a plain sandbox's mirror does
// (the overlay is one stacking level, so the mirror allows two): a write
// through it reaches the daemon as no WRITE, and its bytes land in the
// fork alone, a lower file changed copied up, the parent's left as it was.
func TestForkMountPassthrough(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "forks NOT TESTED: an overlay mount needs root")
	}
	requireFUSE(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	d, dir := startRegistry(t, "--mount-all", mnt, "--fuse-debug")
	createSandbox(t, d, "main")
	testenv.Mk(t, filepath.Join(dir, "main"), map[string]string{"a.txt": "alpha", "src/b.go": "package b\n"})
	if st, b := postSandbox(t, d, map[string]any{"name": "try-1", "from": "main"}); st != 201 {
		t.Fatalf("fork: %d %s", st, b)
	}
	discardAtCleanup(t, d, "try-1")
	at := filepath.Join(mnt, "try-1")
	waitMounted(t, d, at, true)

	before := len(d.Log())
	must(t, os.WriteFile(filepath.Join(at, "src", "new.go"), []byte("package b // the fork's\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(at, "a.txt"), []byte("the fork's alpha"), 0o644))
	log := d.Log()[before:]
	backing := strings.Contains(log, "backing=")
	write := regexp.MustCompile(`rx \d+: WRITE n`).MatchString(log)
	switch {
	case !kernelAtLeast(6, 9):
		t.Logf("kernel older than 6.9: passthrough not expected (backing %v, WRITE %v)", backing, write)
	case !backing || write:
		t.Errorf("the fork's mount: OPEN gave a backing file %v, a WRITE reached the daemon %v; want true, false:\n%s", backing, write, log)
	}

	forkRoot := filepath.Join(d.State, "forks", "try-1", "root")
	wantFile(t, filepath.Join(forkRoot, "src", "new.go"), "package b // the fork's\n")
	wantFile(t, filepath.Join(forkRoot, "a.txt"), "the fork's alpha")
	wantFile(t, filepath.Join(dir, "main", "a.txt"), "alpha")
	if _, err := os.Lstat(filepath.Join(dir, "main", "src", "new.go")); !os.IsNotExist(err) {
		t.Errorf("the fork's new file in the parent: %v", err)
	}
}
