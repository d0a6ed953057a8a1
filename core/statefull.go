package core

import "golang.org/x/sys/unix"

// # A full state disk
//
// While the durable journal cannot store events for want of space (the
// state directory's filesystem full, or its quota reached), a change that
// grows the tree, and so would have to be told, is refused with
// ErrStateFull: ENOSPC through the mirror, 507 over HTTP, the old content
// kept, as a quota refusal is. What shrinks or only renames the tree goes
// on (the way a person frees space when the root and the state share a
// disk); its events wait in the tail and in memory. What the daemon cannot
// refuse, an outside write, waits there too. The journal retries every
// second; the first batch it stores ends the refusals, with nothing to do
// by hand.

// ErrStateFull is what a change refused while the state disk is full is
// (errors.Is); it is ENOSPC too.
var ErrStateFull = &stateFullError{}

type stateFullError struct{}

func (*stateFullError) Error() string {
	return "the daemon's state disk is full: the change could not be recorded, so it was refused"
}

// Unwrap is ENOSPC: the errno the mirror answers and REST turns into 507.
func (*stateFullError) Unwrap() error { return unix.ENOSPC }

// StateFull reports whether the sandbox's journal cannot store events for
// want of space (false without a state directory).
func (s *Sandbox) StateFull() bool {
	if s.hist == nil {
		return false
	}
	return s.hist.Full()
}

// HistoryTrouble says what keeps the sandbox's journal from storing
// events or reading them back: "" when nothing does, "state disk full",
// or the database's damage or error.
func (s *Sandbox) HistoryTrouble() string {
	if s.hist == nil {
		return ""
	}
	full, err := s.hist.Failing()
	switch {
	case full:
		return "state disk full"
	case s.hist.Damaged() != nil:
		return "journal database damaged: " + s.hist.Damaged().Error()
	case err != nil:
		return "journal database failing: " + err.Error()
	}
	return ""
}
