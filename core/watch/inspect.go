package watch

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// What core's tests look at and set of a running watch, and nothing
// more: the tests that drive the watch through a Sandbox's operations
// live in core (the watch's own tests cannot import core, which imports
// it), and check the ledger's state and make holes with these.

// RenamePairWait bounds how long a Rename(old) waits for its Create(new)
// before it is told as moved out.
const RenamePairWait = renamePairWait

// ClaimOpen reports whether c is still open (its sentinel or echo unread).
func (w *Watch) ClaimOpen(c *Claim) bool {
	w.ledger.mu.Lock()
	defer w.ledger.mu.Unlock()
	_, open := w.ledger.open[c.id]
	return open
}

// OpenClaims is how many claims are open.
func (w *Watch) OpenClaims() int {
	w.ledger.mu.Lock()
	defer w.ledger.mu.Unlock()
	return len(w.ledger.open)
}

// Marked is how many sentinels were marked.
func (w *Watch) Marked() int {
	w.ledger.mu.Lock()
	defer w.ledger.mu.Unlock()
	return w.ledger.marked
}

// SetEchoWait sets how long a claim waits for its last echo (DoneEcho)
// before it is lent a sentinel; 0 is echoWait.
func (w *Watch) SetEchoWait(d time.Duration) {
	w.ledger.mu.Lock()
	w.ledger.wait = d
	w.ledger.mu.Unlock()
}

// ControlParent is where control directories are made: a tmpfs where
// there is one.
func ControlParent() string { return ctlParent() }

// Refuse makes ap as a directory whose watch was refused with err (the
// watch limit, ENOSPC; gone, ENOENT): its watch, if any, dropped, a hole
// unless it is gone, and what that tells appended.
func (w *Watch) Refuse(ap string, err unix.Errno) {
	n := w.ledger.reader.Load()
	if n == nil {
		return
	}
	n.mu.Lock()
	n.forget(ap)
	n.refused(ap, err)
	n.mu.Unlock()
	w.out.flush(w.h.Journal)
}

// IsHole reports whether ap is a hole of the running watch.
func (w *Watch) IsHole(ap string) bool {
	n := w.ledger.reader.Load()
	if n == nil {
		return false
	}
	n.cov.mu.RLock()
	defer n.cov.mu.RUnlock()
	return n.cov.holes[ap]
}

// Settle reads jw's events from cursor until the journal is quiet: a
// sentinel claim made now proves the kernel queue is read up to here
// (bounded at 10 s), and three rename-pair windows let a pending pair be
// told.
func (w *Watch) Settle(jw *journal.Watcher, cursor uint64) ([]journal.Event, error) {
	c := w.Claim("/.settle-marker")
	c.Done()
	for deadline := time.Now().Add(10 * time.Second); w.ClaimOpen(c) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(3 * renamePairWait)
	var all []journal.Event
	for {
		b, _, err := jw.Read(cursor, 0)
		if err != nil {
			return all, err
		}
		if len(b.Events) == 0 {
			return all, nil
		}
		all = append(all, b.Events...)
		cursor = b.Cursor
	}
}

// FormatEvents writes events one a line, "origin type path[ <- old]", for
// a test's expectations and messages.
func FormatEvents(es []journal.Event) string {
	var b []string
	for _, e := range es {
		s := fmt.Sprintf("%s %s %s", e.Origin, e.Type, e.Path)
		if e.OldPath != "" {
			s += " <- " + e.OldPath
		}
		b = append(b, s)
	}
	return strings.Join(b, "\n")
}
