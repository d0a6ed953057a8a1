package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"sandfs/natsout"
)

// The fleet verb: the fleet's stream on NATS JetStream, where every
// `serve --events` publishes (natsout).

var fleetCommand = &command{
	name:     "fleet",
	short:    "follow the fleet's events on NATS JetStream",
	synopsis: "fleet watch --events nats://HOST:PORT [--host H] [--sandbox S] [--durable NAME]",
	about: `Follow the stream SANDFS that daemons started with --events publish to,
printing each event as its JSON object (with host and sandbox), one a line,
until interrupted. --host and --sandbox keep one host's or one sandbox's.
Without --durable it reads the stream from its start; with --durable NAME
it reads through that durable consumer, whose cursor JetStream keeps: a
second run with the same NAME resumes after the last event printed.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		events := fs.String("events", e.getenv("SANDFS_EVENTS"), "the broker, `nats://HOST:PORT` (default: env SANDFS_EVENTS)")
		host := fs.String("host", "", "only the events of host `H`")
		sandbox := fs.String("sandbox", "", "only the events of sandboxes named `S`")
		durable := fs.String("durable", "", "read through the durable consumer `NAME` (resumes where it stopped)")
		return func(ctx context.Context, args []string) error {
			if len(args) != 1 || args[0] != "watch" {
				return usagef("fleet takes one subcommand: watch")
			}
			if *events == "" {
				return usagef("fleet watch needs --events nats://HOST:PORT")
			}
			enc := json.NewEncoder(e.stdout)
			return natsout.Follow(ctx, *events, *host, *sandbox, *durable, func(m natsout.Message) error {
				if err := enc.Encode(m); err != nil {
					return fmt.Errorf("fleet watch: %w", err)
				}
				return nil
			})
		}
	},
}
