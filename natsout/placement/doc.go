// Package placement says which host of the fleet serves a sandbox: a lease
// per sandbox in one KV bucket of the fleet's JetStream.
//
// The rule: a host holds a sandbox only while it holds its lease, and
// serves it only while it holds it.
//
//   - The bucket is Bucket (sandfs-placement), one for the fleet, made by
//     the first host that needs it with its TTL (the bucket's MaxAge: a
//     key not written for the TTL disappears) and limit markers (the
//     server writes a marker when it expires a key, so watchers hear of
//     it). A host whose TTL differs uses the bucket's and logs it.
//   - The key is the sandbox's name as natsout.EncodeName writes it (a
//     DNS label is itself); the value is Record's JSON: {name, host, url,
//     state ("serving" or "moving"), since, renewed, lease, to?}. lease is
//     a random id of this holding.
//   - Acquire takes the lease with a KV Create, which fails when the key
//     exists: then the holder is answered (*HeldError). A key naming this
//     host (its earlier run, killed before the TTL ran out, or a handoff
//     to it) is taken over with an Update on its revision.
//   - While held, the lease is renewed every TTL/3 with an Update on the
//     revision last written (compare-and-set). A renewal refused because
//     the revision moved, with the key now another holding's, means
//     another host took it: the lease is lost (Config.Lost, Taken) and the
//     host must stop serving the sandbox. A revision moved by this
//     holding's own earlier write (an ack lost) is adopted.
//   - A renewal that fails because the broker does not answer changes
//     nothing: the sandbox stays served. Once 3/4 of the TTL has passed
//     since the last renewal the broker took was sent, the lease is given
//     up (Config.Lost, Expired), a quarter of the TTL before the broker
//     can expire the key, so the host has stopped serving before another
//     host may take it. Nothing in this package is on a filesystem call's
//     path: a broker away never blocks one.
//   - Release deletes the key on the revision last written (a host that
//     lost it deletes nothing); SetMoving marks it "moving", Handoff writes
//     another host as its holder, "moving", for that host's Acquire (with
//     the checkpoint handed over: moves.go, which also holds Ping, the
//     watch of the handoffs to this host, Note and Refuse).
//   - Lookup answers from memory: a WatchAll of the bucket kept in a map
//     (expired and deleted keys removed as their markers arrive; an entry
//     not written again within 1.5 TTL is ignored as well, for a broker
//     that writes no markers), so routing a request never waits on the
//     broker.
//
// The package imports natsout and nats.go, never rest, fusefs, daemon or
// cmd; the daemon wires it (serve --placement).
package placement
