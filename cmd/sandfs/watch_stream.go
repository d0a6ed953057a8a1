package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"
)

// # The stream of the watch verb, and --follow
//
// watch creates one watcher (POST /v2/watch) and reads its SSE stream
// (GET /v2/watch/ID/events?cursor=N), keeping the seq of the last event it
// printed as its cursor. The stream ends one of four ways:
//
//   - SIGINT or SIGTERM: the watcher is released (DELETE) and watch exits 0;
//   - the daemon stops: its last event, "shutdown", says so;
//   - the connection is lost (the daemon was killed, the network went);
//   - the stream ends cleanly with no shutdown event: the watcher was
//     stopped by another client (an error).
//
// For the second and third, watch says "the daemon stopped" and exits 1,
// or, with --follow, reconnects: it retries with a growing delay (from
// followFirst to followMax) for up to followFor, asks for the same watcher
// again from its cursor (the daemon's store keeps watchers across a
// restart), and re-creates it when the daemon no longer has it. Either way
// the stream resumes after the cursor: a cursor from before the watcher
// began is answered from the journal's store, so with --state the events
// made while watch was away are printed once, none lost or repeated.

const (
	followFirst = 100 * time.Millisecond
	followMax   = 2 * time.Second
	followFor   = time.Minute
)

// errStreamStopped and errStreamLost are how a stream ended when the
// daemon went (its shutdown event; a cut connection).
var (
	errStreamStopped = errors.New("the daemon stopped")
	errStreamLost    = errors.New("the connection was lost")
)

// watchSession is one run of the verb: its watcher and cursor.
type watchSession struct {
	c              *client
	stdout, stderr io.Writer
	o              watchOptions
	id, path       string
	cursor         uint64
}

func watch(ctx context.Context, c *client, stdout, stderr io.Writer, o watchOptions) error {
	s := &watchSession{c: c, stdout: stdout, stderr: stderr, o: o}
	if err := s.create(ctx); err != nil {
		return err
	}
	defer s.release()
	for {
		err := s.stream(ctx)
		if ctx.Err() != nil {
			return nil // interrupted: how watch ends
		}
		if !errors.Is(err, errStreamStopped) && !errors.Is(err, errStreamLost) {
			return err
		}
		if !o.follow {
			fmt.Fprintf(s.stderr, "sandfs watch: %v\n", err)
			return errReported
		}
		fmt.Fprintf(s.stderr, "sandfs watch: %v; reconnecting (--follow)\n", err)
		if err := s.reconnect(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintf(s.stderr, "sandfs watch: the daemon did not come back within %v: %v\n", followFor, err)
			return errReported
		}
		fmt.Fprintln(s.stderr, "sandfs watch: reconnected")
	}
}

// create makes the watcher; a first one starts at its initial cursor, a
// re-created one keeps the session's.
func (s *watchSession) create(ctx context.Context) error {
	var created aioAnswer[watchCreated]
	if _, err := s.c.callJSON(ctx, jsonRequest("POST", "/v2/watch", s.o.body()), &created); err != nil {
		return err
	}
	if !created.Success || created.Data.WatcherID == "" {
		return fmt.Errorf("watch %s: %s", s.o.path, created.Message)
	}
	if s.id == "" {
		s.cursor = created.Data.InitialCursor
	}
	s.id, s.path = created.Data.WatcherID, created.Data.Path
	return nil
}

// release gives the watcher back (the interrupted ctx is done: a fresh one).
func (s *watchSession) release() {
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if resp, err := s.c.do(dctx, request{method: "DELETE", route: "/v2/watch/" + url.PathEscape(s.id)}); err == nil {
		resp.Body.Close()
	}
}

// open starts the stream after the cursor.
func (s *watchSession) open(ctx context.Context) (io.ReadCloser, error) {
	q := url.Values{"cursor": {strconv.FormatUint(s.cursor, 10)}}
	resp, err := s.c.do(ctx, request{method: "GET", route: "/v2/watch/" + url.PathEscape(s.id) + "/events", query: q})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// reconnect waits for the daemon to be back and opens the watcher again:
// the same one when the daemon kept it, else a new one from the cursor.
func (s *watchSession) reconnect(ctx context.Context) error {
	deadline := time.Now().Add(followFor)
	delay := followFirst
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		err := s.probe(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		delay = min(2*delay, followMax)
	}
}

// probe is one attempt of reconnect.
func (s *watchSession) probe(ctx context.Context) error {
	var e *apiError
	q := url.Values{"cursor": {strconv.FormatUint(s.cursor, 10)}, "limit": {"1"}, "timeout": {"0"}}
	resp, err := s.c.do(ctx, request{method: "GET", route: "/v2/watch/" + url.PathEscape(s.id) + "/poll", query: q})
	if errors.As(err, &e) && e.Status == 404 {
		return s.create(ctx) // the daemon forgot it: the same watch, anew
	}
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// stream prints the events of one stream until it ends, and says how.
func (s *watchSession) stream(ctx context.Context) error {
	body, err := s.open(ctx)
	var e *apiError
	if err != nil && (!errors.As(err, &e) || e.Status == 404) {
		return fmt.Errorf("the daemon stopped (%w: %v)", errStreamLost, err)
	} else if err != nil {
		return err
	}
	defer body.Close()
	stopped := false
	var outErr error // the events' output failed
	err = readSSE(body, func(event, data string) error {
		outErr = s.print(event, data, &stopped)
		return outErr
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case outErr != nil:
		return outErr
	case stopped:
		return errStreamStopped
	case err == nil:
		return fmt.Errorf("watch %s: the daemon ended the stream (watcher stopped)", s.path)
	}
	return fmt.Errorf("the daemon stopped (%w: %v)", errStreamLost, err)
}

// print prints one SSE event and moves the cursor past it.
func (s *watchSession) print(event, data string, stopped *bool) error {
	switch event {
	case "file_change":
		var ev watchEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("the daemon sent an event that is not the JSON expected: %w", err)
		}
		s.cursor = max(s.cursor, ev.Seq)
		if s.o.asJSON {
			return writeJSON(s.stdout, []byte(data))
		}
		_, err := fmt.Fprintln(s.stdout, formatEvent(ev))
		return err
	case "overflow":
		var o struct{ Cursor uint64 }
		json.Unmarshal([]byte(data), &o)
		s.cursor = max(s.cursor, o.Cursor)
		if s.o.asJSON {
			return writeJSON(s.stdout, []byte(data))
		}
		_, err := fmt.Fprintln(s.stderr, "sandfs watch: events were lost (the daemon's buffer overflowed)")
		return err
	case "shutdown":
		*stopped = true
	}
	return nil
}
