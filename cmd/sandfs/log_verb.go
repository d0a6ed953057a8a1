package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// The log verb: the journal read back (GET /v1/sandboxes/NAME/events),
// the audit log that outlives the daemon.

var logCommand = &command{
	name:     "log",
	short:    "print the journal: who changed what, kept across restarts",
	synopsis: "log [--json] [--sandbox NAME] [--since SEQ | --last N] [--path P] [--actor A] [--origin O]",
	about: `Print the journal's kept events, oldest first, one a line, as watch does:

  TIME ORIGIN TYPE PATH [<- OLD PATH] [by WHO] [(found at start)]

--since SEQ prints the events after SEQ; --last N the journal's last N
(default 50). --path keeps events at or under P, --actor those of one API
actor (X-Sandfs-Actor) or of a mount process by command name (fuse:COMM),
--origin those of api, fuse or external. "(found at start)" marks an
outside change made while the daemon was down. A line "events were lost"
says retention no longer keeps some after --since. --json prints each
event as the daemon's JSON object, one a line.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		sandbox := &cf.sandbox
		since := fs.Int64("since", -1, "print the events after `SEQ`")
		last := fs.Int("last", 50, "print the journal's last `N` events (1–10000)")
		path := fs.String("path", "", "only events at or under `P`")
		actor := fs.String("actor", "", "only events by `A` (an X-Sandfs-Actor name, or fuse:COMM)")
		origin := fs.String("origin", "", "only events of `O`: api, fuse or external")
		return cf.run(e, nargs{0, 0, "log takes no arguments (use --path, --since or --last)"}, func(ctx context.Context, c *client, _ []string) error {
			q := url.Values{}
			if *since >= 0 {
				q.Set("since", strconv.FormatInt(*since, 10))
			} else {
				q.Set("last", strconv.Itoa(*last))
			}
			for k, v := range map[string]string{"path": *path, "actor": *actor, "origin": *origin} {
				if v != "" {
					q.Set(k, v)
				}
			}
			route := "/v1/sandboxes/" + url.PathEscape(*sandbox) + "/events"
			for {
				var page struct {
					Events   []json.RawMessage `json:"events"`
					Cursor   uint64            `json:"cursor"`
					Overflow bool              `json:"overflow"`
					More     bool              `json:"more"`
				}
				if _, err := c.callJSON(ctx, request{method: "GET", route: route, query: q}, &page); err != nil {
					return err
				}
				if page.Overflow && q.Has("since") {
					if cf.json {
						fmt.Fprintln(e.stdout, `{"overflow":true}`)
					} else {
						fmt.Fprintln(e.stdout, "events were lost: the journal no longer keeps some after", q.Get("since"))
					}
				}
				for _, raw := range page.Events {
					if cf.json {
						fmt.Fprintln(e.stdout, string(raw))
						continue
					}
					var ev namedEvent
					if err := json.Unmarshal(raw, &ev); err != nil {
						return err
					}
					fmt.Fprintln(e.stdout, ev.line())
				}
				if !page.More {
					return nil
				}
				q.Del("last")
				q.Set("since", strconv.FormatUint(page.Cursor, 10))
			}
		})
	},
}

// namedEvent is an event of the named family (GET …/events).
type namedEvent struct {
	Seq          uint64  `json:"seq"`
	Type         string  `json:"type"`
	Path         string  `json:"path"`
	OldPath      string  `json:"oldPath"`
	Timestamp    string  `json:"timestamp"`
	Origin       string  `json:"origin"`
	Actor        string  `json:"actor"`
	Pid          *uint32 `json:"pid"`
	Comm         string  `json:"comm"`
	FoundAtStart bool    `json:"foundAtStart"`
}

// line is the event as watch prints one.
func (ev namedEvent) line() string {
	t, _ := time.Parse(time.RFC3339Nano, ev.Timestamp)
	s := formatEvent(watchEvent{Seq: ev.Seq, Type: ev.Type, Path: ev.Path, OldPath: ev.OldPath, Origin: ev.Origin, Actor: ev.Actor,
		Pid: ev.Pid, Comm: ev.Comm, Timestamp: float64(t.UnixNano()) / 1e9})
	if ev.FoundAtStart {
		s += " (found at start)"
	}
	return s
}
