package core

import "golang.org/x/sys/unix"

// # A full state disk, a state directory removed
//
// While the durable journal cannot store events for want of space (the
// state directory's filesystem full, or its quota reached), a change that
// grows the tree, and so would have to be told, is refused with
// ErrStateFull: ENOSPC through the mirror, 507 over HTTP, the old content
// kept, as a quota refusal is. The same holds, with ErrStateRemoved, once
// the state directory was removed under the daemon: what it stores then
// goes to unlinked files, gone at the next start. That lasts until a
// restart makes the state anew. What shrinks or only renames the tree goes
// on (the way a person frees space when the root and the state share a
// disk); its events wait in the tail and in memory. What the daemon cannot
// refuse, an outside write, waits there too. The journal retries every
// second; the first batch it stores ends the refusals, with nothing to do
// by hand.

// StateError is a change refused because the journal cannot record it:
// ErrStateFull or ErrStateRemoved. It is ENOSPC too: the errno the mirror
// answers and REST turns into 507.
type StateError struct{ why string }

var (
	// ErrStateFull: the state directory's filesystem is full.
	ErrStateFull = &StateError{"the daemon's state disk is full"}
	// ErrStateRemoved: the state directory was removed under the daemon
	// (events would go to unlinked files, lost at the next start).
	ErrStateRemoved = &StateError{"the daemon's state directory was removed"}
)

func (e *StateError) Error() string {
	return e.why + ": the change could not be recorded, so it was refused"
}

// Unwrap is ENOSPC.
func (e *StateError) Unwrap() error { return unix.ENOSPC }

// StateFull reports whether the sandbox's journal cannot store events for
// want of space (false without a state directory).
func (s *Sandbox) StateFull() bool {
	if s.hist == nil {
		return false
	}
	return s.hist.Full()
}

// stateRefusal is why a change that grows the tree is refused now (nil:
// it is not). It is called at every reservation: two atomic loads.
func (s *Sandbox) stateRefusal() error {
	switch {
	case s.hist == nil:
		return nil // no journal on disk: nothing to refuse for
	case s.hist.Removed():
		return ErrStateRemoved
	case s.hist.Full():
		return ErrStateFull
	}
	return nil
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
	case s.hist.Removed():
		return "state directory removed"
	case full:
		return "state disk full"
	case s.hist.Damaged() != nil:
		return "journal database damaged: " + s.hist.Damaged().Error()
	case err != nil:
		return "journal database failing: " + err.Error()
	}
	return ""
}
