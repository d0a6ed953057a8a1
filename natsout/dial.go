package natsout

import (
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Dial is a daemon's connection to the fleet's broker, named name: it
// never fails for a broker that is down (it connects, and reconnects,
// in the background, every 250 ms, forever), and it keeps no reconnect
// buffer, so a request while the connection is down fails at once
// instead of waiting in nats.go's buffer to be sent on reconnect.
// Buffered, a window's last messages (sent after the socket died but
// before the client knew) reached the stream on reconnect ahead of the
// earlier ones the next drain sends again from the cursor: out of seq
// order (TestPublishExactlyOnce caught it under load).
func Dial(url, name string, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name(name), nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}
