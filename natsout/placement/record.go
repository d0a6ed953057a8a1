package placement

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"sandfs/natsout"
)

// Bucket is the fleet's one placement bucket.
const Bucket = "sandfs-placement"

// DefaultTTL is a lease's life without renewal (serve --lease-ttl).
const DefaultTTL = 15 * time.Second

// MinTTL is the shortest TTL: the server's markers live at least 1 s.
const MinTTL = time.Second

// State is what the holder does with the sandbox.
type State string

const (
	Serving State = "serving" // the holder serves it
	Moving  State = "moving"  // it is being moved: nobody serves it (503)
)

// Record is a lease's value.
type Record struct {
	Name    string    `json:"name"`
	Host    string    `json:"host"`  // the holder's --events-host
	URL     string    `json:"url"`   // where clients reach the holder (--advertise)
	State   State     `json:"state"` // serving or moving
	Since   time.Time `json:"since"` // when this holding began
	Renewed time.Time `json:"renewed"`
	Lease   string    `json:"lease"`        // this holding's random id ("" after a handoff)
	To      string    `json:"to,omitempty"` // moving: the host it goes to
	// A move's (moves.go): the checkpoint handed over, its seq, the host
	// it came from, what the new holder fetched, or why it refused.
	Checkpoint string   `json:"checkpoint,omitempty"`
	Seq        uint64   `json:"seq,omitempty"`
	From       string   `json:"from,omitempty"`
	Fetched    *Fetched `json:"fetched,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// Fetched is what the new holder of a moved sandbox fetched from the fleet.
type Fetched struct {
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// KeyOf is the sandbox's key in Bucket.
func KeyOf(name string) string { return natsout.EncodeName(name) }

// HeldError is an Acquire refused: another host holds the lease.
type HeldError struct{ Record Record }

func (e *HeldError) Error() string {
	r := e.Record
	s := fmt.Sprintf("sandbox %s is held by host %s", r.Name, r.Host)
	if r.URL != "" {
		s += " (" + r.URL + ")"
	}
	if r.State == Moving {
		s += ", moving"
	}
	return s
}

// ErrBroker is an operation the broker did not answer (away, slow, or an
// error of its own): nothing is known of the lease; try again later.
var ErrBroker = errors.New("placement: the broker did not answer")

// ErrHeldHere is an Acquire of a lease this daemon holds already.
var ErrHeldHere = errors.New("placement: this daemon holds the lease already")

// ErrNotHeld is an operation on a lease this daemon does not hold.
var ErrNotHeld = errors.New("placement: this daemon does not hold the lease")

func brokerErr(op, name string, err error) error {
	return fmt.Errorf("%w: %s %s: %v", ErrBroker, op, name, err)
}

// Loss is why a lease was lost.
type Loss struct {
	// Taken: another holding wrote the key (By is it). Else the lease
	// expired unrenewed: the broker did not answer for 3/4 of the TTL.
	Taken bool
	By    Record
}

// newLeaseID is a holding's random id.
func newLeaseID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
