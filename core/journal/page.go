package journal

import (
	"context"
	"strings"
)

// The journal read back a page at a time, filtered: the audit log of the
// named family's GET /v1/sandboxes/{name}/events and the MCP log tool.
// One reading, so the two answer the same events for the same question.

// Filter keeps the events a reader asked for; a zero field keeps all.
type Filter struct {
	// Path: the path or under it, either side of a rename.
	Path string
	// Actor: an API actor's name, or "fuse:COMM" for a process on the
	// mount by its command name.
	Actor  string
	Origin Origin
}

// Match reports whether f keeps e.
func (f Filter) Match(e Event) bool {
	if f.Origin != "" && e.Origin != f.Origin {
		return false
	}
	if f.Actor != "" && !actorIs(e, f.Actor) {
		return false
	}
	return f.Path == "" || within(e.Path, f.Path) || e.OldPath != "" && within(e.OldPath, f.Path)
}

func actorIs(e Event, who string) bool {
	if comm, ok := strings.CutPrefix(who, "fuse:"); ok {
		return e.Origin == Mirror && e.Comm == comm
	}
	return e.Actor == who
}

// Page is what ReadPage found.
type Page struct {
	// Events are the reportable events f kept (Reportable's form).
	Events []Event
	// Cursor is the last seq read: the from of the next page.
	Cursor uint64
	// Oldest is the oldest seq kept, Latest the journal's newest when the
	// page was read: later events wait for the next page.
	Oldest, Latest uint64
	// Lost: events after from are no longer kept (retention).
	Lost bool
	// More: the page is full; more events follow the cursor.
	More bool
}

// ReadPage reads at most n events after seq from that f keeps, up to the
// newest when it starts.
func (j *Journal) ReadPage(ctx context.Context, from uint64, n int, f Filter) (Page, error) {
	p := Page{Events: []Event{}, Latest: j.Seq(), Oldest: j.Oldest(), Cursor: from}
	lost, err := j.Scan(ctx, from, func(e Event) bool {
		if e.Seq > p.Latest {
			return false
		}
		if len(p.Events) == n {
			p.More = true
			return false
		}
		p.Cursor = e.Seq
		if e, ok := Reportable(e); ok && f.Match(e) {
			p.Events = append(p.Events, e)
		}
		return true
	})
	p.Lost = lost
	return p, err
}
