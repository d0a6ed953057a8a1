package core

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// waitClosed waits until the reader has met claim c's sentinel.
func waitClosed(t *testing.T, s *Sandbox, c *Claim) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.ledger.mu.Lock()
		_, open := s.ledger.open[c.id]
		s.ledger.mu.Unlock()
		if !open {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim %d never closed", c.id)
		}
	}
}

// TestLedgerSlots: claims made one after another share one slot (a
// sentinel makes no name), concurrent ones take a slot each, and the
// control directory holds exactly the slots.
func TestLedgerSlots(t *testing.T) {
	s, root, w := watched(t)
	for i := 0; i < 50; i++ {
		c := s.Claim("/a")
		c.Done()
		waitClosed(t, s, c)
	}
	cs := make([]*Claim, 4)
	for i := range cs {
		cs[i] = s.Claim("/b")
	}
	for _, c := range cs {
		c.Done()
	}
	for _, c := range cs {
		waitClosed(t, s, c)
	}
	s.ledger.mu.Lock()
	slots, free, lent := s.ledger.slots, len(s.ledger.free), len(s.ledger.lent)
	s.ledger.mu.Unlock()
	if slots != 4 || free != 4 || lent != 0 {
		t.Errorf("after 50 serial and 4 concurrent claims: %d slots, %d free, %d lent; want 4, 4, 0", slots, free, lent)
	}
	names, err := os.ReadDir(s.ledger.dir())
	if err != nil || len(names) != 4 {
		t.Errorf("control directory holds %d names (%v), want the 4 slots", len(names), err)
	}
	// The claims held nothing back: an outside write of a path claimed a
	// moment ago is told.
	if err := os.WriteFile(filepath.Join(root, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := fmtEvents(settle(t, s, w, 0))
	if got != "external create /a\nexternal write /a" && got != "external create /a" {
		t.Errorf("outside write after the claims: got\n%s\nwant external create (and write) of /a", got)
	}
}

// TestLedgerLost: after a queue overflow every claim waiting for its
// sentinel is closed (the sentinel may have been dropped) and its slot is
// free again; the claim is not held open for ever.
func TestLedgerLost(t *testing.T) {
	s := &Sandbox{}
	s.ledger.setCtlDir(t.TempDir()) // nothing reads it: the sentinel is never met
	c := s.Claim("/x")
	c.Done()
	if !s.ledger.claimed("/x/y") {
		t.Fatal("a done claim whose sentinel is unread does not cover its path")
	}
	s.ledger.lost()
	if s.ledger.claimed("/x/y") {
		t.Error("after lost() the claim still covers its path")
	}
	if len(s.ledger.free) != 1 || len(s.ledger.lent) != 0 {
		t.Errorf("after lost(): %d free, %d lent slots; want 1, 0", len(s.ledger.free), len(s.ledger.lent))
	}
	s.ledger.setCtlDir("")
}
