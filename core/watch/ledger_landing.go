package watch

import "sandfs/core/journal"

// Landing is the claim of a write that lands by renaming its temp file
// over its target (WriteFile, Upload): once landed it ends at that
// rename's echo (EchoAt, DoneEcho), with no sentinel; a write that fails
// ends it by a sentinel (Done), since what it left for the kernel to tell
// (a temp file made and removed) is not known to end with one event.
type Landing struct {
	c      *Claim
	landed bool
}

// ClaimLanding opens the claim of a write of the file at API path ap;
// End must be called (deferred) once the write returns.
func (w *Watch) ClaimLanding(ap string) *Landing {
	return &Landing{c: w.Claim(ap)}
}

// Temp extends the claim to the temp file at API path p, whose rename over
// the target is the write's last echo: the temp name is the write's alone,
// so two writes of one target never take each other's.
func (l *Landing) Temp(p string) { l.c.EchoAt(p, journal.Rename) }

// Land says the temp file was renamed over the target: the claim ends at
// that rename's echo.
func (l *Landing) Land() {
	l.landed = true
	l.c.DoneEcho()
}

// End ends the claim of a write that did not land, by a sentinel.
func (l *Landing) End() {
	if !l.landed {
		l.c.Done()
	}
}
