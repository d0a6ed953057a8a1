package mcp

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/core/journal"
)

// The log tool: the sandbox's journal, event by event, as the named
// family's GET /v1/sandboxes/{name}/events reads it (journal.ReadPage),
// where changes_since answers the net change of each path.

// An answer is text an agent reads whole, so a page is smaller than the
// REST route's (1000 by default, 10,000 at most).
const (
	logDefaultLimit = 100
	logMaxLimit     = 1000
)

type logIn struct {
	Path   string `json:"path,omitempty" jsonschema:"Only events at or under this path (either side of a rename)"`
	Since  *int64 `json:"since,omitempty" jsonschema:"Only events after this journal seq (an answer's cursor); default: from the oldest kept"`
	Last   int    `json:"last,omitempty" jsonschema:"Only the newest N events kept, 1 to 1000 (not with since)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"At most this many events, 1 to 1000 (default 100)"`
	Actor  string `json:"actor,omitempty" jsonschema:"Only events of this actor: an API actor's name, or fuse:COMM for a process on the mount"`
	Origin string `json:"origin,omitempty" jsonschema:"Only events of this origin: api, fuse or external"`
}

// logOut is the structured answer: the REST route's page, in its field
// names.
type logOut struct {
	Events   []journal.Fields `json:"events"`
	Cursor   uint64           `json:"cursor"`
	Oldest   uint64           `json:"oldest"`
	Latest   uint64           `json:"latest"`
	Overflow bool             `json:"overflow"`
	More     bool             `json:"more"`
}

func (f *Family) addLogTool(s *sdk.Server) {
	addTool(f, s, &sdk.Tool{Name: "log", Annotations: ro("Journal Log"),
		Description: "The sandbox's journal, oldest first (last: the newest N): one line per change (seq, time UTC, type, path, origin, actor), " +
			"whoever made it (a tool, the REST API, a process on the mount, the host). Give the answer's cursor as since for the next page."},
		func(ctx context.Context, req *sdk.CallToolRequest, in logIn) (*sdk.CallToolResult, logOut, error) {
			return f.journalLog(ctx, in)
		})
}

func (f *Family) journalLog(ctx context.Context, in logIn) (*sdk.CallToolResult, logOut, error) {
	sb, err := f.sandbox(ctx)
	if err != nil {
		return nil, logOut{}, err
	}
	var flt journal.Filter
	if in.Path != "" {
		if flt.Path, err = sb.Clean(in.Path); err != nil {
			return nil, logOut{}, err
		}
	}
	flt.Actor = in.Actor
	switch o := journal.Origin(in.Origin); o {
	case "", journal.API, journal.Mirror, journal.External:
		flt.Origin = o
	default:
		return nil, logOut{}, errorf("origin must be api, fuse or external, got %q", in.Origin)
	}
	n := logDefaultLimit
	if in.Limit != 0 {
		if in.Limit < 1 || in.Limit > logMaxLimit {
			return nil, logOut{}, errorf("limit must be between 1 and %d, got %d", logMaxLimit, in.Limit)
		}
		n = in.Limit
	}
	j := sb.Journal()
	oldest, latest := j.Oldest(), j.Seq()
	from := oldest - min(oldest, 1) // by default, from the oldest kept
	switch {
	case in.Since != nil && in.Last != 0:
		return nil, logOut{}, errorf("give since or last, not both")
	case in.Since != nil:
		if *in.Since < 0 {
			return nil, logOut{}, errorf("since must be 0 or more, got %d", *in.Since)
		}
		from = uint64(*in.Since)
	case in.Last != 0:
		if in.Last < 1 || in.Last > logMaxLimit {
			return nil, logOut{}, errorf("last must be between 1 and %d, got %d", logMaxLimit, in.Last)
		}
		// As the events route's last: the newest N kept, nothing before
		// the oldest.
		from = max(latest-min(latest, uint64(in.Last)), from)
	}
	p, err := j.ReadPage(ctx, from, n, flt)
	if err != nil {
		return nil, logOut{}, err
	}
	out := logOut{Events: make([]journal.Fields, len(p.Events)), Cursor: p.Cursor, Oldest: p.Oldest, Latest: p.Latest,
		Overflow: p.Lost, More: p.More}
	var w strings.Builder
	if p.Lost {
		fmt.Fprintf(&w, "(events after seq %d are no longer kept; the oldest kept is %d)\n", from, p.Oldest)
	}
	for i, e := range p.Events {
		out.Events[i] = journal.FieldsOf(e)
		w.WriteString(logLine(e))
	}
	fmt.Fprintf(&w, "%d events; cursor %d, latest %d", len(p.Events), p.Cursor, p.Latest)
	if p.More {
		fmt.Fprintf(&w, " (more past these: give since %d)", p.Cursor)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: w.String()}}}, out, nil
}

// logLine is one event as a line: seq, time, type, path (old -> new for a
// rename, each quoted), origin and who, "-" for no one named.
func logLine(e journal.Event) string {
	p := strconv.Quote(e.Path) // a name may hold a space or a newline
	if e.OldPath != "" {
		p = strconv.Quote(e.OldPath) + " -> " + p
	}
	who := e.Actor
	if e.Origin == journal.Mirror && e.Comm != "" {
		who = "fuse:" + e.Comm
	}
	if who == "" {
		who = "-"
	}
	return fmt.Sprintf("%d %s %s %s %s %s\n", e.Seq, e.Time.UTC().Format(time.RFC3339Nano), e.Type, p, e.Origin, who)
}
