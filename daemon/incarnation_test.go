package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/core"
	"sandfs/core/checkpoint"
)

// TestSandboxIncarnations: a sandbox of DIR removed by hand and made
// again under its name, or deleted and made again through the manager, is
// a new sandbox: a new token, no checkpoints of the old one, the old
// state archived (by hand) or gone, and a journal that numbers above
// every seq the old one handed out.
func TestSandboxIncarnations(t *testing.T) {
	ctx := context.Background()
	th := newTestHost(t, core.Quota{})
	tok1, err := th.d.Create(ctx, "alice", core.Quota{})
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := th.h.Get("alice")
	if _, err := sb.WriteFile(ctx, "/secret", strings.NewReader("old tenant"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Create(ctx, sb, checkpoint.Options{}); err != nil {
		t.Fatal(err)
	}
	seq1 := sb.Journal().Seq()

	// Removed by hand, then made again through the manager.
	if err := os.RemoveAll(filepath.Join(th.dir, "alice")); err != nil {
		t.Fatal(err)
	}
	th.d.Rescan()
	th.waitServed(t, "alice", false)
	tok2, err := th.d.Create(ctx, "alice", core.Quota{})
	if err != nil {
		t.Fatal(err)
	}
	if tok2 == tok1 {
		t.Error("the sandbox made again under the name answers the old tenant's token")
	}
	sb, _ = th.h.Get("alice")
	if cps, err := checkpoint.List(sb); err != nil || len(cps) != 0 {
		t.Errorf("the new sandbox lists %d checkpoints (%v), want none of the old one's", len(cps), err)
	}
	if _, err := sb.WriteFile(ctx, "/new", strings.NewReader("new tenant"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	seq2 := sb.Journal().Seq()
	if seq2 <= seq1 {
		t.Errorf("the new sandbox's seq %d, at or below the old one's %d: a seq given twice", seq2, seq1)
	}
	archived, _ := filepath.Glob(filepath.Join(th.state, "archive", "alice-*"))
	if len(archived) != 1 {
		t.Errorf("archived states: %v, want the old one's", archived)
	}

	// Deleted through the manager, then made again.
	if err := th.d.Remove(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	tok3, err := th.d.Create(ctx, "alice", core.Quota{})
	if err != nil {
		t.Fatal(err)
	}
	sb, _ = th.h.Get("alice")
	if _, err := sb.WriteFile(ctx, "/third", strings.NewReader("x"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if tok3 == tok2 || sb.Journal().Seq() <= seq2 {
		t.Errorf("after a delete: token new %v, seq %d (the last one's %d)", tok3 != tok2, sb.Journal().Seq(), seq2)
	}
}
