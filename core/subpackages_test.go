package core_test

import (
	"context"
	"io"

	"sandfs/core"
	"sandfs/core/changes"
	"sandfs/core/tar"
)

// core's tests call these operations of its subpackages through hooks
// (helpers_test.go says why).
func init() {
	core.SetHooks(core.Hooks{
		ExtractTar: func(ctx context.Context, s *core.Sandbox, dest string, r io.Reader) error {
			_, err := tar.Extract(ctx, s, dest, r, tar.Options{})
			return err
		},
		ChangesLost: func(ctx context.Context, s *core.Sandbox, since uint64, path string) (bool, error) {
			cs, err := changes.Since(ctx, s, changes.Query{SinceSeq: since, Path: path})
			return cs.Lost, err
		},
	})
}
