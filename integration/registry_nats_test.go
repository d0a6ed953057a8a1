package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sandfs/natsout"
	"sandfs/natsout/natstest"
)

// TestRegistryPublishes: with --events, a sandbox that appears in DIR (by
// hand or by POST) is published from then on, under its own subject; one
// removed stops, and the others go on.
func TestRegistryPublishes(t *testing.T) {
	b := natstest.Start(t)
	d, dir := startRegistry(t, "--events", b.URL(), "--events-host", "h1")
	createSandbox(t, d, "posted")
	must(t, os.Mkdir(filepath.Join(dir, "byhand"), 0o755))
	waitStatus(t, d, "byhand", 200)
	for _, n := range []string{"posted", "byhand"} {
		if st, body := named(t, d, "", "PUT", n, "/fs/write?path=/f", []byte(n)); st != 200 {
			t.Fatalf("write in %s: %d %s", n, st, body)
		}
		waitMessage(t, b, func(m natsout.Message) bool { return m.Host == "h1" && m.Sandbox == n && m.Path == "/f" })
	}
	if st, body := named(t, d, "", "DELETE", "posted", "", nil); st != 200 {
		t.Fatalf("DELETE: %d %s", st, body)
	}
	if st, body := named(t, d, "", "PUT", "byhand", "/fs/write?path=/g", []byte("g")); st != 200 {
		t.Fatalf("write: %d %s", st, body)
	}
	waitMessage(t, b, func(m natsout.Message) bool { return m.Sandbox == "byhand" && m.Path == "/g" })
}

// waitMessage waits until the stream holds a message match takes, each
// message's subject being sandfs.HOST.SANDBOX.TYPE.
func waitMessage(t *testing.T, b *natstest.Broker, match func(natsout.Message) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, err := b.Messages(natsout.StreamName) // an error: the stream is not made yet
		for _, raw := range msgs {
			var m natsout.Message
			must(t, raw.Decode(&m))
			if raw.Subject != "sandfs."+m.Host+"."+m.Sandbox+"."+m.Type {
				t.Fatalf("subject %q of %+v", raw.Subject, m)
			}
			if match(m) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no such message among the stream's %d (%v)", len(msgs), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
