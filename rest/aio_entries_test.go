package rest

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/rest/aio"
)

func TestAIOMkdirCopyMoveDelete(t *testing.T) {
	h := newFilesHarness(t, nil)
	t.Run("mkdir", func(t *testing.T) {
		d := wantAIO[aio.MkdirResult](t, h.post(t, "/v2/fs/mkdir", `{"path":"/m/a/b"}`))
		if d != (aio.MkdirResult{Path: "/m/a/b", Created: true}) {
			t.Errorf("got %+v", d)
		}
		h.wantDir(t, "/m/a/b")
		d = wantAIO[aio.MkdirResult](t, h.v1(t, "/v1/file/mkdir", `{"path":"/m/a/b","parents":true}`))
		if d != (aio.MkdirResult{Path: "/m/a/b", Created: false}) {
			t.Errorf("existing with parents: got %+v", d)
		}
		wantAIOError(t, h.post(t, "/v2/fs/mkdir", `{"path":"/m/a/b","parents":false}`), 409, "already_exists")
		wantV1Failure(t, h.v1(t, "/v1/file/mkdir", `{"path":"/m/a/b","parents":false}`), "already_exists", unix.EEXIST, "FileExistsError")
		wantAIOError(t, h.post(t, "/v2/fs/mkdir", `{"path":"/q/r","parents":false}`), 404, "not_found")
		wantValidation(t, h.post(t, "/v2/fs/mkdir", `{}`), "body.path", "missing")
		h.wantAbsent(t, "/q")
	})
	h.writeFile(t, "/c/src/f.sh", "#!/bin/sh\n")
	os.Chmod(h.host("/c/src/f.sh"), 0o750)
	h.writeFile(t, "/c/src/sub/g.txt", "g")
	h.symlink(t, "sub/g.txt", "/c/src/lnk")
	h.writeFile(t, "/c/exists.txt", "keep")
	t.Run("copy", func(t *testing.T) {
		d := wantAIO[aio.CopyResult](t, h.post(t, "/v2/fs/copy", `{"source":"/c/src/f.sh","destination":"/c/dst/f.sh"}`))
		if d != (aio.CopyResult{Source: "/c/src/f.sh", Destination: "/c/dst/f.sh", Entries: 1, BytesCopied: 10}) {
			t.Errorf("file: got %+v", d)
		}
		h.wantFile(t, "/c/dst/f.sh", "#!/bin/sh\n")
		if fi, _ := os.Stat(h.host("/c/dst/f.sh")); fi.Mode().Perm() != 0o750 {
			t.Errorf("mode: got %v, want 0750", fi.Mode().Perm())
		}
		d = wantAIO[aio.CopyResult](t, h.v1(t, "/v1/file/copy", `{"source":"/c/src","destination":"/c/tree"}`))
		if d.Entries != 5 || d.BytesCopied != 11 {
			t.Errorf("tree: got %+v, want 5 entries 11 bytes", d)
		}
		h.wantFile(t, "/c/tree/sub/g.txt", "g")
		if tgt, err := os.Readlink(h.host("/c/tree/lnk")); err != nil || tgt != "sub/g.txt" {
			t.Errorf("symlink: got %q %v", tgt, err)
		}
		wantAIOError(t, h.post(t, "/v2/fs/copy", `{"source":"/c/src/f.sh","destination":"/c/exists.txt"}`), 409, "already_exists")
		wantV1Failure(t, h.v1(t, "/v1/file/copy", `{"source":"/c/src/f.sh","destination":"/c/exists.txt"}`), "already_exists", unix.EEXIST, "FileExistsError")
		h.wantFile(t, "/c/exists.txt", "keep")
		wantAIO[aio.CopyResult](t, h.post(t, "/v2/fs/copy", `{"source":"/c/src/f.sh","destination":"/c/exists.txt","overwrite":true}`))
		h.wantFile(t, "/c/exists.txt", "#!/bin/sh\n")
		wantAIOError(t, h.post(t, "/v2/fs/copy", `{"source":"/c/none","destination":"/c/x"}`), 404, "not_found")
		wantAIOError(t, h.post(t, "/v2/fs/copy", `{"source":"/c/src","destination":"/c/src/inner"}`), 400, "invalid_target")
		wantValidation(t, h.post(t, "/v2/fs/copy", `{"source":"/c/src"}`), "body.destination", "missing")
		h.wantAbsent(t, "/c/x")
		h.wantAbsent(t, "/c/src/inner")
	})
	t.Run("move", func(t *testing.T) {
		h.writeFile(t, "/mv/a", "A")
		h.writeFile(t, "/mv/b", "B")
		wantAIOError(t, h.post(t, "/v2/fs/move", `{"source":"/mv/a","destination":"/mv/b"}`), 409, "already_exists")
		wantV1Failure(t, h.v1(t, "/v1/file/move", `{"source":"/mv/a","destination":"/mv/b"}`), "already_exists", unix.EEXIST, "FileExistsError")
		h.wantFile(t, "/mv/b", "B")
		d := wantAIO[aio.MoveResult](t, h.post(t, "/v2/fs/move", `{"source":"/mv/a","destination":"/mv/b","overwrite":true}`))
		if d != (aio.MoveResult{Source: "/mv/a", Destination: "/mv/b"}) {
			t.Errorf("got %+v", d)
		}
		h.wantFile(t, "/mv/b", "A")
		h.wantAbsent(t, "/mv/a")
		wantAIO[aio.MoveResult](t, h.v1(t, "/v1/file/move", `{"source":"/mv/b","destination":"/mv/new/c"}`))
		h.wantFile(t, "/mv/new/c", "A")
		wantAIOError(t, h.post(t, "/v2/fs/move", `{"source":"/mv/none","destination":"/mv/z"}`), 404, "not_found")
	})
	t.Run("delete", func(t *testing.T) {
		h.writeFile(t, "/del/d/f", "x")
		f := wantAIOError(t, h.post(t, "/v2/fs/delete", `{"path":"/del/d"}`), 409, "invalid_target")
		wantErrno(t, f, unix.ENOTEMPTY, "OSError")
		wantV1Failure(t, h.v1(t, "/v1/file/delete", `{"path":"/del/d"}`), "invalid_target", unix.ENOTEMPTY, "OSError")
		h.wantFile(t, "/del/d/f", "x")
		d := wantAIO[aio.DeleteResult](t, h.v1(t, "/v1/file/delete", `{"path":"/del/d","recursive":true}`))
		if d.Path != "/del/d" {
			t.Errorf("got %+v", d)
		}
		h.wantAbsent(t, "/del/d")
		wantAIOError(t, h.post(t, "/v2/fs/delete", `{"path":"/del/d"}`), 404, "not_found")
		wantAIOError(t, h.post(t, "/v2/fs/delete", `{"path":"/"}`), 400, "invalid_target")
	})
}
