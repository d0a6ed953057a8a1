package load

// The journal checker: one watcher read from cursor 0 by long-poll, and
// the exactly-once check of its events against the acknowledgements.

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// journalReader long-polls one watcher from cursor 0 and keeps every event.
type journalReader struct {
	g        *gen
	id       string
	mu       sync.Mutex
	events   []event
	n        int
	overflow bool
	seen     map[string]bool
}

type event struct {
	Seq     uint64 `json:"seq"`
	Type    string `json:"type"`
	Path    string `json:"path"`
	OldPath string `json:"old_path"`
	IsDir   bool   `json:"is_dir"`
	Origin  string `json:"origin"`
}

func newJournalReader(g *gen, id string) *journalReader {
	return &journalReader{g: g, id: id, seen: map[string]bool{}}
}

func (j *journalReader) run(ctx context.Context) {
	hc := &http.Client{Transport: WithToken(j.g.cfg.Token, http.DefaultTransport)}
	cursor := uint64(0)
	for ctx.Err() == nil {
		out, err := j.g.poll(ctx, hc, false, j.id, cursor)
		if err != nil {
			if ctx.Err() == nil {
				j.g.rep.fail("journal poll: %v", err)
			}
			return
		}
		j.mu.Lock()
		if out.Data.Overflow {
			j.overflow = true
		}
		for _, e := range out.Data.Events {
			j.events = append(j.events, e)
			j.seen[e.Path] = true
		}
		j.n = len(j.events)
		j.mu.Unlock()
		cursor = out.Data.Cursor
	}
}

// waitFor waits until an event on path was read.
func (j *journalReader) waitFor(ctx context.Context, path string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		j.mu.Lock()
		ok := j.seen[path]
		j.mu.Unlock()
		if ok {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// check holds the journal to exactly once for every acknowledged change.
func (j *journalReader) check(rep *Report, acks []ack, gone map[string]bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.overflow {
		rep.fail("journal: the checker's watcher overflowed; exactly-once cannot be judged")
	}
	type counts struct{ create, write, rename, remove, external int }
	by := map[string]*counts{}
	get := func(p string) *counts {
		c := by[p]
		if c == nil {
			c = &counts{}
			by[p] = c
		}
		return c
	}
	for _, e := range j.events {
		if e.IsDir || !strings.HasPrefix(e.Path, "/load/") {
			continue
		}
		c := get(e.Path)
		if e.Origin == "external" {
			c.external++
		}
		switch e.Type {
		case "create":
			c.create++
		case "write":
			c.write++
		case "rename":
			c.rename++
		case "remove":
			c.remove++
		}
	}
	known := map[string]bool{"/load/end-marker": true}
	bad := 0
	for _, a := range acks {
		known[a.path] = true
		c := get(a.path)
		want := counts{create: 1, write: 1}
		if a.upload {
			want = counts{rename: 1}
		}
		if gone[a.path] {
			want.remove = 1
		}
		if *c != want {
			bad++
			if bad <= 10 {
				rep.fail("journal: %s (upload=%v fuse=%v): got %+v, want %+v", a.path, a.upload, a.fuse, *c, want)
			}
		}
	}
	var stray []string
	for p := range by {
		if !known[p] && !strings.Contains(p, "/.sandfs-") {
			stray = append(stray, p)
		}
	}
	sort.Strings(stray)
	if bad > 10 {
		rep.fail("journal: %d acknowledged changes in all not told exactly once", bad)
	}
	if len(stray) > 0 {
		rep.fail("journal: %d events on paths nobody acknowledged writing, e.g. %q", len(stray), stray[:min(5, len(stray))])
	}
}
