package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFUSEOrphanToldNothing: a file open through the mount whose
// directory an outside process moves out of the root is no longer the
// sandbox's: what is written to it after the move is told under no name,
// never go-fuse's internal ".go-fuse.N/deleted/…" and never after the
// directory's removal was told.
func TestFUSEOrphanToldNothing(t *testing.T) {
	requireFUSE(t)
	base := t.TempDir()
	root, mnt, away := filepath.Join(base, "root"), filepath.Join(t.TempDir(), "mnt"), filepath.Join(base, "away")
	must(t, os.MkdirAll(filepath.Join(root, "p", "hd"), 0o755))
	d := startDaemon(t, "--root", root, "--mount", mnt)
	f, err := os.OpenFile(filepath.Join(mnt, "p", "hd", "f"), os.O_CREATE|os.O_WRONLY, 0o644)
	must(t, err)
	_, err = f.WriteString("before the move\n")
	must(t, err)
	must(t, f.Sync())
	must(t, os.Rename(filepath.Join(root, "p", "hd"), away))
	// The move out is told as the directory's removal; then the mirror's
	// node of f is an orphan.
	deadline := time.Now().Add(30 * time.Second)
	for {
		removed := false
		for _, e := range keptEvents(t, d) {
			if e.Type == "remove" && e.Path == "/p/hd" {
				removed = true
			}
		}
		if removed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the move out of the root was not told in 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Look it up again so the kernel drops the old entry, then write and
	// close through the descriptor still open.
	os.Stat(filepath.Join(mnt, "p", "hd"))
	_, err = f.WriteString("after the move\n")
	must(t, err)
	f.Chmod(0o600)
	must(t, f.Close())
	restPut(t, d, "/end", "end")
	var events []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		events = events[:0]
		end := false
		for _, e := range keptEvents(t, d) {
			events = append(events, e.Type+" "+e.Path)
			end = end || e.Path == "/end"
		}
		if end || time.Now().After(deadline) {
			break
		}
	}
	removedAt := -1
	for i, e := range events {
		if strings.Contains(e, "/.go-fuse.") {
			t.Errorf("an event names go-fuse's internal path: %q", e)
		}
		if e == "remove /p/hd" {
			removedAt = i
		}
		if removedAt >= 0 && i > removedAt && strings.HasPrefix(strings.Fields(e)[1], "/p/hd/") {
			t.Errorf("told after the directory left the root: %q (events %q)", e, events)
		}
	}
}
