package aio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/precond"
	"sandfs/rest/httpkit"
)

// The anchored editor (api.md §4; the AIO spec "Files and directories"):
// POST /v2/fs/edit, POST /v1/file/str_replace_editor (the openhands-aci
// str_replace_editor), POST /v1/file/replace. Commands: view and create
// (v1 only; v2 has read and write for them), str_replace, insert, undo_edit.
//
//   - old_str is matched verbatim: whitespace and line endings must agree.
//     Absent: 400 "old_str not found in file"; more than once without
//     replace_mode: 400 "old_str has multiple occurrences". replace_mode ALL,
//     FIRST or LAST picks.
//   - A file whose lines end in CRLF keeps CRLF: a bare "\n" in new_str (and
//     the line ending insert adds) is written as "\r\n".
//   - insert puts new_str after line insert_line (0 = the top, the number
//     of lines = the end); a line ending is added where needed.
//   - Edits replace the file atomically (temp file, rename), keeping its
//     mode and owner; create makes parents and refuses an existing file.
//   - undo_edit restores the content the last edit of that file replaced;
//     again, the one before. The history lives in memory, per file, at most
//     10 steps a file and 64 MiB in all (the least recently edited files'
//     oldest steps go first); it does not survive a restart.
//
// Edits are serialised (one at a time per daemon), so two edits of one file
// never interleave their read and write.

// editV2: POST /v2/fs/edit {command, path, old_str, new_str, insert_line,
// replace_mode}.
func (s *Family) editV2(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return s.edit(w, r, false)
}

// editV1: POST /v1/file/str_replace_editor StrReplaceEditorRequest.
func (s *Family) editV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return s.edit(w, r, true)
}

func (s *Family) edit(w http.ResponseWriter, r *http.Request, v1 bool) error {
	var req editRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	if req.Command == nil {
		return missing("command")
	}
	p := pick(req.Path, req.File)
	if p == nil {
		return missing("path")
	}
	cmd := *req.Command
	switch cmd {
	case "view", "create":
		if !v1 {
			return httpkit.WithOp("edit", httpkit.InvalidRequest("command %q is served by /v1/file/str_replace_editor; on v2 use /v2/fs/read or /v2/fs/write", cmd))
		}
	case "str_replace", "insert", "undo_edit":
	default:
		return httpkit.InvalidField("body.command", "enum", "Input should be 'view', 'create', 'str_replace', 'insert' or 'undo_edit', got %q", cmd)
	}
	if req.ReplaceMode != nil {
		switch *req.ReplaceMode {
		case "ALL", "FIRST", "LAST":
		default:
			return httpkit.InvalidField("body.replace_mode", "enum", "Input should be 'ALL', 'FIRST' or 'LAST', got %q", *req.ReplaceMode)
		}
	}
	ctx, err := ownerCtx(r, cmd, req.User)
	if err != nil {
		return err
	}
	ap, err := s.fileFS(ctx).Clean(*p)
	if err != nil {
		return httpkit.WithOp(cmd, err)
	}
	var pre precond.Precondition
	if cmd != "view" {
		if pre, err = s.editPrecondition(ctx, r, ap, req.ExpectedETag); err != nil {
			return httpkit.WithOp(cmd, err)
		}
	}
	h := s.files().undo
	h.mu.Lock()
	defer h.mu.Unlock()
	var res EditResult
	switch cmd {
	case "view":
		res, err = s.editView(ctx, ap, req.ViewRange)
	case "create":
		res, err = s.editCreate(ctx, ap, req.FileText, pre)
	case "str_replace":
		if req.OldStr == nil {
			return httpkit.WithOp(cmd, httpkit.InvalidRequest("Parameter `old_str` is required for command: str_replace"))
		}
		res, _, err = s.editReplace(ctx, ap, *req.OldStr, strOr(req.NewStr, ""), strOr(req.ReplaceMode, ""), pre)
	case "insert":
		res, err = s.editInsert(ctx, ap, req.InsertLine, req.NewStr, pre)
	case "undo_edit":
		res, err = s.editUndo(ctx, ap, pre)
	}
	if err != nil {
		return httpkit.WithOp(cmd, err)
	}
	httpkit.SetETag(w, res.etag)
	return writeAIO(w, res)
}

// replaceV1: POST /v1/file/replace FileReplaceRequest {file, old_str,
// new_str} (+ replace_mode, an extension): the str_replace command,
// answering {file, replaced_count}.
func (s *Family) replaceV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req editRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	p := pick(req.File, req.Path)
	switch {
	case p == nil:
		return missing("file")
	case req.OldStr == nil:
		return missing("old_str")
	case req.NewStr == nil:
		return missing("new_str")
	}
	if req.ReplaceMode != nil {
		switch *req.ReplaceMode {
		case "ALL", "FIRST", "LAST":
		default:
			return httpkit.InvalidField("body.replace_mode", "enum", "Input should be 'ALL', 'FIRST' or 'LAST', got %q", *req.ReplaceMode)
		}
	}
	ap, err := s.fileFS(r.Context()).Clean(*p)
	if err != nil {
		return httpkit.WithOp("replace", err)
	}
	pre, err := s.editPrecondition(r.Context(), r, ap, req.ExpectedETag)
	if err != nil {
		return httpkit.WithOp("replace", err)
	}
	h := s.files().undo
	h.mu.Lock()
	defer h.mu.Unlock()
	res, n, err := s.editReplace(r.Context(), ap, *req.OldStr, *req.NewStr, strOr(req.ReplaceMode, ""), pre)
	if err != nil {
		return httpkit.WithOp("replace", err)
	}
	httpkit.SetETag(w, res.etag)
	return writeAIO(w, ReplaceResult{File: ap, ReplacedCount: n})
}

// isCRLF reports whether text's line endings are CRLF.
func isCRLF(text string) bool {
	return strings.Contains(text, "\r\n")
}

// toEOL writes every line ending of s as eol.
func toEOL(s, eol string) string {
	if eol == "\n" {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", eol)
}

// saveEdit writes content over ap atomically (mode and owner kept) when
// pre holds right before the rename, records prev in the undo history, and
// returns the new file's ETag.
func (s *Family) saveEdit(ctx context.Context, ap, content string, prev undoStep, pre precond.Precondition) (string, error) {
	var etag string
	o := core.WriteOptions{MkdirParents: !prev.existed, Pre: pre, ETag: &etag}
	if _, err := s.fileFS(ctx).WriteFile(ctx, ap, strings.NewReader(content), o); err != nil {
		return "", err
	}
	s.files().undo.push(ap, prev)
	return etag, nil
}

func (s *Family) editReplace(ctx context.Context, ap, old, repl, mode string, pre precond.Precondition) (EditResult, int, error) {
	if old == "" {
		return EditResult{}, 0, httpkit.InvalidRequest("old_str must not be empty")
	}
	_, content, err := s.readWhole(ctx, ap)
	if err != nil {
		return EditResult{}, 0, err
	}
	if isCRLF(content) {
		repl = toEOL(repl, "\r\n")
	}
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return EditResult{}, 0, httpkit.InvalidRequest("old_str not found in file")
	case n > 1 && mode == "":
		return EditResult{}, 0, httpkit.InvalidRequest("old_str has multiple occurrences")
	}
	var updated string
	var at, count int
	switch mode {
	case "LAST":
		at = strings.LastIndex(content, old)
		updated, count = content[:at]+repl+content[at+len(old):], 1
	case "ALL":
		at = strings.Index(content, old)
		updated, count = strings.ReplaceAll(content, old, repl), n
	default: // FIRST, or the one occurrence
		at = strings.Index(content, old)
		updated, count = content[:at]+repl+content[at+len(old):], 1
	}
	etag, err := s.saveEdit(ctx, ap, updated, undoStep{content: content, existed: true}, pre)
	if err != nil {
		return EditResult{}, 0, err
	}
	first := strings.Count(content[:at], "\n")
	last := first + strings.Count(repl, "\n")
	out := fmt.Sprintf("The file %s has been edited. Here's the result of running `cat -n` on a snippet of %s:\n%s"+
		"Review the changes and make sure they are as expected. Edit the file again if necessary.", ap, ap, s.snippet(updated, first, last))
	return EditResult{Output: out, Path: ap, PrevExist: true, OldContent: &content, NewContent: &updated, etag: etag}, count, nil
}

func (s *Family) editInsert(ctx context.Context, ap string, line *int, text *string, pre precond.Precondition) (EditResult, error) {
	if line == nil {
		return EditResult{}, httpkit.InvalidRequest("Parameter `insert_line` is required for command: insert")
	}
	if text == nil {
		return EditResult{}, httpkit.InvalidRequest("Parameter `new_str` is required for command: insert")
	}
	_, content, err := s.readWhole(ctx, ap)
	if err != nil {
		return EditResult{}, err
	}
	lines := splitLines(content)
	n := *line
	if n < 0 || n > len(lines) {
		return EditResult{}, httpkit.InvalidRequest("Invalid `insert_line` parameter: %d. It should be within the range of lines of the file: [0, %d]", n, len(lines))
	}
	eol := "\n"
	if isCRLF(content) {
		eol = "\r\n"
	}
	ins := toEOL(*text, eol)
	if !strings.HasSuffix(ins, "\n") {
		ins += eol
	}
	head := strings.Join(lines[:n], "")
	if n > 0 && !strings.HasSuffix(head, "\n") {
		head += eol // inserting after a last line that had no ending
	}
	updated := head + ins + strings.Join(lines[n:], "")
	etag, err := s.saveEdit(ctx, ap, updated, undoStep{content: content, existed: true}, pre)
	if err != nil {
		return EditResult{}, err
	}
	last := n + strings.Count(ins, "\n") - 1
	out := fmt.Sprintf("The file %s has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n%s"+
		"Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.", ap, s.snippet(updated, n, last))
	return EditResult{Output: out, Path: ap, PrevExist: true, OldContent: &content, NewContent: &updated, etag: etag}, nil
}

func (s *Family) editCreate(ctx context.Context, ap string, text *string, pre precond.Precondition) (EditResult, error) {
	if text == nil {
		return EditResult{}, httpkit.InvalidRequest("Parameter `file_text` is required for command: create")
	}
	if _, err := s.fileFS(ctx).Lstat(ctx, ap); err == nil {
		return EditResult{}, &fs.PathError{Op: "create", Path: ap, Err: unix.EEXIST}
	}
	etag, err := s.saveEdit(ctx, ap, *text, undoStep{existed: false}, pre)
	if err != nil {
		return EditResult{}, err
	}
	return EditResult{Output: "File created successfully at: " + ap, Path: ap, PrevExist: false, NewContent: text, etag: etag}, nil
}

func (s *Family) editUndo(ctx context.Context, ap string, pre precond.Precondition) (EditResult, error) {
	h := s.files().undo
	st, ok := h.pop(ap)
	if !ok {
		return EditResult{}, httpkit.InvalidRequest("No edit history found for %s.", ap)
	}
	res := EditResult{Path: ap}
	if _, cur, err := s.readWhole(ctx, ap); err == nil {
		res.PrevExist, res.OldContent = true, &cur
	}
	var err error
	if st.existed {
		o := core.WriteOptions{MkdirParents: true, Pre: pre, ETag: &res.etag}
		_, err = s.fileFS(ctx).WriteFile(ctx, ap, strings.NewReader(st.content), o)
		res.NewContent = &st.content
	} else {
		err = s.fileFS(ctx).RemoveWith(ctx, ap, core.RemoveOptions{Pre: pre})
	}
	if err != nil {
		h.push(ap, st) // not undone: keep it
		return EditResult{}, err
	}
	res.Output = fmt.Sprintf("Last edit to %s undone successfully. Here's the result of running `cat -n` on %s:\n%s", ap, ap, catN(st.content, 0, -1))
	if !st.existed {
		res.Output = fmt.Sprintf("Last edit to %s undone successfully: the file it created is removed.", ap)
	}
	return res, nil
}

func (s *Family) editView(ctx context.Context, ap string, rng []int) (EditResult, error) {
	fsys := s.fileFS(ctx)
	info, err := fsys.Stat(ctx, ap)
	if err != nil {
		return EditResult{}, err
	}
	res := EditResult{Path: ap, PrevExist: true}
	if info.IsDir() {
		if len(rng) > 0 {
			return EditResult{}, httpkit.InvalidRequest("The `view_range` parameter is not allowed when `path` points to a directory.")
		}
		lim := s.files().limits
		var b strings.Builder
		fmt.Fprintf(&b, "Here's the files and directories up to %d levels deep in %s, excluding hidden items:\n%s\n", lim.ViewDepth, ap, ap)
		n := 0
		err := fsys.Walk(ctx, ap, core.WalkOptions{MaxDepth: lim.ViewDepth, NoHidden: true}, func(e core.WalkEntry) error {
			if n >= lim.ViewLimit {
				b.WriteString("…\n")
				return fs.SkipAll
			}
			n++
			b.WriteString(e.Path)
			if e.IsDirLike() {
				b.WriteString("/")
			}
			b.WriteString("\n")
			return nil
		})
		if err != nil {
			return EditResult{}, err
		}
		res.Output = b.String()
		return res, nil
	}
	_, content, err := s.readWhole(ctx, ap)
	if err != nil {
		return EditResult{}, err
	}
	first, last := 0, -1
	if len(rng) > 0 {
		nl := len(splitLines(content))
		if len(rng) != 2 {
			return EditResult{}, httpkit.InvalidRequest("Invalid `view_range`: it should be a list of two integers.")
		}
		if rng[0] < 1 || rng[0] > max(nl, 1) {
			return EditResult{}, httpkit.InvalidRequest("Invalid `view_range`: %v. Its first element `%d` should be within the range of lines of the file: [1, %d]", rng, rng[0], nl)
		}
		if rng[1] != -1 && (rng[1] < rng[0] || rng[1] > nl) {
			return EditResult{}, httpkit.InvalidRequest("Invalid `view_range`: %v. Its second element `%d` should be -1 or within [%d, %d]", rng, rng[1], rng[0], nl)
		}
		first = rng[0] - 1
		if rng[1] != -1 {
			last = rng[1] - 1
		}
	}
	res.Output = fmt.Sprintf("Here's the result of running `cat -n` on %s:\n%s", ap, catN(content, first, last))
	return res, nil
}

// snippet is the cat -n of the lines around [first, last] (0-based) of text.
func (s *Family) snippet(text string, first, last int) string {
	c := s.files().limits.SnippetCtx
	return catN(text, max(first-c, 0), last+c)
}

// catN numbers lines first..last (0-based, inclusive; last -1 or past the
// end: to the end) the way cat -n does: six columns, a tab, the line
// without its ending.
func catN(text string, first, last int) string {
	lines := splitLines(text)
	if last < 0 || last >= len(lines) {
		last = len(lines) - 1
	}
	var b strings.Builder
	for i := first; i <= last && i < len(lines); i++ {
		l := strings.TrimSuffix(strings.TrimSuffix(lines[i], "\n"), "\r")
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, l)
	}
	return b.String()
}

// editPrecondition reads an edit's precondition and checks it at once
// against the file as it is (followed, as the edit reads it), so a stale
// ETag is 412 before old_str is looked for; the write checks it again right
// before its rename.
func (s *Family) editPrecondition(ctx context.Context, r *http.Request, ap string, field *string) (precond.Precondition, error) {
	pre, err := httpkit.ReadPrecondition(r, field, "expected_etag")
	if err != nil || !pre.Set() {
		return pre, err
	}
	cur := ""
	info, err := s.fileFS(ctx).Stat(ctx, ap)
	switch {
	case err == nil:
		cur = core.ETag(info)
	case !errors.Is(err, fs.ErrNotExist):
		return pre, err
	}
	if !pre.Holds(cur) {
		return pre, &precond.Error{Op: "edit", Path: ap, Current: cur}
	}
	return pre, nil
}
