package core

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// Where the kernel refuses the mark, the device and inode decide: the log
// says so once, and the manifest records no identity, so a later copy is
// another directory.
func TestMarkRefusedFallsBack(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	s, err := Open("default", root, Options{StateDir: state})
	must(t, err)
	s.id.found, s.id.marked, s.id.refused = "", false, unix.EPERM // as without CAP_SYS_ADMIN
	markRefusedLogged.Store(false)
	buf := &testenv.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	must(t, s.StartWatching(ctx, slog.New(slog.NewTextHandler(buf, nil))))
	select {
	case <-s.Reconciled():
	case <-time.After(60 * time.Second):
		t.Fatalf("the comparison at start did not end:\n%s", buf)
	}
	if n := strings.Count(buf.String(), "cannot carry the sandbox's identity"); n != 1 {
		t.Errorf("the refusal is logged %d times:\n%s", n, buf)
	}
	if v, err := s.hist.Meta(metaIdentity); err != nil || v != "" {
		t.Errorf("the manifest records the identity %q (%v) of a root not marked", v, err)
	}
	if v, _ := s.hist.Meta(metaRoot); v == "" {
		t.Error("the manifest records no device and inode")
	}
	cancel()
	time.Sleep(20 * time.Millisecond) // the reader's last flush, as durable's stop
	s.Close()
}
