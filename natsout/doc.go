// Package natsout publishes every sandbox's journal to one NATS JetStream
// stream: the fleet's feed of what every agent did to its files.
//
// One goroutine per sandbox reads the durable journal (journal.Scan) from
// its cursor and publishes each event, in seq order (asynchronously, up to
// inFlight awaiting their acks on one connection; the cursor moves only over
// a run of acked events), to the subject
// sandfs.<host>.<sandbox>.<type> as the named family's event JSON with host
// and sandbox added. Each message carries Nats-Msg-Id <host>/<sandbox>/<seq>,
// so the stream's duplicate window drops a message published twice.
//
// A filesystem call never waits on the broker: Append only wakes the
// publisher (a journal hook that does a non-blocking send), and the events
// wait in the durable journal while the broker is away. After acks the
// cursor is saved in the journal's store (history meta "nats_cursor"), every
// cursorEvery messages and at the end of each drained batch, so a restart
// (even after kill -9) resumes at most cursorEvery messages back, and those
// the duplicate window drops. The backlog is bounded by the journal's
// retention: a cursor older than the oldest kept event logs a warning with
// how many events were lost and resumes at the oldest kept.
//
// After reads the stream back for a host taking a sandbox up: the events
// of one sandbox, from any host, after a seq, in one bounded pass (an
// ephemeral consumer, each fetch with a deadline, a bound on what it
// looks at and on what it answers), every message decoded and checked,
// never believed.
//
// The package imports core and nats.go, never rest, fusefs or cmd.
package natsout
