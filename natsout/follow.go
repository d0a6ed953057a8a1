package natsout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Filter is the subject a follower reads: host and sandbox, "" for any.
func Filter(host, sandbox string) string {
	h, s := "*", "*"
	if host != "" {
		h = Token(host)
	}
	if sandbox != "" {
		s = Token(sandbox)
	}
	return "sandfs." + h + "." + s + ".*"
}

// Follow reads the stream, in order, from the start or, with a durable
// consumer's name, from where that consumer last acked (its cursor, kept by
// JetStream), calling fn for each message and acking it after fn returns
// nil. It returns when ctx ends (nil) or fn fails.
func Follow(ctx context.Context, url, host, sandbox, durable string, fn func(Message) error) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cfg := jetstream.ConsumerConfig{Durable: durable, FilterSubject: Filter(host, sandbox),
		AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy}
	cons, err := js.CreateOrUpdateConsumer(ctx, StreamName, cfg)
	if err != nil {
		return fmt.Errorf("events: consumer: %w", err)
	}
	// One message at a time, none fetched ahead: what is not acked is
	// where a durable consumer resumes.
	for ctx.Err() == nil {
		msg, err := cons.Next(jetstream.FetchMaxWait(time.Second))
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var m Message
		if err := json.Unmarshal(msg.Data(), &m); err != nil {
			_ = msg.Term() // never redelivered: it is not an event
			return fmt.Errorf("events: message %s: %w", msg.Subject(), err)
		}
		if err := fn(m); err != nil {
			_ = msg.Nak() // redelivered at once, to the next follower
			return err
		}
		if err := msg.DoubleAck(ctx); err != nil {
			return err
		}
	}
	return nil
}
