// Package natstest runs a real nats-server with JetStream in the test's
// process (github.com/nats-io/nats-server/v2, no download at test time),
// which can be stopped and started again on the same port and store, and
// reads back the stream sandfs publishes to. Tests use Broker; the bench
// harness (bench/run) uses Server.
package natstest

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server is a nats-server with JetStream on a free loopback port, its
// store in a directory of the caller's, stopped and started again on that
// port and store. It reports errors rather than failing a test, for the
// bench harness; tests use Broker.
type Server struct {
	dir  string
	port int
	s    *server.Server
}

// StartServer runs a server with its store in dir.
func StartServer(dir string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{dir: dir, port: port}
	return s, s.Restart()
}

// Restart starts the server again, on its port and store.
func (s *Server) Restart() error {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: s.port, JetStream: true,
		StoreDir: s.dir, NoLog: true, NoSigs: true})
	if err != nil {
		return err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("nats-server did not start")
	}
	s.s = ns
	return nil
}

// Stop shuts the server down (its store stays). Stopping twice is fine.
func (s *Server) Stop() {
	if s.s != nil {
		s.s.Shutdown()
		s.s.WaitForShutdown()
		s.s = nil
	}
}

// URL is nats://127.0.0.1:PORT.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

// Broker is a Server for a test, its store in a t.TempDir(): a failure to
// start fails the test.
type Broker struct {
	*Server
	t testing.TB
}

// Start runs a broker on a free loopback port until the test ends.
func Start(t testing.TB) *Broker {
	t.Helper()
	s, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return &Broker{Server: s, t: t}
}

// Restart starts the broker again, on its port and store.
func (b *Broker) Restart() {
	b.t.Helper()
	if err := b.Server.Restart(); err != nil {
		b.t.Fatal(err)
	}
}

// Msg is one stored message: its subject, Nats-Msg-Id and decoded JSON.
type Msg struct {
	Subject, ID string
	Data        []byte
}

// JetStream is a client of the broker for the test (closed at its end).
func (b *Broker) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(b.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
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
		raw, err := getMsg(st, s)
		if err != nil {
			return nil, err
		}
		out = append(out, Msg{Subject: raw.Subject, ID: raw.Header.Get(nats.MsgIdHdr), Data: raw.Data})
	}
	return out, nil
}

// getMsg reads message s with a bound of its own: a stream of 10,000
// messages read one round trip each took more than one shared 10 s
// under make test's load.
func getMsg(st jetstream.Stream, s uint64) (*jetstream.RawStreamMsg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return st.GetMsg(ctx, s)
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
		var read error
		if c == n {
			time.Sleep(300 * time.Millisecond)
			out, err := b.Messages(stream)
			if err == nil && len(out) == n {
				return out
			}
			read = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %s holds %d messages, want %d (reading them: %v)", stream, c, n, read)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
