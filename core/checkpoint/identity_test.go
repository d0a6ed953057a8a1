package checkpoint

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/internal/statedir"
	"sandfs/internal/testenv"
)

// A checkpoint records the sandbox's identity, and a restore of the whole
// tree, the root's own attributes with it, leaves the root's mark.
func TestCheckpointIdentityAndRestoreKeepsMark(t *testing.T) {
	root, want := restoreTree(t)
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "the root's mark is a trusted.* xattr: the test must run as root")
	}
	s := histSandbox(t, root)
	if !statedir.IsIdentity(s.Identity()) {
		t.Fatalf("identity %q", s.Identity())
	}
	mark := func() string {
		fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		must(t, err)
		defer unix.Close(fd)
		m, err := core.RootMark(fd)
		if err != nil {
			testenv.Skip(t, nil, "trusted xattrs on %s: %v", root, err)
		}
		return m
	}
	if mark() != s.Identity() {
		t.Fatalf("root mark %q, want %s", mark(), s.Identity())
	}
	cp := mustCheckpoint(t, s, Options{})
	if cp.Identity != s.Identity() {
		t.Fatalf("checkpoint identity %q, want %s", cp.Identity, s.Identity())
	}
	if got, err := ByID(s, cp.ID); err != nil || got.Identity != s.Identity() {
		t.Fatalf("read back: %+v %v", got, err)
	}
	changeThings(t, s, root)
	must(t, os.Chmod(root, 0o711))
	if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the restore", want, treeDigest(t, root))
	if mark() != s.Identity() {
		t.Errorf("root mark %q after the restore, want %s", mark(), s.Identity())
	}
}
