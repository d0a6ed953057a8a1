package core

import "context"

// makeTestCheckpoint records a checkpoint of s for the changes-since tests.
// Stand-in (see zz_checkpoint_standin.go): the lead makes it call the real
// checkpoint API at merge, and TestChangesSinceCheckpoint then runs.
func makeTestCheckpoint(ctx context.Context, s *Sandbox, name string) (Checkpoint, error) {
	return Checkpoint{}, ErrUnknownCheckpoint
}
