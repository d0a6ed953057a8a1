package fusefs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
	"testing"
)

func TestToErrno(t *testing.T) {
	m := &Mirror{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, tc := range []struct {
		err  error
		want syscall.Errno
	}{
		{nil, 0},
		{syscall.ENOENT, syscall.ENOENT},
		{&fs.PathError{Op: "stat", Path: "/a", Err: syscall.ENOTEMPTY}, syscall.ENOTEMPTY},
		{fmt.Errorf("wrapped: %w", &fs.PathError{Op: "open", Path: "/a", Err: syscall.EXDEV}), syscall.EXDEV},
		{fmt.Errorf("no errno: %w", fs.ErrNotExist), syscall.ENOENT},
		{os.NewSyscallError("renameat2", syscall.ENOTDIR), syscall.ENOTDIR},
		{&os.LinkError{Op: "link", Old: "/a", New: "/b", Err: syscall.EMLINK}, syscall.EMLINK},
		{fs.ErrExist, syscall.EEXIST},
		{fs.ErrPermission, syscall.EACCES},
		{errors.New("something else"), syscall.EIO},
	} {
		if got := m.toErrno(tc.err); got != tc.want {
			t.Errorf("toErrno(%v): got %v, want %v", tc.err, got, tc.want)
		}
	}
}
