// Package natstest runs a real nats-server with JetStream in the test's
// process (github.com/nats-io/nats-server/v2, no download at test time),
// which can be stopped and started again on the same port and store, and
// reads back the stream sandfs publishes to. Only tests import it.
package natstest

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Broker is a nats-server with JetStream, its store in a t.TempDir().
type Broker struct {
	t    testing.TB
	dir  string
	port int
	s    *server.Server
}

// Start runs a broker on a free loopback port until the test ends.
func Start(t testing.TB) *Broker {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	b := &Broker{t: t, dir: t.TempDir(), port: port}
	b.Restart()
	t.Cleanup(b.Stop)
	return b
}

// Restart starts the broker again, on its port and store.
func (b *Broker) Restart() {
	b.t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: b.port, JetStream: true,
		StoreDir: b.dir, NoLog: true, NoSigs: true})
	if err != nil {
		b.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		b.t.Fatal("nats-server did not start")
	}
	b.s = s
}

// Stop shuts the broker down (its store stays). Stopping twice is fine.
func (b *Broker) Stop() {
	if b.s != nil {
		b.s.Shutdown()
		b.s.WaitForShutdown()
		b.s = nil
	}
}

// URL is nats://127.0.0.1:PORT.
func (b *Broker) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(b.port) }

// Msg is one stored message: its subject, Nats-Msg-Id and decoded JSON.
type Msg struct {
	Subject, ID string
	Data        []byte
}

// Decode unmarshals the message's JSON into v.
func (m Msg) Decode(v any) error { return json.Unmarshal(m.Data, v) }

// Messages reads the whole stream, in stream order (nil, error while the
// stream is missing or the broker away).
func (b *Broker) Messages(stream string) ([]Msg, error) {
	nc, err := nats.Connect(b.URL())
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []Msg
	for s := info.State.FirstSeq; info.State.Msgs > 0 && s <= info.State.LastSeq; s++ {
		raw, err := st.GetMsg(ctx, s)
		if err != nil {
			return nil, err
		}
		out = append(out, Msg{Subject: raw.Subject, ID: raw.Header.Get(nats.MsgIdHdr), Data: raw.Data})
	}
	return out, nil
}

// Count is how many messages the stream holds (-1: unknown).
func (b *Broker) Count(stream string) int {
	nc, err := nats.Connect(b.URL())
	if err != nil {
		return -1
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return -1
	}
	info, err := st.Info(ctx)
	if err != nil {
		return -1
	}
	return int(info.State.Msgs)
}

// WaitCount waits up to limit for the stream to hold n messages and no more
// to follow for a moment, and returns them.
func (b *Broker) WaitCount(t testing.TB, stream string, n int, limit time.Duration) []Msg {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		c := b.Count(stream)
		if c == n {
			time.Sleep(300 * time.Millisecond)
			if out, err := b.Messages(stream); err == nil && len(out) == n {
				return out
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %s holds %d messages, want %d", stream, c, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
