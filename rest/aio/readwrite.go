package aio

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

// The AIO text routes: read, write and stat.

// readV2: GET /v2/fs/read?path&start_line&end_line.
func (s *Family) readV2(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, p, err := aioPathQuery(r)
	if err != nil {
		return err
	}
	start, err := httpkit.IntQuery[int](q, "start_line", httpkit.AIODialect)
	if err != nil {
		return err
	}
	end, err := httpkit.IntQuery[int](q, "end_line", httpkit.AIODialect)
	if err != nil {
		return err
	}
	res, err := s.readText(r.Context(), p, start, end)
	if err != nil {
		return httpkit.WithOp("read", err)
	}
	return writeAIO(w, res)
}

// readV1: POST /v1/file/read {file, start_line, end_line, sudo}.
func (s *Family) readV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req fileReadRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	p := pick(req.File, req.Path)
	if p == nil {
		return missing("file")
	}
	res, err := s.readText(r.Context(), *p, req.StartLine, req.EndLine)
	if err != nil {
		return httpkit.WithOp("read", err)
	}
	return writeAIO(w, res)
}

// readText reads the text file at p whole (up to the buffered limit) and
// returns lines [start, end): 0-based, end exclusive, negative counting
// from the end, out of range clamped (Python slice semantics, as the 1.x
// daemon slices its list of lines). Line endings are kept.
func (s *Family) readText(ctx context.Context, p string, start, end *int) (FileReadResult, error) {
	ap, content, err := s.readWhole(ctx, p)
	if err != nil {
		return FileReadResult{}, err
	}
	if start != nil || end != nil {
		lines := splitLines(content)
		a, b := sliceBounds(len(lines), start, end)
		content = strings.Join(lines[a:b], "")
	}
	return FileReadResult{Content: content, File: ap}, nil
}

// readWhole reads the regular file at p as UTF-8 text of at most the
// buffered limit: over it is file_too_large (413), bytes that are not UTF-8
// are decode_error (422).
func (s *Family) readWhole(ctx context.Context, p string) (string, string, error) {
	limit := s.files().limits.ReadBytes
	f, info, err := s.fileFS(ctx).OpenFile(ctx, p)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return &httpkit.FileError{Kind: httpkit.KindTooLarge, Status: http.StatusRequestEntityTooLarge, Op: "read", Path: info.Path,
			Msg: fmt.Sprintf("file %s is %d bytes, over the %d-byte buffered text limit; download streams it instead", info.Path, size, limit)}
	}
	if info.Size > limit {
		return "", "", tooLarge(info.Size)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", "", &fs.PathError{Op: "read", Path: info.Path, Err: err}
	}
	if int64(len(b)) > limit {
		return "", "", tooLarge(int64(len(b)))
	}
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, n := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return "", "", &httpkit.FileError{Kind: httpkit.KindDecode, Status: http.StatusUnprocessableEntity, Op: "read", Path: info.Path,
			Msg: fmt.Sprintf("file %s is not UTF-8 text (invalid byte at offset %d); download reads bytes", info.Path, off)}
	}
	return info.Path, string(b), nil
}

// splitLines splits text after each "\n", keeping the endings ("\r\n"
// stays whole); a last line without an ending is a line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// sliceBounds is Python's lines[start:end] on n lines.
func sliceBounds(n int, start, end *int) (int, int) {
	norm := func(p *int, def int) int {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += n
		}
		return min(max(v, 0), n)
	}
	a, b := norm(start, 0), norm(end, n)
	if b < a {
		b = a
	}
	return a, b
}

// writeFile: POST /v2/fs/write {path, content, encoding, append,
// leading_newline, trailing_newline}, POST /v1/file/write {file, …}; ?user
// or the body's user names the owner of what the write creates.
func (s *Family) writeFile(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req fileWriteRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	p := pick(req.Path, req.File)
	if isV1(r) {
		p = pick(req.File, req.Path)
	}
	switch {
	case p == nil && isV1(r):
		return missing("file")
	case p == nil:
		return missing("path")
	case req.Content == nil:
		return missing("content")
	}
	data, err := encodeContent(req)
	if err != nil {
		return httpkit.WithOp("write", err)
	}
	ctx, err := ownerCtx(r, "write", req.User)
	if err != nil {
		return err
	}
	pre, err := httpkit.ReadPrecondition(r, req.ExpectedETag, "expected_etag")
	if err != nil {
		return httpkit.WithOp("write", err)
	}
	fsys := s.fileFS(ctx)
	var n int64
	var etag string
	if _, owned := core.OwnerOf(ctx); owned && !boolOr(req.Append, false) {
		// A write that names an owner stages through a .part (the AIO spec).
		n, err = fsys.WriteFile(ctx, *p, bytes.NewReader(data), core.WriteOptions{MkdirParents: true, Pre: pre, ETag: &etag})
	} else {
		// A plain write keeps the destination's inode (the AIO spec).
		n, err = fsys.WriteInPlace(ctx, *p, bytes.NewReader(data), core.InPlaceOptions{MkdirParents: true,
			Append: boolOr(req.Append, false), Pre: pre, ETag: &etag})
	}
	if err != nil {
		return httpkit.WithOp("write", err)
	}
	ap, err := fsys.Clean(*p)
	if err != nil {
		return httpkit.WithOp("write", err)
	}
	httpkit.SetETag(w, etag)
	return writeAIO(w, FileWriteResult{File: ap, BytesWritten: n})
}

// encodeContent turns the request's content into the bytes to write:
// utf-8 as it is (leading_newline and trailing_newline add a "\n"), base64
// decoded (400 when it is not base64), raw one byte per character (400 for
// a character above U+00FF).
func encodeContent(req fileWriteRequest) ([]byte, error) {
	c := *req.Content
	switch enc := strOr(req.Encoding, "utf-8"); enc {
	case "utf-8", "utf8":
		if boolOr(req.LeadingNewline, false) {
			c = "\n" + c
		}
		if boolOr(req.TrailingNewline, false) {
			c += "\n"
		}
		return []byte(c), nil
	case "base64":
		compact := strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, c)
		b, err := base64.StdEncoding.DecodeString(compact)
		if err != nil {
			if b2, err2 := base64.RawStdEncoding.DecodeString(compact); err2 == nil {
				return b2, nil
			}
			return nil, httpkit.InvalidRequest("content is not valid base64: %v", err)
		}
		return b, nil
	case "raw":
		b := make([]byte, 0, len(c))
		for i, r := range c {
			if r > 0xFF {
				return nil, httpkit.InvalidRequest("raw content holds %q at byte offset %d: raw writes one byte per character, U+0000 to U+00FF", r, i)
			}
			b = append(b, byte(r))
		}
		return b, nil
	default:
		return nil, httpkit.InvalidField("body.encoding", "enum", "Input should be 'utf-8', 'base64' or 'raw', got %q", enc)
	}
}

// statV2: GET /v2/fs/stat?path&follow_symlinks.
func (s *Family) statV2(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, p, err := aioPathQuery(r)
	if err != nil {
		return err
	}
	follow, err := httpkit.BoolQuery(q, "follow_symlinks", true, httpkit.AIODialect)
	if err != nil {
		return err
	}
	return s.stat(w, r, p, follow)
}

// statV1: POST /v1/file/stat {path, follow_symlinks}.
func (s *Family) statV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	req, p, err := s.pathBody(w, r)
	if err != nil {
		return err
	}
	return s.stat(w, r, p, boolOr(req.FollowSymlinks, true))
}

func (s *Family) stat(w http.ResponseWriter, r *http.Request, p string, follow bool) error {
	fsys := s.fileFS(r.Context())
	li, err := fsys.Lstat(r.Context(), p)
	if err != nil {
		return httpkit.WithOp("stat", err)
	}
	info := li
	if follow && li.IsSymlink() {
		if info, err = fsys.Stat(r.Context(), p); err != nil {
			return httpkit.WithOp("stat", err)
		}
		info.Path = li.Path
	}
	return writeAIO(w, StatResult{
		Path:         li.Path,
		Size:         info.Size,
		Permissions:  httpkit.ModeString(info.Mode),
		IsDirectory:  info.IsDir(),
		IsSymlink:    li.IsSymlink(),
		ModifiedTime: rfc3339(info.ModTime),
		ETag:         core.ETag(info),
	})
}
