package natsout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// After reads from the stream the events of sandbox (from any host) whose
// seq is above seq: what the fleet heard of it after a checkpoint at seq,
// so what a host taking the sandbox up from that checkpoint lacks. It
// reads what the stream holds when it starts, from the time from on (the
// zero time: from the stream's start), in one bounded pass: an ephemeral
// consumer that acks nothing, removed after, at most maxRead messages
// looked at and max events answered (truncated says more were left),
// each fetch bounded, all of it by ctx. A message that is not an event of
// sandbox is skipped: the stream is read, never believed. The events come
// sorted by seq, then host.
func After(ctx context.Context, js jetstream.JetStream, sandbox string, seq uint64, from time.Time, max int) (out []Message, truncated bool, err error) {
	cfg := jetstream.ConsumerConfig{FilterSubject: Filter("", sandbox), AckPolicy: jetstream.AckNonePolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: time.Minute}
	if !from.IsZero() {
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &from
	}
	cctx, cancel := context.WithTimeout(ctx, ackTimeout)
	cons, err := js.CreateConsumer(cctx, StreamName, cfg)
	cancel()
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, false, nil // nothing was ever published
	} else if err != nil {
		return nil, false, fmt.Errorf("events: reading the stream: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
		_ = js.DeleteConsumer(dctx, StreamName, cons.CachedInfo().Name)
		cancel()
	}()
	pending := min(cons.CachedInfo().NumPending, maxRead)
	for read := uint64(0); read < pending; {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		batch, err := cons.Fetch(int(min(pending-read, 256)), jetstream.FetchMaxWait(ackTimeout))
		if err != nil {
			return nil, false, fmt.Errorf("events: reading the stream: %w", err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			var m Message
			if json.Unmarshal(msg.Data(), &m) != nil || m.Sandbox != sandbox || m.Seq <= seq || m.Type == "" {
				continue
			}
			if len(out) == max {
				truncated = true
				continue
			}
			out = append(out, m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, false, fmt.Errorf("events: reading the stream: %w", err)
		}
		if n == 0 {
			break // the stream lost them meanwhile (retention): what was read is the answer
		}
		read += uint64(n)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Seq != out[j].Seq {
			return out[i].Seq < out[j].Seq
		}
		return out[i].Host < out[j].Host
	})
	return out, truncated, nil
}

// maxRead bounds the messages After looks at.
const maxRead = 1_000_000
