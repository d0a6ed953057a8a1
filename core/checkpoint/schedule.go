package checkpoint

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"sandfs/core"
)

// StartCheckpointSchedule takes a checkpoint (reason "scheduled") every
// interval until ctx ends, skipping a tick when the journal has no event
// since the newest checkpoint, and keeps the newest keep scheduled ones
// (older scheduled checkpoints are deleted; manual and before-restore ones
// are never touched). every <= 0 or a sandbox without state does nothing.
func StartSchedule(ctx context.Context, s *core.Sandbox, every time.Duration, keep int) {
	if every <= 0 || s.StateDir() == "" {
		return
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := scheduledCheckpoint(ctx, s, keep); err != nil && ctx.Err() == nil {
				slog.Warn("scheduled checkpoint failed", "sandbox", s.Name(), "err", err)
			}
		}
	}()
}

// scheduledCheckpoint is one tick of the schedule.
func scheduledCheckpoint(ctx context.Context, s *core.Sandbox, keep int) error {
	list, err := List(s)
	if err != nil {
		return err
	}
	if n := len(list); n > 0 && list[n-1].Seq >= s.Journal().Seq() {
		return nil // nothing changed since the newest
	}
	if _, err := Create(ctx, s, Options{Reason: ReasonScheduled}); err != nil {
		return err
	}
	if list, err = List(s); err != nil {
		return err
	}
	var scheduled []string
	for _, cp := range list {
		if cp.Reason == ReasonScheduled {
			scheduled = append(scheduled, cp.ID)
		}
	}
	excess := len(scheduled) - max(keep, 1)
	for _, id := range scheduled {
		if excess <= 0 {
			break
		}
		switch err := Delete(s, id); {
		case errors.Is(err, ErrPinned): // a fork's base stays; the next oldest goes
		case err != nil:
			return err
		default:
			excess--
		}
	}
	return nil
}
