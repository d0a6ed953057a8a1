package core

import "sandfs/core/journal"

// landing is the claim of a write that lands by renaming its temp file
// over its target (WriteFile, Upload): once landed it ends at that
// rename's echo (EchoAt, DoneEcho), with no sentinel; a write that fails
// ends it by a sentinel (Done), since what it left for the kernel to tell
// (a temp file made and removed) is not known to end with one event.
type landing struct {
	c      *Claim
	landed bool
}

// claimLanding opens the claim of a write of the file at API path ap;
// end must be called (deferred) once the write returns.
func (s *Sandbox) claimLanding(ap string) *landing {
	return &landing{c: s.Claim(ap)}
}

// temp extends the claim to the temp file at API path p, whose rename over
// the target is the write's last echo: the temp name is the write's alone,
// so two writes of one target never take each other's.
func (l *landing) temp(p string) { l.c.EchoAt(p, journal.Rename) }

// land says the temp file was renamed over the target: the claim ends at
// that rename's echo.
func (l *landing) land() {
	l.landed = true
	l.c.DoneEcho()
}

// end ends the claim of a write that did not land, by a sentinel.
func (l *landing) end() {
	if !l.landed {
		l.c.Done()
	}
}
