package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sandfs/core/history"
	"sandfs/core/journal"
	"sandfs/natsout"
	"sandfs/natsout/natstest"
)

// sandfs fleet watch prints the stream's events, filtered, one JSON object
// a line; a durable consumer resumes after what it printed.
func TestFleetWatch(t *testing.T) {
	b := natstest.Start(t)
	var srcs []natsout.Source
	for _, name := range []string{"a", "b"} {
		h, j := natstest.Journal(t, history.DefaultRetention)
		for i := 0; i < 3; i++ {
			j.Append(journal.Event{Type: journal.Create, Path: "/" + name + string(rune('0'+i)), Origin: journal.API})
		}
		srcs = append(srcs, natsout.Source{Name: name, Journal: j, Meta: h})
	}
	p, err := natsout.Start(context.Background(), natsout.Config{URL: b.URL(), Host: "h1"}, srcs)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	b.WaitCount(t, natsout.StreamName, 6, 20*time.Second)

	watch := func(args ...string) []natsout.Message {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		if err := run(ctx, append([]string{"fleet", "watch", "--events", b.URL()}, args...), strings.NewReader(""), &out, &errb); err != nil {
			t.Fatalf("fleet watch %v: %v: %s", args, err, errb.String())
		}
		var ms []natsout.Message
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			var m natsout.Message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			ms = append(ms, m)
		}
		return ms
	}
	if ms := watch("--sandbox", "b"); len(ms) != 3 || ms[0].Sandbox != "b" || ms[0].Host != "h1" || ms[2].Path != "/b2" {
		t.Fatalf("--sandbox b: %+v", ms)
	}
	if ms := watch("--host", "h2"); len(ms) != 0 {
		t.Fatalf("--host h2: %+v", ms)
	}
	if ms := watch("--durable", "d1", "--sandbox", "a"); len(ms) != 3 {
		t.Fatalf("durable, first: %+v", ms)
	}
	if ms := watch("--durable", "d1", "--sandbox", "a"); len(ms) != 0 {
		t.Fatalf("durable, resumed: %+v", ms)
	}
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"fleet", "watch"}, strings.NewReader(""), &out, &errb); err == nil || !strings.Contains(errb.String(), "needs --events") {
		t.Fatalf("no --events: %v: %s", err, errb.String())
	}
}
