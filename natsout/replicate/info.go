package replicate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// What a host taking the sandbox up needs beside its trees: its own token
// and quota, kept in the sandbox's KV bucket under InfoKey (JSON Info),
// put when the sandbox is first replicated and again when they change
// (Describe). The token is a secret the broker then holds: the fleet's
// broker is as trusted as the state directory, which holds it too.

// InfoKey is the key of the sandbox's Info in its KV bucket (no
// checkpoint id has its shape).
const InfoKey = "sandbox"

// Info is a sandbox's token and quota as the fleet keeps them.
type Info struct {
	Token string    `json:"token,omitempty"` // "" when the daemon gives sandboxes no token
	Quota InfoQuota `json:"quota"`
}

// InfoQuota is a quota's bounds (0: none).
type InfoQuota struct {
	Bytes   int64 `json:"bytes"`
	Entries int64 `json:"entries"`
}

// maxToken bounds a token read from the fleet.
const maxToken = 1024

// Describe has the sandbox's Info put in its KV (the next time its
// replication runs: nothing waits on the broker). A name not replicated
// is nothing to do.
func (r *Replicator) Describe(name string, info Info) {
	r.mu.Lock()
	s := r.reps[name]
	r.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	s.info = &info
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// sendInfo puts the Info Describe left, if any.
func (s *sandbox) sendInfo(ctx context.Context) error {
	s.mu.Lock()
	info := s.info
	s.mu.Unlock()
	if info == nil {
		return nil
	}
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := kv.Put(pctx, InfoKey, b); err != nil {
		return fmt.Errorf("the sandbox's token and quota: %w", err)
	}
	s.mu.Lock()
	if s.info == info { // not described again meanwhile
		s.info = nil
	}
	s.mu.Unlock()
	return nil
}

// Info is the sandbox's token and quota as the fleet keeps them; false
// when it keeps none. A token not of a token's shape is refused.
func (f *Fleet) Info(ctx context.Context, name string) (Info, bool, error) {
	var in Info
	kv, err := f.bucket(ctx, name)
	if errors.Is(err, ErrNoCheckpoint) {
		return in, false, nil
	} else if err != nil {
		return in, false, err
	}
	gctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	e, err := kv.Get(gctx, InfoKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return in, false, nil
	} else if err != nil {
		return in, false, err
	}
	if err := json.Unmarshal(e.Value(), &in); err != nil {
		return in, false, fmt.Errorf("sandbox %s: its token and quota in the fleet: %w", name, err)
	}
	if len(in.Token) > maxToken || strings.ContainsFunc(in.Token, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return Info{}, false, fmt.Errorf("sandbox %s: the fleet's token is not of a token's shape: refused", name)
	}
	if in.Quota.Bytes < 0 || in.Quota.Entries < 0 {
		return Info{}, false, fmt.Errorf("sandbox %s: the fleet's quota has a negative bound: refused", name)
	}
	return in, true, nil
}
