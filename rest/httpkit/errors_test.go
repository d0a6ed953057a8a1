package httpkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/changes"
	"sandfs/core/checkpoint"
	"sandfs/core/journal"
	coretar "sandfs/core/tar"
)

func TestClassify(t *testing.T) {
	pe := func(op string, errno error) error { return &fs.PathError{Op: op, Path: "/a/b", Err: errno} }
	cases := []struct {
		name     string
		err      error
		kind     Kind
		status   int
		detail   string // substring
		internal bool
	}{
		{"ENOENT", pe(core.OpStat, unix.ENOENT), KindNotFound, 404, "stat /a/b: no such file or directory", false},
		{"wrapped ENOENT", fmt.Errorf("x: %w", pe(core.OpOpen, unix.ENOENT)), KindNotFound, 404, "/a/b", false},
		{"EACCES", pe(core.OpOpen, unix.EACCES), KindPermissionDenied, 403, "permission denied", false},
		{"EPERM", pe(core.OpRemove, unix.EPERM), KindPermissionDenied, 403, "", false},
		{"EROFS", pe(core.OpWrite, unix.EROFS), KindReadOnly, 403, "", false},
		{"EEXIST", pe(core.OpMkdir, unix.EEXIST), KindAlreadyExists, 409, "", false},
		{"ENOTEMPTY on move", pe(core.OpMove, unix.ENOTEMPTY), KindAlreadyExists, 409, "", false},
		{"ENOTEMPTY on remove", pe(core.OpRemove, unix.ENOTEMPTY), KindInvalidTarget, 409, "", false},
		{"ENOTDIR", pe(core.OpList, unix.ENOTDIR), KindInvalidTarget, 400, "", false},
		{"EISDIR", pe(core.OpOpen, unix.EISDIR), KindInvalidTarget, 400, "is a directory", false},
		{"EINVAL", pe(core.OpOpen, unix.EINVAL), KindInvalidTarget, 400, "", false},
		{"ELOOP", pe(core.OpStat, unix.ELOOP), KindInvalidPath, 400, "", false},
		{"ENAMETOOLONG", pe(core.OpStat, unix.ENAMETOOLONG), KindInvalidPath, 400, "", false},
		{"bad path", pe("resolve", unix.EINVAL), KindInvalidPath, 400, "empty or contains a NUL", false},
		{"ENOSPC", pe(core.OpWrite, unix.ENOSPC), KindNoSpace, 507, "", false},
		{"EDQUOT", pe(core.OpWrite, unix.EDQUOT), KindNoSpace, 507, "", false},
		{"EFBIG", pe(core.OpWrite, unix.EFBIG), KindTooLarge, 413, "", false},
		{"EIO", pe(core.OpWrite, unix.EIO), KindIO, 500, "", true},
		{"unknown checkpoint", fmt.Errorf("since checkpoint %q: %w", "cp_x", checkpoint.ErrUnknown), KindNotFound, 404, `since checkpoint "cp_x": unknown checkpoint`, false},
		{"bad changes query", fmt.Errorf("%w: limit out of range", changes.ErrQuery), KindInvalidRequest, 400, "limit out of range", false},
		{"no errno", errors.New("/host/secret/path exploded"), KindIO, 500, "", true},
		{"tar entry", &coretar.EntryError{Entry: "../x", Reason: "climbs", Errno: unix.EINVAL}, KindInvalidPath, 400, `tar entry "../x": climbs`, false},
		{"tar limit", &coretar.EntryError{Entry: "x", Reason: "too many entries", Errno: unix.EFBIG}, KindTooLarge, 413, "", false},
		{"malformed tar", pe(coretar.OpUntar, io.ErrUnexpectedEOF), KindInvalidRequest, 400, "malformed tar archive", false},
		{"body cut short", &BodyError{io.ErrUnexpectedEOF}, KindInvalidRequest, 400, "request body", false},
		{"body over limit", pe(coretar.OpUntar, &http.MaxBytesError{Limit: 10}), KindTooLarge, 413, "10 bytes", false},
		{"request error", InvalidRequest("bad %s", "thing"), KindInvalidRequest, 400, "bad thing", false},
		{"media type", UnsupportedMedia("nope"), KindUnsupportedMedia, 415, "nope", false},
		{"unauthorized", ErrUnauthorized, KindUnauthorized, 401, "token", false},
		{"canceled", context.Canceled, KindInvalidRequest, 400, "canceled", false},
		{"checkpoint store full", &checkpoint.StoreFullError{Limit: 100, Stored: 90, Need: 20}, KindNoSpace, 507, "limit 100 bytes, 90 stored, up to 20 more needed", false},
		{"journal unavailable", fmt.Errorf("%w: database disk image is malformed (11)", journal.ErrStoreUnavailable), KindJournalUnavailable, 503, "database disk image is malformed", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := Classify(c.err)
			if k.Kind != c.kind || k.Status != c.status || k.Internal != c.internal {
				t.Errorf("got %s %d internal=%v, want %s %d internal=%v", k.Kind, k.Status, k.Internal, c.kind, c.status, c.internal)
			}
			if !strings.Contains(k.Detail, c.detail) {
				t.Errorf("detail: got %q, want it to contain %q", k.Detail, c.detail)
			}
			if c.internal && k.Detail != "" {
				t.Errorf("internal error detail: got %q, want none (fail writes a generic one)", k.Detail)
			}
		})
	}
}
