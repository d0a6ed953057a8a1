package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"sandfs/core/journal"
)

// The watch verb: one watcher through the AIO watch routes (api.md §4),
// streamed with server-sent events until SIGINT, then released; the
// stream and --follow are in watch_stream.go.

var watchCommand = &command{
	name:     "watch",
	short:    "print changes as they happen",
	synopsis: "watch [--json] [--debounce MS] [--follow] [--exclude PAT]... [--include PAT]... [--all] [PATH]",
	about: `Watch PATH (a directory, recursively, or a file; default the daemon's working
directory) and print each change as it happens, whoever made it: the API,
the FUSE mount, or a process writing the root directly. One line an event:

  TIME ORIGIN TYPE PATH [<- OLD PATH] [by WHO]

(TIME local, to the millisecond; TYPE create, write, remove, rename or chmod;
WHO the actor an API request named with X-Sandfs-Actor, or for the mount
the calling process as COMM[PID]).
--json prints each event as the daemon's JSON object, one a line. A line
"events were lost" (--json: an object with "overflow": true) says the daemon
dropped events this watcher had not delivered.
Names excluded by default: ` + strings.Join(journal.DefaultExcludes, " ") + `
(a name or glob matching any path component). --exclude PAT adds one,
--all drops the defaults (--all --exclude PAT: only PAT), --include PAT
reports only paths whose name or path matches PAT (both repeatable).
Runs until interrupted (SIGINT, SIGTERM), then stops the watcher (POST
/v2/watch, GET /v2/watch/ID/events, DELETE /v2/watch/ID) and exits 0.
When the daemon stops or the connection is lost it says "the daemon
stopped" and exits 1; with --follow it reconnects instead (retrying for
up to ` + followFor.String() + `) and goes on from the last event printed,
none lost or repeated while the daemon keeps its journal (--state).`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var o watchOptions
		fs.IntVar(&o.debounce, "debounce", 0, "coalesce repeated writes of a file within `MS` milliseconds (50–5000; default: the daemon's, 300)")
		fs.BoolVar(&o.follow, "follow", false, "when the daemon stops or the connection is lost, reconnect and go on (up to "+followFor.String()+")")
		fs.Var(&o.exclude, "exclude", "also skip paths with a component matching `PAT` (repeatable)")
		fs.Var(&o.include, "include", "report only paths whose name or path matches `PAT` (repeatable)")
		fs.BoolVar(&o.all, "all", false, "no default excludes ("+strings.Join(journal.DefaultExcludes, " ")+"): watch everything")
		return cf.run(e, nargs{0, 1, "watch takes at most one PATH"}, func(ctx context.Context, c *client, args []string) error {
			o.path = "."
			if len(args) == 1 {
				o.path = args[0]
			}
			o.asJSON = cf.json
			if err := cf.defaultOnly("watch"); err != nil {
				return err // the named family's websocket is for the console and clients of it
			}
			return watch(ctx, c, e.stdout, e.stderr, o)
		})
	},
}

// watchOptions is what the watch flags say.
type watchOptions struct {
	path     string
	debounce int
	asJSON   bool
	follow   bool
	exclude  multiFlag
	include  multiFlag
	all      bool
}

// body is the POST /v2/watch request: the daemon's default excludes unless
// --exclude or --all change them.
func (o watchOptions) body() map[string]any {
	body := map[string]any{"path": o.path}
	if o.debounce != 0 {
		body["debounce"] = o.debounce
	}
	if o.all || len(o.exclude) > 0 {
		ex := []string{}
		if !o.all {
			ex = append(ex, journal.DefaultExcludes...)
		}
		body["exclude"] = append(ex, o.exclude...)
	}
	if len(o.include) > 0 {
		body["include_patterns"] = []string(o.include)
	}
	return body
}

// aioAnswer is the AIO envelope.
type aioAnswer[T any] struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Data    T      `json:"data"`
}

type watchCreated struct {
	WatcherID     string `json:"watcher_id"`
	Path          string `json:"path"`
	InitialCursor uint64 `json:"initial_cursor"`
}

type watchEvent struct {
	Seq       uint64  `json:"seq"`
	Type      string  `json:"type"`
	Path      string  `json:"path"`
	OldPath   string  `json:"old_path"`
	Timestamp float64 `json:"timestamp"`
	Origin    string  `json:"origin"`
	Actor     string  `json:"actor"` // api: X-Sandfs-Actor
	Pid       *uint32 `json:"pid"`   // fuse
	Comm      string  `json:"comm"`  // fuse, when known
}

// formatEvent is the human line of one event.
func formatEvent(ev watchEvent) string {
	sec, frac := math.Modf(ev.Timestamp)
	ts := time.Unix(int64(sec), int64(frac*1e9)).Format("15:04:05.000")
	line := fmt.Sprintf("%s %-8s %-6s %s", ts, ev.Origin, ev.Type, printable(ev.Path))
	if ev.OldPath != "" {
		line += " <- " + printable(ev.OldPath)
	}
	switch {
	case ev.Actor != "":
		line += " by " + printable(ev.Actor)
	case ev.Comm != "" && ev.Pid != nil:
		line += fmt.Sprintf(" by %s[%d]", printable(ev.Comm), *ev.Pid)
	}
	return line
}

// readSSE calls f for each event of a text/event-stream until the stream
// ends (nil) or fails.
func readSSE(r io.Reader, f func(event, data string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var event string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				if err := f(event, strings.Join(data, "\n")); err != nil {
					return err
				}
			}
			event, data = "", nil
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event = value
			case "data":
				data = append(data, value)
			}
		}
	}
	return sc.Err()
}
