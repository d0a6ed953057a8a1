package core

import (
	"context"
	"log/slog"
	"time"
)

// StartCheckpointSchedule takes a checkpoint (reason "scheduled") every
// interval until ctx ends, skipping a tick when the journal has no event
// since the newest checkpoint, and keeps the newest keep scheduled ones
// (older scheduled checkpoints are deleted; manual and before-restore ones
// are never touched). every <= 0 or a sandbox without state does nothing.
func (s *Sandbox) StartCheckpointSchedule(ctx context.Context, every time.Duration, keep int) {
	if every <= 0 || s.stateDir == "" {
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
			if err := s.scheduledCheckpoint(ctx, keep); err != nil && ctx.Err() == nil {
				slog.Warn("scheduled checkpoint failed", "sandbox", s.name, "err", err)
			}
		}
	}()
}

// scheduledCheckpoint is one tick of the schedule.
func (s *Sandbox) scheduledCheckpoint(ctx context.Context, keep int) error {
	list, err := s.Checkpoints()
	if err != nil {
		return err
	}
	if n := len(list); n > 0 && list[n-1].Seq >= s.journal.Seq() {
		return nil // nothing changed since the newest
	}
	if _, err := s.CreateCheckpoint(ctx, CheckpointOptions{Reason: ReasonScheduled}); err != nil {
		return err
	}
	if list, err = s.Checkpoints(); err != nil {
		return err
	}
	var scheduled []string
	for _, cp := range list {
		if cp.Reason == ReasonScheduled {
			scheduled = append(scheduled, cp.ID)
		}
	}
	for len(scheduled) > max(keep, 1) {
		if err := s.DeleteCheckpoint(scheduled[0]); err != nil {
			return err
		}
		scheduled = scheduled[1:]
	}
	return nil
}
