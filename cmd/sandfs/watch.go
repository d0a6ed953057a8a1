package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The watch verb: one watcher through the AIO watch routes (api.md §4),
// streamed with server-sent events until SIGINT, then released.

var watchCommand = &command{
	name:     "watch",
	short:    "print changes as they happen",
	synopsis: "watch [--json] [--debounce MS] [PATH]",
	about: `Watch PATH (a directory, recursively, or a file; default the daemon's working
directory) and print each change as it happens, whoever made it: the API,
the FUSE mount, or a process writing the root directly. One line an event:

  TIME ORIGIN TYPE PATH [<- OLD PATH] [by WHO]

(TIME local, to the millisecond; TYPE create, write, remove, rename or chmod;
WHO the actor an API request named with X-Sandfs-Actor, or for the mount
the calling process as COMM[PID]).
--json prints each event as the daemon's JSON object, one a line. A line
"events were lost" (--json: an object with "overflow": true) says the daemon
dropped events this watcher had not delivered. Runs until interrupted
(SIGINT, SIGTERM), then stops the watcher (POST /v2/watch, GET
/v2/watch/ID/events, DELETE /v2/watch/ID) and exits 0.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		debounce := fs.Int("debounce", 0, "coalesce repeated writes of a file within `MS` milliseconds (50–5000; default: the daemon's, 300)")
		return func(ctx context.Context, args []string) error {
			if len(args) > 1 {
				return usagef("watch takes at most one PATH")
			}
			p := "."
			if len(args) == 1 {
				p = args[0]
			}
			c, err := cf.client(e.getenv)
			if err != nil {
				return err
			}
			return watch(ctx, c, e.stdout, e.stderr, p, *debounce, cf.json)
		}
	},
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

func watch(ctx context.Context, c *client, stdout, stderr io.Writer, p string, debounce int, asJSON bool) error {
	body := map[string]any{"path": p}
	if debounce != 0 {
		body["debounce"] = debounce
	}
	var created aioAnswer[watchCreated]
	if _, err := c.callJSON(ctx, jsonRequest("POST", "/v2/watch", body), &created); err != nil {
		return err
	}
	if !created.Success || created.Data.WatcherID == "" {
		return fmt.Errorf("watch %s: %s", p, created.Message)
	}
	id := created.Data.WatcherID
	defer func() {
		// The interrupted ctx is done: release the watcher on a fresh one.
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if resp, err := c.do(dctx, request{method: "DELETE", route: "/v2/watch/" + url.PathEscape(id)}); err == nil {
			resp.Body.Close()
		}
	}()
	q := url.Values{"cursor": {strconv.FormatUint(created.Data.InitialCursor, 10)}}
	resp, err := c.do(ctx, request{method: "GET", route: "/v2/watch/" + url.PathEscape(id) + "/events", query: q})
	if err != nil {
		return interrupted(ctx, err)
	}
	defer resp.Body.Close()
	err = readSSE(resp.Body, func(event, data string) error {
		switch event {
		case "file_change":
			if asJSON {
				return writeJSON(stdout, []byte(data))
			}
			var ev watchEvent
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				return fmt.Errorf("the daemon sent an event that is not the JSON expected: %w", err)
			}
			_, err := fmt.Fprintln(stdout, formatEvent(ev))
			return err
		case "overflow":
			if asJSON {
				return writeJSON(stdout, []byte(data))
			}
			_, err := fmt.Fprintln(stderr, "sandfs watch: events were lost (the daemon's buffer overflowed)")
			return err
		}
		return nil
	})
	if err == nil {
		return fmt.Errorf("watch %s: the daemon ended the stream (watcher stopped)", created.Data.Path)
	}
	return interrupted(ctx, err)
}

// interrupted turns the error of a stream cut by SIGINT into success: an
// interrupt is how watch ends.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
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
