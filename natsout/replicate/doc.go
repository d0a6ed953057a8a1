// Package replicate pushes every checkpoint of every sandbox to the
// fleet's NATS JetStream, so another host can take the sandbox up from it.
//
// The rule: a checkpoint never waits on the broker. checkpoint.OnCreate's
// hook only appends the checkpoint to a bounded queue (one per sandbox)
// and returns; one goroutine per sandbox sends, in the order the
// checkpoints were made:
//
//  1. each object the checkpoint names, named by its SHA-256: one of at
//     most SmallMax bytes to the KV bucket SmallBucket, by a create the
//     broker refuses when the bucket has it (small.go says why), a larger
//     one to the one Object Store bucket ObjectsBucket, only when the
//     bucket lacks it (its info is asked first); the objects of the
//     previous checkpoint sent are known and not offered again, so content
//     shared by checkpoints and sandboxes is stored once;
//  2. then its manifest (Manifest, versioned JSON) to the sandbox's KV
//     bucket (BucketOf), keyed by checkpoint id, by a create that refuses
//     a key already there. The manifest goes last: a manifest present
//     means every object it names is in the bucket.
//
// A manifest is a delta when it can be (delta.go): the paths added,
// changed and removed since the manifest sent before it (its Base), not
// the whole tree again, so a checkpoint that changed a few files of a
// large tree sends about their bytes; when the checkpoint is, in the
// store, a delta of the one sent last, the manifest is made from that
// delta, so making it costs about the changes too, not the tree. The first manifest after a start,
// the one after 16 deltas, and one a delta would not shrink are full. A reader
// (ReadManifest) applies the chain back to the full tree, refusing a
// chain past 64, a cycle, a missing base or a malformed delta.
//
// A broker away or slow leaves the queue waiting; a send that fails is
// tried again with backoff from the checkpoint it stopped at. A hook that
// finds the queue full is counted and logged, and the sandbox's
// checkpoints are then listed from the store and each one the KV lacks is
// sent, in order: the store is the queue of last resort. Nothing is sent
// twice: an object in the bucket and a manifest in the KV are skipped. A
// checkpoint deleted before its turn (the schedule keeps a few) is skipped.
//
// Beside the manifests, the sandbox's KV holds its token and quota under
// InfoKey (Describe puts them, queued as checkpoints are), for the host
// that takes it up.
//
// The way back (fetch.go): Fleet reads what the hosts replicated. Header
// names a sandbox's checkpoint (the newest by seq, then time), Info its
// token and quota, and Fetch brings a checkpoint into a local sandbox's
// store: every entry checked before anything is fetched
// (checkpoint.CheckEntries), only the objects the store lacks fetched,
// each refused unless its bytes hash to its name (cas.Store.PutNamed),
// one answered missing asked again a few times first (the broker folds
// any error loading a message into "not found"), then the checkpoint
// recorded (checkpoint.Import). Into a store that
// holds a checkpoint of the manifest's chain of deltas, only the deltas
// above it are read, and the checkpoint is recorded as a delta of it
// (fetch_delta.go, checkpoint.ImportDelta). What the broker sends is
// checked as if it were hostile.
//
// The package imports core/checkpoint and nats.go, never rest, fusefs,
// daemon or cmd; the daemon wires it (serve --replicate).
package replicate
