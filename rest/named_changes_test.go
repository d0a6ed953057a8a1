package rest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/journal"
)

// changesFixture: an agent writes /src/agent.txt through the API (named
// agent-1), a person on the mount (vim, pid 4242) writes /src/person.txt
// and renames /doc/old.md to /doc/new.md. It returns the seq before.
func changesFixture(t *testing.T, h *namedHarness, pre string) uint64 {
	t.Helper()
	h.writeFile(t, "/doc/old.md", "# old\n")
	h.def.Journal().Append(journal.Event{Type: journal.Create, Path: "/doc/old.md", Origin: journal.External})
	start := h.def.Journal().Seq()
	r := h.do(t, req{Method: "PUT", Target: pre + "default/fs/write?path=/src/agent.txt&mkdir=true",
		Body: strings.NewReader("from the agent\n"), Header: map[string]string{"X-Sandfs-Actor": "agent-1"}})
	wantStatus(t, r, 200)
	person := core.WithActor(context.Background(), core.Actor{Origin: journal.Mirror, Pid: 4242, Uid: 1000, Comm: "vim"})
	if _, err := h.def.WriteFile(person, "/src/person.txt", strings.NewReader("from a person\n"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.def.Move(person, "/doc/old.md", "/doc/new.md", core.MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	return start
}

func rowsOf(c api.Changes) string {
	var b []string
	for _, r := range c.Changes {
		s := r.Change + " " + r.Path
		if r.RenamedFrom != "" {
			s += " <- " + r.RenamedFrom
		}
		b = append(b, s+" by "+strings.Join(r.Actors, ","))
	}
	return strings.Join(b, "\n")
}

func TestNamedChanges(t *testing.T) {
	for _, pre := range namedPrefixes {
		t.Run(strings.Trim(pre, "/"), func(t *testing.T) {
			h := newNamedHarness(t)
			start := changesFixture(t, h, pre)
			base := fmt.Sprintf("%sdefault/changes?since=%d", pre, start)

			r := h.do(t, req{Method: "GET", Target: base + "&diff=true"})
			wantStatus(t, r, 200)
			got := decode[api.Changes](t, r)
			want := "renamed /doc/new.md <- /doc/old.md by fuse:vim\nadded /src by agent-1\nadded /src/agent.txt by agent-1\nadded /src/person.txt by fuse:vim"
			if rowsOf(got) != want {
				t.Fatalf("rows:\n%s\nwant:\n%s", rowsOf(got), want)
			}
			if got.Since.Seq != start || got.UntilSeq != h.def.Journal().Seq() || got.Lost || got.Truncated || got.Count != 4 || got.Since.Time != "" {
				t.Errorf("since %+v until %d lost %v truncated %v count %d", got.Since, got.UntilSeq, got.Lost, got.Truncated, got.Count)
			}
			agent, person, moved := got.Changes[2], got.Changes[3], got.Changes[0]
			if agent.Diff != "--- a/src/agent.txt\n+++ b/src/agent.txt\n@@ -0,0 +1 @@\n+from the agent\n" || agent.Size != 15 || agent.IsDir {
				t.Errorf("agent row: %+v", agent)
			}
			if agent.First.Origin != "api" || agent.First.Actor != "agent-1" || agent.Last.Seq <= start || agent.Events < 1 {
				t.Errorf("agent events: %+v %+v", agent.First, agent.Last)
			}
			if _, err := time.Parse(time.RFC3339Nano, agent.First.Time); err != nil {
				t.Errorf("time %q: %v", agent.First.Time, err)
			}
			if person.Last.Origin != "fuse" || person.Last.Pid != 4242 || person.Last.Comm != "vim" || person.Last.Actor != "" {
				t.Errorf("person: %+v", person.Last)
			}
			if moved.Diff != "" || !strings.Contains(moved.DiffUnavailable, "no checkpoint") || moved.Last.Type != "rename" {
				t.Errorf("renamed row: diff %q unavailable %q last %+v", moved.Diff, moved.DiffUnavailable, moved.Last)
			}
			if got.Changes[1].Diff != "" || !got.Changes[1].IsDir {
				t.Errorf("directory row: %+v", got.Changes[1])
			}

			for _, tc := range []struct{ query, want string }{
				{"&actor=agent-1", "added /src by agent-1\nadded /src/agent.txt by agent-1"},
				{"&actor=fuse:vim", "renamed /doc/new.md <- /doc/old.md by fuse:vim\nadded /src/person.txt by fuse:vim"},
				{"&origin=fuse", "renamed /doc/new.md <- /doc/old.md by fuse:vim\nadded /src/person.txt by fuse:vim"},
				{"&path=/src", "added /src by agent-1\nadded /src/agent.txt by agent-1\nadded /src/person.txt by fuse:vim"},
				{"&path=old.md&workingDir=/doc", "renamed /doc/new.md <- /doc/old.md by fuse:vim"},
				{"&limit=1", "renamed /doc/new.md <- /doc/old.md by fuse:vim"},
			} {
				r := h.do(t, req{Method: "GET", Target: base + tc.query})
				wantStatus(t, r, 200)
				got := decode[api.Changes](t, r)
				if rowsOf(got) != tc.want || got.Count != len(got.Changes) || got.Truncated != (tc.query == "&limit=1") {
					t.Errorf("%s: rows\n%s\nwant\n%s\ntruncated %v", tc.query, rowsOf(got), tc.want, got.Truncated)
				}
				if got.Changes[0].Diff != "" {
					t.Errorf("%s: a diff without diff=true", tc.query)
				}
			}

			// since=TIME: the first event at or after it.
			var third journal.Event
			h.def.Journal().Scan(context.Background(), start+2, func(e journal.Event) bool { third = e; return false })
			r = h.do(t, req{Method: "GET", Target: pre + "default/changes?since=" + url.QueryEscape(third.Time.Format(time.RFC3339Nano))})
			wantStatus(t, r, 200)
			byTime := decode[api.Changes](t, r)
			if byTime.Since.Seq != third.Seq-1 || byTime.Since.Time == "" {
				t.Errorf("since time: %+v (third event %d)", byTime.Since, third.Seq)
			}
			// No since: from the oldest event kept, where /doc/old.md was made.
			r = h.do(t, req{Method: "GET", Target: pre + "default/changes"})
			wantStatus(t, r, 200)
			if all := decode[api.Changes](t, r); all.Since.Seq != 0 || all.Count != 4 || !strings.HasPrefix(rowsOf(all), "added /doc/new.md by external,fuse:vim\n") {
				t.Errorf("oldest: %s", rowsOf(all))
			}
			// The other sandbox has its own journal.
			r = h.do(t, req{Method: "GET", Target: pre + "other/changes"})
			wantStatus(t, r, 200)
			if other := decode[api.Changes](t, r); other.Count != 0 || other.Changes == nil {
				t.Errorf("other: %+v", other)
			}
		})
	}
}

func TestNamedChangesRefusals(t *testing.T) {
	h := newNamedHarness(t)
	d := "/v1/sandboxes/default/changes"
	for _, tc := range []struct {
		target string
		status int
		code   string
		path   string
	}{
		{d + "?since=yesterday", 400, "EINVAL", ""},
		{d + "?since=2026-13-01T00:00:00Z", 400, "EINVAL", ""},
		{d + "?since=99999999999999999999999", 400, "EINVAL", ""},
		{d + "?since=cp_nope", 404, "ENOENT", ""},
		{d + "?since=fork", 400, "EINVAL", ""}, // a server without a Manager has no forks
		{d + "?origin=robot", 400, "EINVAL", ""},
		{d + "?limit=0", 400, "EINVAL", ""},
		{d + "?limit=abc", 400, "EINVAL", ""},
		{d + "?limit=100001", 400, "EINVAL", ""},
		{d + "?max_diff_bytes=0", 400, "EINVAL", ""},
		{d + "?max_diff_bytes=4194305", 400, "EINVAL", ""},
		{d + "?diff=maybe", 400, "EINVAL", ""},
		{d + "?path=a&workingDir=rel", 400, "EINVAL", ""},
		{d + "?path=%00", 400, "", ""},
		{d + "?path=%ff", 400, "", ""},
		{"/v1/sandboxes/nosuch/changes", 404, "ENOENT", "nosuch"},
		{"/v1/sprites/nosuch/changes", 404, "ENOENT", "nosuch"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			before := h.def.Journal().Seq()
			e := wantNamedError(t, h.do(t, req{Method: "GET", Target: tc.target}), tc.status, tc.code, tc.path)
			if strings.Contains(e.Error, "\n") {
				t.Errorf("error %q has a newline", e.Error)
			}
			if h.def.Journal().Seq() != before {
				t.Errorf("the journal moved")
			}
		})
	}
	wantNamedError(t, h.do(t, req{Method: "POST", Target: d}), 405, "", "")
}
