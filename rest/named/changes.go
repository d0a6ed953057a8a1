package named

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/changes"
	"sandfs/core/journal"
	"sandfs/rest/httpkit"
)

// Changes since a point (api.md §5, "Changes since a point"): GET
// /v1/sandboxes/{name}/changes, the net change set of changes.Since
// in the named family's shape.

// namedChangesOf serves GET /changes?since&path&workingDir&actor&origin&diff&max_diff_bytes&limit.
func (s *Family) namedChangesOf(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb, q, err := s.namedQuery(r, ps)
	if err != nil {
		return err
	}
	cq, err := changesQuery(q, func() (changes.Fork, bool) { return s.host.ForkOf(r.Context()) })
	if err != nil {
		return err
	}
	if _, ok := q["path"]; ok {
		if cq.Path, err = namedQueryPath(sb, q); err != nil {
			return err
		}
	} else if _, ok := q["workingDir"]; ok {
		// Alone it filters nothing, but a bad one is refused as on every route.
		if _, err = namedPath(sb, q.Get("workingDir"), ".", true); err != nil {
			return err
		}
	}
	cs, err := changes.Since(r.Context(), s.host.SandboxOf(r.Context()), cq)
	if err != nil {
		return err
	}
	out := api.Changes{Since: api.ChangesSince{Seq: cs.SinceSeq, Checkpoint: cs.SinceCheckpoint, Fork: cs.SinceFork},
		UntilSeq: cs.UntilSeq, Lost: cs.Lost, Changes: make([]api.Change, 0, len(cs.Rows)), Truncated: cs.Truncated}
	if !cs.SinceTime.IsZero() {
		out.Since.Time = cs.SinceTime.UTC().Format(time.RFC3339Nano)
	}
	_, skipped := core.WithSkippedNames(r.Context())
	for _, row := range cs.Rows {
		if !utf8.ValidString(row.Path) || !utf8.ValidString(row.RenamedFrom) {
			skipped.Add(1) // httpkit/names.go
			continue
		}
		out.Changes = append(out.Changes, api.Change{Path: row.Path, Change: row.Change, RenamedFrom: row.RenamedFrom,
			IsDir: row.IsDir, Size: row.Size, Events: row.Events, First: changeEvent(row.First), Last: changeEvent(row.Last),
			Actors: row.Actors, Diff: row.Diff, DiffTruncated: row.DiffTruncated, Binary: row.Binary, DiffUnavailable: row.DiffUnavailable})
	}
	out.Count = len(out.Changes)
	httpkit.NoteSkipped(w, skipped)
	return httpkit.WriteJSON(w, http.StatusOK, out)
}

func changeEvent(e journal.Event) api.ChangeEvent {
	return api.ChangeEvent{Seq: e.Seq, Time: e.Time.UTC().Format(time.RFC3339Nano), Type: string(e.Type),
		Origin: string(e.Origin), Actor: e.Actor, Pid: e.Pid, Comm: e.Comm}
}

// changesQuery reads the query's start point, filters and bounds; the
// path is the caller's (it needs the sandbox), and so is forkOf, what the
// sandbox was forked from (since=fork).
func changesQuery(q url.Values, forkOf func() (changes.Fork, bool)) (changes.Query, error) {
	var cq changes.Query
	if err := parseSince(q.Get("since"), &cq, forkOf); err != nil {
		return cq, err
	}
	cq.Actor = q.Get("actor")
	switch o := journal.Origin(q.Get("origin")); o {
	case "", journal.API, journal.Mirror, journal.External:
		cq.Origin = o
	default:
		return cq, httpkit.InvalidRequest("query parameter \"origin\" must be api, fuse or external, got %q", o)
	}
	var err error
	if cq.Diff, err = httpkit.BoolQuery(q, "diff", false, httpkit.PlainDialect); err != nil {
		return cq, err
	}
	for _, b := range []struct {
		name string
		to   *int
		max  int
	}{{"limit", &cq.Limit, changes.MaxLimit}, {"max_diff_bytes", &cq.MaxDiffBytes, changes.MaxDiffTotal}} {
		n, err := httpkit.IntQuery[int](q, b.name, httpkit.PlainDialect)
		if err != nil {
			return cq, err
		}
		if n != nil && (*n < 1 || *n > b.max) {
			return cq, httpkit.InvalidRequest("query parameter %q must be between 1 and %d, got %d", b.name, b.max, *n)
		}
		if n != nil {
			*b.to = *n
		}
	}
	return cq, nil
}

// parseSince reads since: a seq (digits), a checkpoint id (cp_…), "fork"
// (since the sandbox, a fork, was made) or an RFC 3339 time; "" is since
// the oldest event kept.
func parseSince(v string, cq *changes.Query, forkOf func() (changes.Fork, bool)) error {
	switch {
	case v == "":
		return nil
	case v == "fork":
		f, ok := forkOf()
		if !ok {
			return httpkit.InvalidRequest("query parameter \"since\": fork: this sandbox is not a fork (POST /v1/sandboxes with \"from\" makes one)")
		}
		cq.SinceFork = &f
		return nil
	case strings.HasPrefix(v, "cp_"):
		cq.SinceCheckpoint = v
		return nil
	case strings.Trim(v, "0123456789") == "":
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return httpkit.InvalidRequest("query parameter \"since\": seq %q is out of range", v)
		}
		cq.SinceSeq = n
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil && strings.Contains(v, " ") {
		// An offset's "+" sent unescaped reads as a space.
		t, err = time.Parse(time.RFC3339Nano, strings.Replace(v, " ", "+", 1))
	}
	if err != nil {
		return httpkit.InvalidRequest("query parameter \"since\" must be a seq, an RFC 3339 time, a checkpoint id (cp_…) or fork, got %q", v)
	}
	if t.IsZero() {
		return nil
	}
	cq.SinceTime = t
	return nil
}
