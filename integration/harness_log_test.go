package integration

import (
	"strings"
	"time"
)

// The daemon's log as the harness keeps it.

// Log is what the daemon printed so far.
func (d *Daemon) Log() string { return d.log.String() }

// LogHas waits (up to 60 s) until the daemon's log holds s, and reports
// whether it does: the log reaches the test through a pipe, later than
// the daemon's answers, and a line logged once it serves (the console's
// URL) may come after /health answered.
func (d *Daemon) LogHas(s string) bool {
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(d.Log(), s); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
