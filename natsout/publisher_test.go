package natsout

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"sandfs/core/history"
	"sandfs/core/journal"
	"sandfs/natsout/natstest"
)

type got struct {
	subject, id string
	m           Message
}

// waitCount waits until the stream holds n messages and decodes them.
func waitCount(t *testing.T, b *natstest.Broker, n int) []got {
	t.Helper()
	var out []got
	for _, raw := range b.WaitCount(t, StreamName, n, 30*time.Second) {
		g := got{subject: raw.Subject, id: raw.ID}
		if err := raw.Decode(&g.m); err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	return out
}

// sandbox is a journal on a real durable store.
func sandbox(t *testing.T, name string) Source {
	t.Helper()
	h, j := natstest.Journal(t, history.DefaultRetention)
	return Source{Name: name, Journal: j, Meta: h}
}

var types = []journal.Type{journal.Create, journal.Write, journal.Rename, journal.Chmod, journal.Remove}

// burst appends n events, timing each; it fails if one took over max.
func burst(t *testing.T, j *journal.Journal, from, n int, max time.Duration) {
	t.Helper()
	for i := from; i < from+n; i++ {
		e := journal.Event{Type: types[i%len(types)], Path: fmt.Sprintf("/d/f%d", i), Size: int64(i),
			Origin: journal.API, Actor: "agent"}
		if e.Type == journal.Rename {
			e.OldPath = fmt.Sprintf("/d/old%d", i)
		}
		start := time.Now()
		j.Append(e)
		if d := time.Since(start); d > max {
			t.Fatalf("append %d took %v", i, d)
		}
	}
}

// check asserts that msgs hold each seq 1..n of every sandbox exactly
// once, in per-sandbox seq order, with its subject, id and fields.
func check(t *testing.T, msgs []got, host string, n map[string]int) {
	t.Helper()
	last := map[string]uint64{}
	count := map[string]int{}
	for _, g := range msgs {
		m := g.m
		if m.Host != host || m.Seq != last[m.Sandbox]+1 {
			t.Fatalf("message %+v after seq %d of %s", m, last[m.Sandbox], m.Sandbox)
		}
		last[m.Sandbox] = m.Seq
		count[m.Sandbox]++
		i := int(m.Seq) - 1
		want := types[i%len(types)]
		if m.Type != string(want) || m.Path != fmt.Sprintf("/d/f%d", i) || m.Size != int64(i) ||
			m.Origin != "api" || m.Actor != "agent" || m.Timestamp == "" {
			t.Fatalf("message %d of %s: %+v", m.Seq, m.Sandbox, m)
		}
		if want == journal.Rename && m.OldPath != fmt.Sprintf("/d/old%d", i) {
			t.Fatalf("rename %d: oldPath %q", m.Seq, m.OldPath)
		}
		if sub := "sandfs." + Token(host) + "." + m.Sandbox + "." + string(want); g.subject != sub {
			t.Fatalf("subject %q, want %q", g.subject, sub)
		}
		if id := host + "/" + m.Sandbox + "/" + strconv.FormatUint(m.Seq, 10); g.id != id {
			t.Fatalf("id %q, want %q", g.id, id)
		}
	}
	for s, want := range n {
		if count[s] != want {
			t.Fatalf("%s: %d messages, want %d", s, count[s], want)
		}
	}
}

func start(t *testing.T, b *natstest.Broker, host string, srcs ...Source) *Publisher {
	t.Helper()
	p, err := Start(context.Background(), Config{URL: b.URL(), Host: host}, srcs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every event reaches the stream once, in order; a restart (even from a
// cursor older than what was acked, as after kill -9) republishes nothing
// twice; a broker away for seconds never slows an append, and nothing is
// lost once it is back.
func TestPublishExactlyOnce(t *testing.T) {
	b := natstest.Start(t)
	host := "host.one"
	a, c := sandbox(t, "alpha"), sandbox(t, "beta")
	p := start(t, b, host, a, c)
	burst(t, a.Journal, 0, 400, time.Second)
	burst(t, c.Journal, 0, 300, time.Second)
	check(t, waitCount(t, b, 700), host, map[string]int{"alpha": 400, "beta": 300})
	st := p.Stats()
	if st["alpha"] != (Stats{Published: 400}) || st["beta"] != (Stats{Published: 300}) {
		t.Fatalf("stats %+v", st)
	}
	p.Close()
	if v, _ := a.Meta.Meta(CursorKey); v != "400" {
		t.Fatalf("alpha's saved cursor %q", v)
	}

	// A restart that lost its last cursor save (kill -9): JetStream drops
	// what it republishes.
	if err := a.Meta.SetMeta(CursorKey, "150"); err != nil {
		t.Fatal(err)
	}
	p = start(t, b, host, a, c)
	burst(t, a.Journal, 400, 100, time.Second)
	check(t, waitCount(t, b, 800), host, map[string]int{"alpha": 500, "beta": 300})
	// The 250 republished are acked as duplicates, and counted as such.
	for deadline := time.Now().Add(30 * time.Second); p.Stats()["alpha"].Duplicate < 250; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("alpha's duplicates %d after the restart, want 250", p.Stats()["alpha"].Duplicate)
		}
	}
	if d := p.Stats()["alpha"].Duplicate; d != 250 {
		t.Errorf("alpha's duplicates %d, want the 250 republished", d)
	}

	// The broker goes away mid-burst: appends never wait on it.
	burst(t, c.Journal, 300, 100, time.Second)
	b.Stop()
	burst(t, c.Journal, 400, 200, 100*time.Millisecond)
	burst(t, a.Journal, 500, 200, 100*time.Millisecond)
	time.Sleep(3 * time.Second)
	if bl := p.Stats()["alpha"].Backlog; bl != 200 {
		t.Fatalf("alpha's backlog with the broker down: %d, want 200", bl)
	}
	b.Restart()
	check(t, waitCount(t, b, 1300), host, map[string]int{"alpha": 700, "beta": 600})
	if st := p.Stats(); st["alpha"].Backlog != 0 || st["beta"].Backlog != 0 {
		t.Fatalf("stats after the broker came back %+v", st)
	}
	p.Close()
}

// A publisher started while the broker is away starts at once, and publishes
// everything once the broker comes up (the stream made then).
func TestPublishBrokerDownAtStart(t *testing.T) {
	b := natstest.Start(t)
	b.Stop()
	a := sandbox(t, "alpha")
	began := time.Now()
	p := start(t, b, "h", a)
	defer p.Close()
	if d := time.Since(began); d > time.Second {
		t.Fatalf("Start took %v with the broker away", d)
	}
	burst(t, a.Journal, 0, 50, 100*time.Millisecond)
	for deadline := time.Now().Add(15 * time.Second); p.Stats()["alpha"].Failed == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if st := p.Stats()["alpha"]; st.Backlog != 50 || st.Published != 0 || st.Failed == 0 {
		t.Fatalf("stats with the broker away: %+v", st)
	}
	b.Restart()
	check(t, waitCount(t, b, 50), "h", map[string]int{"alpha": 50})
}

// TestFlush: Flush returns once every event the journal held is
// published, and says how many were left when the broker is away.
func TestFlush(t *testing.T) {
	b := natstest.Start(t)
	a := sandbox(t, "alpha")
	p := start(t, b, "host.one", a)
	defer p.Close()
	burst(t, a.Journal, 0, 300, time.Second)
	if left := p.Flush("alpha", time.Minute); left != 0 {
		t.Fatalf("Flush left %d", left)
	}
	if st := p.Stats()["alpha"]; st.Published != 300 || st.Backlog != 0 {
		t.Errorf("after Flush: %+v, want 300 published and no backlog", st)
	}
	b.Stop()
	burst(t, a.Journal, 300, 10, time.Second)
	if left := p.Flush("alpha", 200*time.Millisecond); left != 10 {
		t.Errorf("Flush with the broker away left %d, want 10", left)
	}
	if left := p.Flush("nobody", time.Second); left != 0 {
		t.Errorf("Flush of an unknown sandbox: %d", left)
	}
}
