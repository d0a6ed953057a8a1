package aio

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

// The AIO routes that make, copy, move and delete entries.

// mkdir: POST /v2/fs/mkdir {path, parents}, POST /v1/file/mkdir; ?user or
// the body's user owns the directories made. parents defaults to true (an
// existing directory is then fine); without it an existing path is
// already_exists and a missing parent not_found.
func (s *Family) mkdir(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	req, p, err := s.pathBody(w, r)
	if err != nil {
		return err
	}
	ctx, err := ownerCtx(r, "mkdir", req.User)
	if err != nil {
		return err
	}
	fsys := s.fileFS(ctx)
	ap, err := fsys.Clean(p)
	if err != nil {
		return httpkit.WithOp("mkdir", err)
	}
	_, serr := fsys.Stat(ctx, ap)
	if err := fsys.Mkdir(ctx, ap, boolOr(req.Parents, true), 0); err != nil {
		return httpkit.WithOp("mkdir", err)
	}
	return writeAIO(w, MkdirResult{Path: ap, Created: serr != nil})
}

func (s *Family) transferPaths(w http.ResponseWriter, r *http.Request) (transferRequest, string, string, error) {
	var req transferRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return req, "", "", err
	}
	switch {
	case req.Source == nil:
		return req, "", "", missing("source")
	case req.Destination == nil:
		return req, "", "", missing("destination")
	}
	fsys := s.fileFS(r.Context())
	src, err := fsys.Clean(*req.Source)
	if err != nil {
		return req, "", "", err
	}
	dst, err := fsys.Clean(*req.Destination)
	if err != nil {
		return req, "", "", err
	}
	return req, src, dst, nil
}

// copyEntry: POST /v2/fs/copy, POST /v1/file/copy {source, destination,
// overwrite, expected_etag}: a file (mode kept, data cloned or copied in the kernel) or a
// directory whole (symlinks copied as symlinks); an existing destination is
// already_exists unless overwrite; missing parents of the destination are
// made. ?user or the body's user owns what the copy creates.
func (s *Family) copyEntry(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	req, src, dst, err := s.transferPaths(w, r)
	if err != nil {
		return httpkit.WithOp("copy", err)
	}
	ctx, err := ownerCtx(r, "copy", req.User)
	if err != nil {
		return err
	}
	pre, err := httpkit.ReadPrecondition(r, req.ExpectedETag, "expected_etag")
	if err != nil {
		return httpkit.WithOp("copy", err)
	}
	st, err := s.fileFS(ctx).Copy(ctx, src, dst, core.CopyOptions{Overwrite: boolOr(req.Overwrite, false), MkdirParents: true, Pre: pre})
	if err != nil {
		return httpkit.WithOp("copy", err)
	}
	return writeAIO(w, CopyResult{Source: src, Destination: dst, Entries: st.Entries, BytesCopied: st.Bytes})
}

// moveEntry: POST /v2/fs/move, POST /v1/file/move {source, destination,
// overwrite, expected_etag (of the source)}: renameat2(RENAME_NOREPLACE) unless overwrite; missing parents
// of the destination are made.
func (s *Family) moveEntry(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	req, src, dst, err := s.transferPaths(w, r)
	if err != nil {
		return httpkit.WithOp("move", err)
	}
	pre, err := httpkit.ReadPrecondition(r, req.ExpectedETag, "expected_etag")
	if err != nil {
		return httpkit.WithOp("move", err)
	}
	if err := s.fileFS(r.Context()).Move(r.Context(), src, dst, core.MoveOptions{Overwrite: boolOr(req.Overwrite, false), MkdirParents: true, Pre: pre}); err != nil {
		return httpkit.WithOp("move", err)
	}
	return writeAIO(w, MoveResult{Source: src, Destination: dst})
}

// deleteEntry: POST /v2/fs/delete, POST /v1/file/delete {path, recursive,
// expected_etag}:
// a non-empty directory needs recursive (else invalid_target, 409 on v2).
func (s *Family) deleteEntry(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	req, p, err := s.pathBody(w, r)
	if err != nil {
		return err
	}
	fsys := s.fileFS(r.Context())
	ap, err := fsys.Clean(p)
	if err != nil {
		return httpkit.WithOp("delete", err)
	}
	pre, err := httpkit.ReadPrecondition(r, req.ExpectedETag, "expected_etag")
	if err != nil {
		return httpkit.WithOp("delete", err)
	}
	if err := fsys.RemoveWith(r.Context(), ap, core.RemoveOptions{Recursive: boolOr(req.Recursive, false), Pre: pre}); err != nil {
		return httpkit.WithOp("delete", err)
	}
	return writeAIO(w, DeleteResult{Path: ap})
}
