package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/core/journal"
	"sandfs/rest/aio"
)

// The AIO watch routes' test helpers: create, poll and collect.

func newWatchHarness(t *testing.T) (*harness, *core.Sandbox) {
	t.Helper()
	h := newHarness(t, harnessOpts{})
	sb := h.srv.reg.Get("default")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs before the harness's own cleanups
	if err := sb.StartWatching(ctx, slog.New(slog.NewTextHandler(h.logs, nil))); err != nil {
		t.Fatalf("StartWatching: %v", err)
	}
	select {
	case <-sb.Watch().Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("kernel watch not ready after 10 s")
	}
	return h, sb
}

func jsonBody(s string) io.Reader { return strings.NewReader(s) }

// settleOutside waits until the kernel watch has told every change made
// directly in the root so far: it makes one more (empty) file there and
// waits for its create, which inotify queues after them.
func settleOutside(t *testing.T, h *harness, sb *core.Sandbox) {
	t.Helper()
	seq := sb.Journal().Seq()
	name := "/.settle-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	h.writeFile(t, name, "")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		evs, _ := sb.Journal().Since(seq, journal.RingSize)
		for _, e := range evs {
			if e.Path == name {
				return
			}
		}
	}
	t.Fatalf("the kernel watch did not tell %s in 10 s", name)
}

// create makes a watcher through the v2 route and returns its data.
func (h *harness) createWatch(t *testing.T, body string) aio.WatchCreated {
	t.Helper()
	return wantAIO[aio.WatchCreated](t, h.do(t, req{Method: "POST", Target: "/v2/watch", Body: jsonBody(body)}))
}

func (h *harness) pollWatch(t *testing.T, id string, cursor uint64, timeout int) aio.WatchBatch {
	t.Helper()
	r := h.do(t, req{Method: "GET", Target: fmt.Sprintf("/v2/watch/%s/poll?cursor=%d&timeout=%d", id, cursor, timeout)})
	return wantAIO[aio.WatchBatch](t, r)
}

// collect polls from cursor until done says the events suffice (or 10 s
// pass), then polls once more for settle seconds to catch any extra event.
func (h *harness) collect(t *testing.T, id string, cursor uint64, done func([]aio.WatchEvent) bool, settle int) ([]aio.WatchEvent, uint64) {
	t.Helper()
	var got []aio.WatchEvent
	deadline := time.Now().Add(10 * time.Second)
	for !done(got) && time.Now().Before(deadline) {
		b := h.pollWatch(t, id, cursor, 1)
		got = append(got, b.Events...)
		cursor = b.Cursor
	}
	if settle > 0 {
		b := h.pollWatch(t, id, cursor, settle)
		got = append(got, b.Events...)
		cursor = b.Cursor
	}
	return got, cursor
}

func evString(e aio.WatchEvent) string {
	return wantEv{e.Type, e.Path, e.RelativePath, e.OldPath, e.Origin, e.IsDir}.String()
}

func decodeJSONString[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	dec := jsonDecoder(s)
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return v
}

func jsonDecoder(s string) *json.Decoder {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	return dec
}

// checkFamilyShape checks that an error answer is in the family's shape.

// sharedID is the shared watcher a reference ("w_….n") names.
func sharedID(ref string) string {
	id, _, _ := strings.Cut(ref, ".")
	return id
}
