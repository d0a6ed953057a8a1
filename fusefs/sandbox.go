package fusefs

import (
	"context"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/journal"
)

// sandbox is what the mirror needs of a core.Sandbox: its Dirs (every
// request is a call on one, core/dir.go), whether the kernel watch covers a
// path (what the kernel may cache) and its journal (to hear outside
// changes). The filesystem under its root is asked of core.Root (Mirror.fs).
type sandbox interface {
	Name() string
	RootDir() *core.Dir
	NewDir(path func() string, open func() (int, error), hold bool) *core.Dir
	Watch() core.WatchView
	LstatRaw(ctx context.Context, p string) (unix.Stat_t, error)
	Journal() *journal.Journal
}

var _ sandbox = (*core.Sandbox)(nil)
