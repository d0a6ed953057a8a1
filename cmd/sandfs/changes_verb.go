package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"sandfs/api"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
)

// The changes verb: the net change set since a point (GET
// /v1/sandboxes/NAME/changes, api.md §5 "Changes since a point").

var changesCommand = &command{
	name:     "changes",
	short:    "list what changed since a point, and who changed it",
	synopsis: "changes [--since SEQ|TIME|CHECKPOINT|fork] [--path P] [--actor A] [--origin O] [--diff] [--json]",
	about: `List the net change set of the sandbox since a point, one line a path:

  M /src/app.go  by agent-1 (api), 2 events, 14:03:02–14:03:09

(A added, M modified, D deleted, R renamed, shown as "R NEW <- OLD"; who: an
API request's X-Sandfs-Actor name, COMM (fuse) for a process on the mount,
external for a process writing the root; the time of the first and last
event, local). --since is a seq, an RFC 3339 time, a checkpoint id (cp_…) or
fork (on a fork: what it changed since it was made, diffed against the
parent's checkpoint); without it, since the oldest event the daemon keeps. --diff prints each text
file's unified diff below its line (a diff patch(1) applies). --actor takes
a name as listed (an API actor's name, fuse:COMM, external), --origin api,
fuse or external. Colour only on a terminal (not with NO_COLOR).`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var o changesOptions
		fs.StringVar(&o.since, "since", "", "the start point: a `SEQ`, an RFC 3339 TIME, a CHECKPOINT id (cp_…) or fork")
		fs.StringVar(&o.path, "path", "", "only changes at or under `P`")
		fs.StringVar(&o.actor, "actor", "", "only changes by `A` (an API actor's name, fuse:COMM, external)")
		fs.StringVar(&o.origin, "origin", "", "only changes of origin `O` (api, fuse, external)")
		fs.BoolVar(&o.diff, "diff", false, "print each text file's unified diff")
		fs.IntVar(&o.limit, "limit", 0, "at most `N` rows (default: the daemon's, 10000)")
		fs.IntVar(&o.maxDiff, "max-diff-bytes", 0, "cut each diff at `N` bytes (default: the daemon's, 65536)")
		return cf.run(e, nargs{0, 0, "changes takes no arguments (use --path)"}, func(ctx context.Context, c *client, _ []string) error {
			o.json, o.sandbox = cf.json, cf.sandbox
			o.colour = colourful(e.stdout, e.getenv)
			return changes(ctx, c, e, o)
		})
	},
}

type changesOptions struct {
	since, path, actor, origin, sandbox string
	diff, json, colour                  bool
	limit, maxDiff                      int
}

func changes(ctx context.Context, c *client, e *env, o changesOptions) error {
	q := url.Values{}
	for k, v := range map[string]string{"since": o.since, "path": o.path, "actor": o.actor, "origin": o.origin} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.diff {
		q.Set("diff", "true")
	}
	if o.limit != 0 {
		q.Set("limit", strconv.Itoa(o.limit))
	}
	if o.maxDiff != 0 {
		q.Set("max_diff_bytes", strconv.Itoa(o.maxDiff))
	}
	var cs api.Changes
	raw, err := c.callJSON(ctx, request{method: "GET", route: "/v1/sandboxes/" + url.PathEscape(o.sandbox) + "/changes", query: q}, &cs)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(e.stdout, raw)
	}
	now := time.Now()
	for _, r := range cs.Changes {
		if _, err := io.WriteString(e.stdout, formatChange(r, now, o.colour)); err != nil {
			return err
		}
	}
	if cs.Lost {
		fmt.Fprintf(e.stderr, "sandfs changes: events after seq %d are no longer kept: changes may be missing\n", cs.Since.Seq)
	}
	if cs.Truncated {
		fmt.Fprintf(e.stderr, "sandfs changes: only the first %d changes are shown (narrow with --path, or raise --limit)\n", cs.Count)
	}
	return nil
}

// ANSI colours of a row's letter and a diff's lines.
const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
	ansiBold   = "\x1b[1m"
)

// formatChange is a row's line, and its diff (or why none) below it.
func formatChange(r api.Change, now time.Time, colour bool) string {
	paint := painter(colour)
	letter, c := "?", ""
	switch r.Change {
	case "added":
		letter, c = "A", ansiGreen
	case "modified":
		letter, c = "M", ansiYellow
	case "deleted":
		letter, c = "D", ansiRed
	case "renamed":
		letter, c = "R", ansiCyan
	}
	var b strings.Builder
	b.WriteString(paint(c, letter) + " " + printable(r.Path))
	if r.IsDir {
		b.WriteString("/")
	}
	if r.RenamedFrom != "" {
		b.WriteString(" <- " + printable(r.RenamedFrom))
	}
	who := make([]string, len(r.Actors))
	for i, a := range r.Actors {
		who[i] = whoLabel(a)
	}
	events := "1 event"
	if r.Events != 1 {
		events = strconv.Itoa(r.Events) + " events"
	}
	when := clock(r.First.Time, now)
	if last := clock(r.Last.Time, now); last != when {
		when += "–" + last
	}
	fmt.Fprintf(&b, "  by %s, %s, %s\n", strings.Join(who, " + "), events, when)
	switch {
	case r.Binary:
		b.WriteString("    (binary: no diff)\n")
	case r.DiffUnavailable != "":
		b.WriteString("    (no diff: " + printable(r.DiffUnavailable) + ")\n")
	case r.Diff != "":
		writeDiff(&b, r.Diff, r.DiffTruncated, colour)
	}
	return b.String()
}

// painter paints with ANSI colours, or not at all.
func painter(colour bool) func(c, s string) string {
	return func(c, s string) string {
		if !colour || c == "" {
			return s
		}
		return c + s + ansiReset
	}
}

// writeDiff writes a unified diff, its headers, hunks and lines painted
// when colour.
func writeDiff(b *strings.Builder, diff string, truncated, colour bool) {
	paint := painter(colour)
	for _, l := range strings.SplitAfter(diff, "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
			b.WriteString(paint(ansiBold, strings.TrimSuffix(l, "\n")) + "\n")
		case strings.HasPrefix(l, "@@"):
			b.WriteString(paint(ansiCyan, strings.TrimSuffix(l, "\n")) + "\n")
		case strings.HasPrefix(l, "+"):
			b.WriteString(paint(ansiGreen, strings.TrimSuffix(l, "\n")) + "\n")
		case strings.HasPrefix(l, "-"):
			b.WriteString(paint(ansiRed, strings.TrimSuffix(l, "\n")) + "\n")
		default:
			b.WriteString(l)
		}
	}
	if truncated {
		b.WriteString("    (diff cut at its bound)\n")
	}
}

// whoLabel is an actor as the line says it: "agent-1 (api)", "vim (fuse)",
// "external"; a bare origin (an unnamed API request, an unknown command)
// is itself.
func whoLabel(a string) string {
	switch {
	case strings.HasPrefix(a, "fuse:"):
		return printable(a[len("fuse:"):]) + " (fuse)"
	case a == "api", a == "fuse", a == "external":
		return a
	}
	return printable(a) + " (api)"
}

// clock is an event's time, local, to the second; with the date when it is
// not today's.
func clock(ts string, now time.Time) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return "?"
	}
	t = t.In(now.Location())
	if y, m, d := t.Date(); y != now.Year() || m != now.Month() || d != now.Day() {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("15:04:05")
}

// colourful: w is a terminal and NO_COLOR is not set.
func colourful(w io.Writer, getenv func(string) string) bool {
	f, ok := w.(*os.File)
	return ok && getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}
