package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sandfs/natsout/placement"
	"sandfs/rest"
)

// # Placement (serve --placement)
//
// With placement on, a sandbox is served only while this host holds its
// lease in the fleet's bucket (natsout/placement): Host.start takes it
// before it opens anything, and Host.Stop gives it back after the sandbox
// is closed (so at shutdown every lease is released, the requests in
// flight finished first).
//
//   - Another host holds it: the start is refused with a log line naming
//     the holder (a *rest.HeldError: POST /v1/sandboxes answers 409 naming
//     it). It is not tried again by itself: a directory of --sandboxes is
//     tried again when DIR changes under its name or the daemon restarts.
//   - The broker does not answer: nothing is known, so the sandbox is not
//     served, and its start is tried again every TTL/3 until the broker
//     answers (then it is served, or refused as above).
//   - The lease lost while served: taken by another host (a renewal's
//     compare-and-set failed), the sandbox stops being served and stays
//     stopped; expired because the broker did not answer for 3/4 of the
//     TTL, it stops being served too (another host may take it once the
//     TTL ran out), and its start is tried again as above, so it comes back
//     when the broker does, unless another host took it meanwhile.
//
// A filesystem call never waits on any of this: the lease is taken before
// the sandbox is opened and renewed in the background, and a broker away
// changes nothing for 3/4 of the TTL.

// startPlacement connects the leases (nil: --placement is off).
func startPlacement(ctx context.Context, rc RunConfig, lost func(string, placement.Loss)) (*placement.Leases, error) {
	if rc.PlacementURL == "" {
		return nil, nil
	}
	l, err := placement.Start(ctx, placement.Config{URL: rc.PlacementURL, Host: rc.EventsHost, Self: rc.Advertise,
		TTL: rc.LeaseTTL, Log: rc.Host.Log, Lost: lost})
	if err != nil {
		return nil, err
	}
	rc.Host.Log.Info("placement: serving a sandbox only while holding its lease in "+rc.PlacementURL,
		"host", rc.EventsHost, "advertise", rc.Advertise, "bucket", placement.Bucket, "lease_ttl", l.TTL())
	return l, nil
}

// placed is the REST face's view of the placement (rest.Placement).
type placed struct{ l *placement.Leases }

func (p placed) Placed(name string) (rest.Placed, bool) {
	r, ok := p.l.Lookup(name)
	if !ok {
		return rest.Placed{}, false
	}
	return rest.Placed{Host: r.Host, URL: r.URL, Here: r.Host == p.l.Host(), Moving: r.State == placement.Moving}, true
}

// restPlacement is rc's placement for rest.Config (nil: off).
func restPlacement(l *placement.Leases) rest.Placement {
	if l == nil {
		return nil
	}
	return placed{l}
}

// acquire takes the lease of name before it is started (nil: placement
// off). retry, when not nil, starts it again later if the broker did not
// answer.
func (h *Host) acquire(name string, retry func() error) error {
	l := h.cfg.Placement
	if l == nil {
		return nil
	}
	err := l.Acquire(h.ctx, name)
	var held *placement.HeldError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &held):
		r := held.Record
		h.log.Warn("placement: sandbox "+name+" is held by host "+r.Host+"; not served here",
			"sandbox", name, "holder", r.Host, "holder_url", r.URL, "state", r.State)
		return &rest.HeldError{Name: name, Host: r.Host, URL: r.URL}
	case errors.Is(err, placement.ErrHeldHere):
		return fmt.Errorf("sandbox %s is served already", name)
	}
	h.log.Warn("placement: the broker did not answer; sandbox "+name+" is not served until it does",
		"sandbox", name, "err", err)
	if retry != nil {
		h.retryLater(name, retry)
	}
	return fmt.Errorf("sandbox %s: %w", name, err)
}

// release gives the lease of name back (placement off: nothing).
func (h *Host) release(name string) {
	if h.cfg.Placement == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.cfg.Placement.Release(ctx, name); err != nil {
		h.log.Warn("placement: releasing the lease failed; it expires after its TTL", "sandbox", name, "err", err)
	}
}

// leaseLost stops serving name, its lease lost (placement.Config.Lost).
func (h *Host) leaseLost(name string, why placement.Loss) {
	h.mu.Lock()
	e := h.m[name]
	dirLost := h.dirLost
	h.mu.Unlock()
	if e == nil {
		return
	}
	again := !why.Taken
	if !e.fixed && e.restart == nil && dirLost != nil && dirLost(name, again) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), removeWait)
	defer cancel()
	h.Stop(ctx, name, false)
	h.log.Warn("placement: stopped serving sandbox "+name+": its lease is lost", "sandbox", name, "taken_by", why.By.Host)
	if again && e.restart != nil {
		h.retryLater(name, e.restart)
	}
}

// retryLater starts name again (fn) every TTL/3 until the broker answers.
func (h *Host) retryLater(name string, fn func() error) {
	h.mu.Lock()
	h.waiting[name] = fn
	start := !h.retrying
	h.retrying = true
	h.mu.Unlock()
	if start {
		go h.retryLoop()
	}
}

// retryLoop runs the starts waiting for the broker, until the daemon stops.
func (h *Host) retryLoop() {
	t := time.NewTicker(h.cfg.Placement.TTL() / 3)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		fns := h.waiting
		h.waiting = map[string]func() error{}
		h.mu.Unlock()
		for name, fn := range fns {
			if err := fn(); err == nil {
				h.log.Info("placement: serving sandbox "+name+" now that the broker answers", "sandbox", name)
			}
		}
	}
}
