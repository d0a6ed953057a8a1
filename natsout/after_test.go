package natsout

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core/journal"
	"sandfs/natsout/natstest"
)

// After answers the events of one sandbox, from any host, above a seq,
// sorted; it skips what is not such an event (another sandbox, bytes that
// are not JSON, a message whose body names another sandbox than its
// subject, a loss marker), and bounds what it answers.
func TestAfterReadsOneSandboxAfterASeq(t *testing.T) {
	ctx := context.Background()
	b := natstest.Start(t)
	_, js, err := Dial(b.URL(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if got, trunc, err := After(ctx, js, "s1", 0, time.Time{}, 10); err != nil || len(got) != 0 || trunc {
		t.Fatalf("no stream yet: %v %v %v, want nothing", got, trunc, err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: StreamName, Subjects: []string{StreamSubjects}}); err != nil {
		t.Fatal(err)
	}
	pub := func(subject string, data []byte) {
		t.Helper()
		if _, err := js.Publish(ctx, subject, data); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(host, sandbox string, seq uint64, path string) {
		t.Helper()
		e := journal.Event{Seq: seq, Type: journal.Write, Path: path, Time: time.Now()}
		data, _ := json.Marshal(message(host, sandbox, e))
		pub(Subject(host, sandbox, e.Type), data)
	}
	for seq := uint64(1); seq <= 5; seq++ {
		ev("ha", "s1", seq, fmt.Sprintf("/a%d", seq))
	}
	ev("hb", "s1", 9, "/b9")
	ev("hb", "s1", 6, "/b6")
	ev("ha", "s10", 8, "/other")
	ev("ha", "s1x", 8, "/other")
	pub("sandfs.ha.s1.write", []byte("not json"))
	forged, _ := json.Marshal(message("ha", "s2", journal.Event{Seq: 8, Type: journal.Write, Path: "/forged"}))
	pub("sandfs.ha.s1.write", forged)

	got, trunc, err := After(ctx, js, "s1", 3, time.Time{}, 10)
	if err != nil || trunc {
		t.Fatal(err, trunc)
	}
	var seen []string
	for _, m := range got {
		seen = append(seen, fmt.Sprintf("%s:%d:%s", m.Host, m.Seq, m.Path))
	}
	want := "[ha:4:/a4 ha:5:/a5 hb:6:/b6 hb:9:/b9]"
	if fmt.Sprint(seen) != want {
		t.Fatalf("after seq 3: %v, want %s", seen, want)
	}
	got, trunc, err = After(ctx, js, "s1", 0, time.Time{}, 2)
	if err != nil || !trunc || len(got) != 2 {
		t.Fatalf("bounded to 2: %d events, truncated %v, %v; want 2, truncated", len(got), trunc, err)
	}
	got, _, err = After(ctx, js, "s1", 0, time.Now().Add(time.Hour), 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("from an hour on: %d events (%v), want none", len(got), err)
	}
	// Nothing is left behind on the stream: each read's consumer goes.
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(consumerNames(t, s)); n != 0 {
		t.Fatalf("%d consumers left on the stream", n)
	}
}

func consumerNames(t *testing.T, s jetstream.Stream) []string {
	t.Helper()
	var out []string
	l := s.ConsumerNames(context.Background())
	for n := range l.Name() {
		out = append(out, n)
	}
	return out
}
