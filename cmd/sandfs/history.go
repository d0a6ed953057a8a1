package main

import (
	"flag"
	"fmt"
	"time"

	"sandfs/core/history"
	"sandfs/internal/statedir"
)

// historyFlags are serve's flags of the durable journal (core/history):
// where each sandbox keeps it and how much of it.
type historyFlags struct {
	off       bool
	maxAge    time.Duration
	maxEvents int64
	maxSize   sizeFlag
}

func (h *historyFlags) add(fs *flag.FlagSet) {
	d := history.DefaultRetention
	h.maxSize = sizeFlag(d.MaxBytes)
	fs.BoolVar(&h.off, "no-history", false, "keep the journal in memory only: nothing in the state directory, numbering from 1 at each start, no changes found at start")
	fs.DurationVar(&h.maxAge, "history-max-age", d.MaxAge, "prune journal events older than `DURATION` (0: no bound)")
	fs.Int64Var(&h.maxEvents, "history-max-events", d.MaxEvents, "keep at most `N` journal events per sandbox (0: no bound)")
	fs.Var(&h.maxSize, "history-max-size", "keep at most `SIZE` of journal per sandbox (0: no bound)")
}

func (h *historyFlags) retention() (history.Retention, error) {
	if h.maxAge < 0 || h.maxEvents < 0 || h.maxSize < 0 {
		return history.Retention{}, usagef("--history-max-age, --history-max-events and --history-max-size must not be negative")
	}
	return history.Retention{MaxAge: h.maxAge, MaxEvents: h.maxEvents, MaxBytes: int64(h.maxSize)}, nil
}

// stateFor is a sandbox's state directory, "" when there is none.
func stateFor(state, name string) string {
	if state == "" {
		return ""
	}
	return statedir.Sandbox(state, name)
}

// errHistoryState explains a state directory the journal cannot have.
func errHistoryState(err error) error {
	return fmt.Errorf("%w (the durable journal lives in the state directory; give --state DIR, or --no-history to keep it in memory)", err)
}
