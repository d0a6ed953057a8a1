package named

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"sandfs/core/journal"
	"sandfs/rest/httpkit"
)

// The journal read back: GET /v1/sandboxes/{name}/events, the audit log.
// It reads the kept events (from the durable journal across restarts)
// after a seq, filtered, a page at a time; the console opens its feed with
// it and `sandfs log` prints it.

const (
	eventsDefaultLimit = 1000
	eventsMaxLimit     = 10_000
)

type EventsPage struct {
	Events []wsEventFields `json:"events"`
	// Cursor is the last seq read: pass it as since for the next page.
	Cursor uint64 `json:"cursor"`
	// Oldest is the oldest seq kept, Latest the journal's newest.
	Oldest uint64 `json:"oldest"`
	Latest uint64 `json:"latest"`
	// Overflow: events after since are no longer kept (retention).
	Overflow bool `json:"overflow"`
	// More: the page is full; more events follow the cursor.
	More bool `json:"more"`
}

// wsEventFields is an event as the named family shapes it, without the
// socket's message type (core/journal/fields.go: the fleet's stream sends
// the same shape).
type wsEventFields = journal.Fields

func eventFields(e journal.Event) wsEventFields { return journal.FieldsOf(e) }

// namedEvents: GET /events?since&last&limit&path&actor&origin.
func (s *Family) namedEvents(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.sandbox(r)
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	var f journal.Filter
	if _, ok := q["path"]; ok || q.Has("workingDir") {
		p := q.Get("path")
		if !ok {
			p = "." // a workingDir alone is checked as every route checks it
		}
		ap, err := namedPath(sb, q.Get("workingDir"), p, true)
		if err != nil {
			return err
		}
		if ok {
			f.Path = ap
		}
	}
	f.Actor = q.Get("actor")
	switch o := journal.Origin(q.Get("origin")); o {
	case "", journal.API, journal.Mirror, journal.External:
		f.Origin = o
	default:
		return httpkit.InvalidRequest("origin must be api, fuse or external, got %q", o)
	}
	since, err := httpkit.IntQuery[int64](q, "since", httpkit.PlainDialect)
	if err != nil {
		return err
	}
	last, err := httpkit.IntQuery[int64](q, "last", httpkit.PlainDialect)
	if err != nil {
		return err
	}
	limit, err := httpkit.IntQuery[int](q, "limit", httpkit.PlainDialect)
	if err != nil {
		return err
	}
	n := eventsDefaultLimit
	if limit != nil {
		if *limit < 1 || *limit > eventsMaxLimit {
			return httpkit.InvalidRequest("limit must be 1 to %d, got %d", eventsMaxLimit, *limit)
		}
		n = *limit
	}
	j := sb.Journal()
	page := EventsPage{Events: []wsEventFields{}, Latest: j.Seq(), Oldest: j.Oldest()}
	from := page.Oldest - min(page.Oldest, 1) // by default, from the oldest kept
	switch {
	case since != nil && last != nil:
		return httpkit.InvalidRequest("give since or last, not both")
	case since != nil:
		if *since < 0 {
			return httpkit.InvalidRequest("since must be 0 or more, got %d", *since)
		}
		from = uint64(*since)
	case last != nil:
		if *last < 1 || *last > eventsMaxLimit {
			return httpkit.InvalidRequest("last must be 1 to %d, got %d", eventsMaxLimit, *last)
		}
		from = page.Latest - min(page.Latest, uint64(*last))
		if from+1 < page.Oldest {
			from = page.Oldest - 1 // the newest N kept: nothing was asked before them
		}
	}
	jp, err := j.ReadPage(r.Context(), from, n, f)
	if err != nil {
		return err
	}
	for _, e := range jp.Events {
		page.Events = append(page.Events, eventFields(e))
	}
	page.Cursor, page.More, page.Overflow = jp.Cursor, jp.More, jp.Lost
	return httpkit.WriteJSON(w, http.StatusOK, page)
}
