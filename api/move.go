package api

// SandboxMoved is the answer of POST /v1/sandboxes/{name}/move {to}: the
// sandbox now served by host To, from its checkpoint Checkpoint (seq Seq;
// the journal there numbers on above it), what the old host's replicator
// sent of that checkpoint and what the new host fetched.
type SandboxMoved struct {
	Name       string  `json:"name"`
	From       string  `json:"from"` // the old host (its --events-host)
	To         string  `json:"to"`
	URL        string  `json:"url"` // where the new host serves it
	Checkpoint string  `json:"checkpoint"`
	Seq        uint64  `json:"seq"`
	Seconds    float64 `json:"seconds"` // the move's time, writes refused for all of it
	Sent       Fetched `json:"sent"`
	Fetched    Fetched `json:"fetched"`
}
