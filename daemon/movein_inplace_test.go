package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/internal/testenv"
)

// TestOldRootOf: a directory of DIR is the old root of the sandbox of an
// identity only when it is not served, its state keeps that identity and
// it carries that mark; otherwise it says why (served, another identity,
// another mark, no mark, a file).
func TestOldRootOf(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "the root's mark is a trusted.* xattr: the test must run as root")
	}
	ctx := context.Background()
	th := newTestHost(t, core.Quota{})
	if _, err := th.d.Create(ctx, "alice", core.Quota{}); err != nil {
		t.Fatal(err)
	}
	sb, _ := th.h.Get("alice")
	id := sb.Identity()
	dir := filepath.Join(th.dir, "alice")
	if rootMarkAt(unix.AT_FDCWD, dir) != id {
		testenv.Skip(t, nil, "the root was not marked (trusted xattrs refused here)")
	}
	other := strings.Repeat("ab", 32)
	check := func(name, ident, want string) {
		t.Helper()
		th.d.mu.Lock()
		err := th.d.oldRootOf(name, ident)
		th.d.mu.Unlock()
		switch {
		case want == "" && err != nil:
			t.Fatalf("oldRootOf(%s, %s): %v, want nil", name, ident, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Fatalf("oldRootOf(%s, %s): %v, want %q", name, ident, err, want)
		}
	}
	check("alice", id, "served here")
	// DIR's watch would serve the directory again at the event its stop
	// makes (a move's old host is refused the lease then): not followed.
	th.d.w.Close()
	<-th.d.done
	th.d.mu.Lock()
	th.d.stopServed("alice", false) // as a move away leaves it: root and state kept
	th.d.mu.Unlock()
	check("alice", id, "")
	check("alice", other, "another sandbox's")
	check("alice", "", "no identity")

	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := core.MarkRoot(fd, other); err != nil {
		t.Fatal(err)
	}
	check("alice", id, "not marked as this sandbox's root")
	if err := unix.Fremovexattr(fd, core.MarkXattr); err != nil {
		t.Fatal(err)
	}
	check("alice", id, "not marked as this sandbox's root")

	if err := os.WriteFile(filepath.Join(th.dir, "bob"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("bob", id, "not a directory")
}
