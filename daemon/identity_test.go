package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/journal"
	"sandfs/internal/testenv"
)

// TestMarkedCopyKeepsState: a sandbox of DIR whose directory is replaced
// by a copy carrying its mark (cp -a as root: a new inode) is the same
// sandbox at the daemon's next start: its token and journal are kept,
// nothing is archived, and what changed in the copy is found at start. A
// directory made in its place without the mark is a new sandbox
// (TestSandboxIncarnations).
func TestMarkedCopyKeepsState(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "the root's mark is a trusted.* xattr: the test must run as root")
	}
	ctx := context.Background()
	th := newTestHost(t, core.Quota{})
	tok, err := th.d.Create(ctx, "alice", core.Quota{})
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := th.h.Get("alice")
	<-sb.Reconciled() // the first manifest written, so the write below is the journal's to tell
	if _, err := sb.WriteFile(ctx, "/kept", strings.NewReader("work"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	seq := sb.Journal().Seq()
	dir := filepath.Join(th.dir, "alice")
	if rootMarkAt(unix.AT_FDCWD, dir) != sb.Identity() {
		testenv.Skip(t, nil, "the root was not marked (trusted xattrs refused here)")
	}
	// The daemon stops; the directory is replaced by a copy of it, changed.
	// The copy is made beside it (so it cannot get the inode number the
	// old one had, which would make it the same directory by its device
	// and inode) and renamed into its place.
	th.d.Close()
	th.h.Close()
	saved := filepath.Join(th.dir, ".copy")
	if out, err := exec.Command("cp", "-a", dir, saved).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(saved, "down"), []byte("while away"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(saved, dir); err != nil {
		t.Fatal(err)
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	th.h = New(hctx, th.h.cfg)
	d, err := OpenDir(th.h, th.dir, core.Quota{})
	if err != nil {
		t.Fatal(err)
	}
	defer th.h.Close()
	defer d.Close()
	d.Rescan()
	th.waitServed(t, "alice", true)
	sb, _ = th.h.Get("alice")
	if th.h.Token("alice") != tok {
		t.Error("the copy answers another token")
	}
	if archived, _ := filepath.Glob(filepath.Join(th.state, "archive", "alice-*")); len(archived) != 0 {
		t.Errorf("the state was archived: %v\n%s", archived, th.logText())
	}
	select {
	case <-sb.Reconciled():
	case <-time.After(60 * time.Second):
		t.Fatalf("the comparison at start did not end:\n%s", th.logText())
	}
	var got []string
	sb.Journal().Scan(ctx, seq, func(e journal.Event) bool {
		got = append(got, string(e.Type)+" "+e.Path)
		return true
	})
	if strings.Join(got, ",") != "create /down" {
		t.Errorf("events after the copy came back: %v, want the file made in it\n%s", got, th.logText())
	}
}
