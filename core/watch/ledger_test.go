package watch

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"sandfs/core/journal"
)

// waitClosed waits until the reader has met claim c's sentinel.
func waitClosed(t *testing.T, s *Watch, c *Claim) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if !s.ClaimOpen(c) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim %d never closed", c.id)
		}
	}
}

// TestLedgerSlots: claims made one after another share one slot (a
// sentinel makes no name), concurrent ones a slot each unless the reader
// freed one in between, and the control directory holds exactly the slots.
func TestLedgerSlots(t *testing.T) {
	s, root, w := watched(t)
	for i := 0; i < 50; i++ {
		c := s.Claim("/a")
		c.Done()
		waitClosed(t, s, c)
	}
	s.ledger.mu.Lock()
	serial := s.ledger.slots
	s.ledger.mu.Unlock()
	if serial != 1 {
		t.Errorf("50 claims one after another made %d slots, want 1", serial)
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
	// The reader may free a slot before the next Done takes one: up to 4.
	if slots < 1 || slots > 4 || free != slots || lent != 0 {
		t.Errorf("after 50 serial and 4 concurrent claims: %d slots, %d free, %d lent; want 1 to 4, all free, 0", slots, free, lent)
	}
	names, err := os.ReadDir(s.ledger.dir())
	if err != nil || len(names) != slots {
		t.Errorf("control directory holds %d names (%v), want the %d slots", len(names), err, slots)
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
	s := &Watch{}
	s.ledger.setCtlDir(t.TempDir()) // nothing reads it: the sentinel is never met
	c := s.Claim("/x")
	c.Done()
	if covered, _ := s.ledger.claimed("/x/y", ""); !covered {
		t.Fatal("a done claim whose sentinel is unread does not cover its path")
	}
	s.ledger.lost()
	if covered, _ := s.ledger.claimed("/x/y", ""); covered {
		t.Error("after lost() the claim still covers its path")
	}
	if len(s.ledger.free) != 1 || len(s.ledger.lent) != 0 {
		t.Errorf("after lost(): %d free, %d lent slots; want 1, 0", len(s.ledger.free), len(s.ledger.lent))
	}
	s.ledger.setCtlDir("")
}

// TestLedgerEcho: a claim of ClaimEcho ends at its own last echo, with no
// sentinel, and tells the same as a claim ended by its sentinel: the
// operation's echoes nothing, the outside change right after it
// everything. One that cannot wait for its echo (NoEcho) ends by a
// sentinel, and one whose echo never comes by a sentinel after the wait.
func TestLedgerEcho(t *testing.T) {
	for _, tc := range []struct {
		name      string
		path      string
		typ       journal.Type
		op        func(root string) error // the claimed operation
		noEcho    bool                    // NoEcho before DoneEcho
		wait      time.Duration           // the fallback's wait
		sentinels int
	}{
		{"remove", "/f", journal.Remove, func(root string) error { return os.Remove(filepath.Join(root, "f")) }, false, time.Minute, 0},
		{"create", "/new", journal.Create, func(root string) error { return os.WriteFile(filepath.Join(root, "new"), nil, 0o644) }, false, time.Minute, 0},
		{"create, then NoEcho", "/new", journal.Create, func(root string) error { return os.WriteFile(filepath.Join(root, "new"), nil, 0o644) }, true, time.Minute, 1},
		{"echo never made", "/f", journal.Remove, func(root string) error { return nil }, false, 0, 1},
		{"another echo", "/f", journal.Remove, func(root string) error { return os.Chmod(filepath.Join(root, "f"), 0o600) }, false, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root, w := watched(t)
			if err := os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			settle(t, s, w, 0)
			cursor := s.h.Journal.Seq()
			s.ledger.mu.Lock()
			s.ledger.wait = tc.wait
			marked := s.ledger.marked
			s.ledger.mu.Unlock()
			c := s.ClaimEcho(tc.path, tc.typ)
			if err := tc.op(root); err != nil {
				t.Fatal(err)
			}
			if tc.noEcho {
				c.NoEcho()
			}
			c.DoneEcho()
			waitClosed(t, s, c)
			s.ledger.mu.Lock()
			sentinels := s.ledger.marked - marked
			s.ledger.mu.Unlock()
			if sentinels != tc.sentinels {
				t.Errorf("%d sentinels marked, want %d", sentinels, tc.sentinels)
			}
			// The claim held back its echoes and nothing after them.
			if err := os.WriteFile(filepath.Join(root, "g"), []byte("after"), 0o644); err != nil {
				t.Fatal(err)
			}
			got := fmtEvents(settle(t, s, w, cursor))
			if got != "external create /g\nexternal write /g" && got != "external create /g" {
				t.Errorf("events: got\n%s\nwant external create (and write) of /g", got)
			}
		})
	}
}

// TestLedgerCovers: a claim covers its path and everything under it, and
// nothing beside it, however many other claims are open (claimed looks
// them up by the event's path and its ancestors).
func TestLedgerCovers(t *testing.T) {
	for _, tc := range []struct {
		claims  []string
		path    string
		covered bool
	}{
		{[]string{"/a/b"}, "/a/b", true},
		{[]string{"/a/b"}, "/a/b/c/d", true},
		{[]string{"/a/b"}, "/a", false},
		{[]string{"/a/b"}, "/a/bc", false},
		{[]string{"/a/b"}, "/", false},
		{[]string{"/"}, "/x/y", true},
		{[]string{"/x", "/a/b"}, "/a/b/c", true},
		{nil, "/a", false},
	} {
		s := &Watch{}
		var open []*Claim
		for i := 0; i < 1000; i++ {
			open = append(open, s.Claim("/other/"+strconv.Itoa(i)))
		}
		c := s.Claim(tc.claims...)
		if covered, echo := s.ledger.claimed(tc.path, journal.Write); covered != tc.covered || echo {
			t.Errorf("claims %v, event on %s: covered %v echo %v, want %v false", tc.claims, tc.path, covered, echo, tc.covered)
		}
		c.Done()
		for _, o := range open {
			o.Done()
		}
		if covered, _ := s.ledger.claimed(tc.path, ""); covered {
			t.Errorf("claims %v done: %s still covered", tc.claims, tc.path)
		}
		if len(s.ledger.open) != 0 || len(s.ledger.byPath) != 0 {
			t.Errorf("all done: %d claims open, %d paths indexed", len(s.ledger.open), len(s.ledger.byPath))
		}
	}
}

// TestLedgerEchoOnce: one echo ends one claim, the oldest waiting for it;
// a second claim on the same path waits for an echo of its own.
func TestLedgerEchoOnce(t *testing.T) {
	s := &Watch{}
	first := s.ClaimEcho("/f", journal.Create)
	second := s.ClaimEcho("/f", journal.Create)
	if covered, echo := s.ledger.claimed("/f", journal.Create); !covered || !echo {
		t.Fatalf("first echo: covered %v echo %v", covered, echo)
	}
	if !first.echoed || second.echoed {
		t.Fatalf("after one echo: first echoed %v, second %v; want true, false", first.echoed, second.echoed)
	}
	if _, echo := s.ledger.claimed("/f", journal.Create); !echo || !second.echoed {
		t.Fatalf("second echo: echo %v, second echoed %v", echo, second.echoed)
	}
	if covered, echo := s.ledger.claimed("/f", journal.Create); !covered || echo {
		t.Errorf("third Create: covered %v echo %v, want covered by the open claims, no echo", covered, echo)
	}
}

// TestLedgerBusy: the reader gathers events only while the daemon has been
// opening claims (busyWithin), never for an outside writer alone.
func TestLedgerBusy(t *testing.T) {
	s := &Watch{}
	if s.ledger.busyWithin(time.Hour) {
		t.Error("busy before any claim")
	}
	c := s.Claim("/a")
	if !s.ledger.busyWithin(time.Hour) {
		t.Error("not busy right after a claim")
	}
	c.Done()
	s.ledger.opened.Store(time.Now().Add(-time.Minute).UnixNano())
	if s.ledger.busyWithin(time.Second) {
		t.Error("busy a minute after the last claim")
	}
}

// TestLedgerEchoAt: two writes of one target each end at the rename of
// their own temp file (EchoAt), whichever renames first: the target's
// Rename is covered but nobody's echo, the temp name's is its write's.
func TestLedgerEchoAt(t *testing.T) {
	s := &Watch{}
	a := s.Claim("/f")
	a.EchoAt("/.t-a", journal.Rename)
	b := s.Claim("/f")
	b.EchoAt("/.t-b", journal.Rename)
	if covered, echo := s.ledger.claimed("/f", journal.Rename); !covered || echo {
		t.Errorf("the target's Rename: covered %v echo %v, want true false", covered, echo)
	}
	if covered, echo := s.ledger.claimed("/.t-b", journal.Rename); !covered || !echo {
		t.Errorf("b's temp file's Rename: covered %v echo %v, want true true", covered, echo)
	}
	if a.echoed || !b.echoed {
		t.Errorf("after b's rename: a echoed %v, b %v; want false, true", a.echoed, b.echoed)
	}
	if _, echo := s.ledger.claimed("/.t-a", journal.Rename); !echo || !a.echoed {
		t.Errorf("a's rename: echo %v, a echoed %v", echo, a.echoed)
	}
}
