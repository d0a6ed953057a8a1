package rest

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// Tests of the AIO file routes of part A: each route's success and each
// documented failure, envelope field by field, in both versions, disk state
// after; v1 answers validated against the 1.x schema (h.v1).

// newFilesHarness is the harness with small limits for the caps.
func newFilesHarness(t *testing.T, tweak func(*aioFileLimits)) *harness {
	t.Helper()
	h := newHarness(t, harnessOpts{})
	h.srv.fileState.limits = defaultAIOFileLimits
	if tweak != nil {
		tweak(&h.srv.fileState.limits)
	}
	return h
}

func (h *harness) get(t *testing.T, target string) resp {
	t.Helper()
	return h.do(t, req{Method: "GET", Target: target})
}

func (h *harness) post(t *testing.T, target, body string) resp {
	t.Helper()
	return h.do(t, req{Method: "POST", Target: target, Body: strings.NewReader(body)})
}

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// wantV1Failure checks a /v1/file expected failure: 200, success:false,
// error_type and errno.
func wantV1Failure(t *testing.T, r resp, errorType string, errno unix.Errno, exception string) aioFailure {
	t.Helper()
	f := wantAIOError(t, r, 200, errorType)
	if errno != 0 {
		wantErrno(t, f, errno, exception)
	}
	return f
}

func TestAIORead(t *testing.T) {
	h := newFilesHarness(t, func(l *aioFileLimits) { l.ReadBytes = 64 })
	h.writeFile(t, "/src/app.py", "l0\nl1\nl2\r\nl3\nl4")
	h.writeFile(t, "/big.txt", strings.Repeat("x", 65))
	h.writeFile(t, "/bin.dat", "ok\xff\xfe")
	h.mkdir(t, "/dir")
	cases := []struct {
		name, v2, v1 string
		want         string
	}{
		{"whole", "path=/src/app.py", `{"file":"/src/app.py"}`, "l0\nl1\nl2\r\nl3\nl4"},
		{"range", "path=/src/app.py&start_line=2&end_line=4", `{"file":"/src/app.py","start_line":2,"end_line":4}`, "l2\r\nl3\n"},
		{"from", "path=/src/app.py&start_line=3", `{"file":"/src/app.py","start_line":3}`, "l3\nl4"},
		{"to", "path=/src/app.py&end_line=1", `{"file":"/src/app.py","end_line":1,"sudo":true}`, "l0\n"},
		{"negative", "path=/src/app.py&start_line=-2", `{"file":"/src/app.py","start_line":-2}`, "l3\nl4"},
		{"past end", "path=/src/app.py&start_line=9&end_line=20", `{"file":"/src/app.py","start_line":9,"end_line":20}`, ""},
		{"relative", "path=src/app.py&start_line=0&end_line=1", `{"file":"src/app.py","start_line":0,"end_line":1}`, "l0\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := wantAIO[fileReadResult](t, h.get(t, "/v2/fs/read?"+c.v2))
			if d.Content != c.want || d.File != "/src/app.py" {
				t.Errorf("v2: got %q %q, want %q /src/app.py", d.Content, d.File, c.want)
			}
			d = wantAIO[fileReadResult](t, h.v1(t, "/v1/file/read", c.v1))
			if d.Content != c.want || d.File != "/src/app.py" {
				t.Errorf("v1: got %q %q, want %q /src/app.py", d.Content, d.File, c.want)
			}
		})
	}
	fails := []struct {
		name, v2, v1     string
		status           int
		kind             string
		errno            unix.Errno
		exception, fpath string
	}{
		{"missing", "path=/nope", `{"file":"/nope"}`, 404, "not_found", unix.ENOENT, "FileNotFoundError", "/nope"},
		{"directory", "path=/dir", `{"file":"/dir"}`, 400, "invalid_target", unix.EISDIR, "IsADirectoryError", "/dir"},
		{"too large", "path=/big.txt", `{"file":"/big.txt"}`, 413, "file_too_large", 0, "", "/big.txt"},
		{"not utf-8", "path=/bin.dat", `{"file":"/bin.dat"}`, 422, "decode_error", 0, "UnicodeDecodeError", "/bin.dat"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			f := wantAIOError(t, h.get(t, "/v2/fs/read?"+c.v2), c.status, c.kind)
			f1 := wantV1Failure(t, h.v1(t, "/v1/file/read", c.v1), c.kind, c.errno, c.exception)
			for _, f := range []aioFailure{f, f1} {
				if f.Path != c.fpath {
					t.Errorf("data.path: got %q, want %q", f.Path, c.fpath)
				}
				if c.errno == 0 && c.exception != "" && (f.ExceptionType == nil || *f.ExceptionType != c.exception) {
					t.Errorf("data.exception_type: got %v, want %s", f.ExceptionType, c.exception)
				}
				if c.errno == 0 && f.Errno != nil {
					t.Errorf("data.errno: got %d, want null", *f.Errno)
				}
			}
		})
	}
	t.Run("validation", func(t *testing.T) {
		wantValidation(t, h.get(t, "/v2/fs/read"), "query.path", "missing")
		wantValidation(t, h.get(t, "/v2/fs/read?path=/src/app.py&start_line=x"), "query.start_line", "int_parsing")
		wantValidation(t, h.post(t, "/v1/file/read", `{}`), "body.file", "missing")
		wantValidation(t, h.post(t, "/v1/file/read", `{"file":`), "body", "json_invalid")
		wantValidation(t, h.post(t, "/v1/file/read", `{"file":"/a","start_line":"x"}`), "body.start_line", "int_type")
		f := wantAIOError(t, h.get(t, "/v2/fs/read?path="), 400, "invalid_path")
		f1 := wantAIOError(t, h.post(t, "/v1/file/read", `{"file":""}`), 400, "invalid_path")
		if f.Operation != "resolve" || f1.Operation != "resolve" {
			t.Errorf("operation: got %q %q, want resolve", f.Operation, f1.Operation)
		}
	})
}

func TestAIOWrite(t *testing.T) {
	h := newFilesHarness(t, nil)
	h.writeFile(t, "/keep.txt", "old content\n")
	os.Chmod(h.host("/keep.txt"), 0o600)
	ino := inode(t, h.host("/keep.txt"))
	cases := []struct {
		name, route, body string
		file              string
		n                 int64
		want              string
	}{
		{"v2 new with parents", "/v2/fs/write", `{"path":"/a/b/new.md","content":"# demo\n"}`, "/a/b/new.md", 7, "# demo\n"},
		{"v1 new", "/v1/file/write", `{"file":"/v1.txt","content":"x"}`, "/v1.txt", 1, "x"},
		{"v2 in place", "/v2/fs/write", `{"path":"/keep.txt","content":"new"}`, "/keep.txt", 3, "new"},
		{"v1 append", "/v1/file/write", `{"file":"/keep.txt","content":"+more","append":true}`, "/keep.txt", 5, "new+more"},
		{"newlines", "/v2/fs/write", `{"path":"/nl.txt","content":"x","leading_newline":true,"trailing_newline":true}`, "/nl.txt", 3, "\nx\n"},
		{"base64", "/v2/fs/write", `{"path":"/b64.bin","content":"AAEC/w==","encoding":"base64"}`, "/b64.bin", 4, "\x00\x01\x02\xff"},
		{"base64 ignores newline flags", "/v1/file/write", `{"file":"/b64b.bin","content":"aGk=","encoding":"base64","trailing_newline":true}`, "/b64b.bin", 2, "hi"},
		{"raw", "/v2/fs/write", `{"path":"/raw.bin","content":"\u00ff\u0000A","encoding":"raw"}`, "/raw.bin", 3, "\xff\x00A"},
		{"utf-8 multibyte", "/v1/file/write", `{"file":"/u.txt","content":"é","encoding":"utf-8","sudo":false}`, "/u.txt", 2, "é"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := wantAIO[fileWriteResult](t, h.v1(t, c.route, c.body))
			if d.File != c.file || d.BytesWritten != c.n {
				t.Errorf("data: got %+v, want file %s bytes_written %d", d, c.file, c.n)
			}
			h.wantFile(t, c.file, c.want)
		})
	}
	if got := inode(t, h.host("/keep.txt")); got != ino {
		t.Errorf("plain write changed the inode: %d → %d", ino, got)
	}
	if fi, _ := os.Stat(h.host("/keep.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("plain write changed the mode to %v", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(h.host("/")); len(ents) > 0 {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".part") {
				t.Errorf("temp file left: %s", e.Name())
			}
		}
	}
	h.mkdir(t, "/adir")
	before := h.tree(t)
	fails := []struct {
		name, route, body string
		status            int
		kind              string
	}{
		{"bad base64", "/v2/fs/write", `{"path":"/x","content":"@@@","encoding":"base64"}`, 400, "invalid_request"},
		{"raw above ff", "/v1/file/write", `{"file":"/x","content":"\u0100","encoding":"raw"}`, 400, "invalid_request"},
		{"over a directory v2", "/v2/fs/write", `{"path":"/adir","content":"x"}`, 400, "invalid_target"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			wantAIOError(t, h.post(t, c.route, c.body), c.status, c.kind)
		})
	}
	wantV1Failure(t, h.v1(t, "/v1/file/write", `{"file":"/adir","content":"x"}`), "invalid_target", unix.EISDIR, "IsADirectoryError")
	wantValidation(t, h.post(t, "/v2/fs/write", `{"path":"/x"}`), "body.content", "missing")
	wantValidation(t, h.post(t, "/v2/fs/write", `{"content":"x"}`), "body.path", "missing")
	wantValidation(t, h.post(t, "/v1/file/write", `{"content":"x"}`), "body.file", "missing")
	wantValidation(t, h.post(t, "/v1/file/write", `{"file":"/x","content":"x","encoding":"utf-16"}`), "body.encoding", "enum")
	wantValidation(t, h.post(t, "/v1/file/write", `{"file":"/x","content":5}`), "body.content", "string_type")
	h.wantTree(t, before)
}

type editCase struct {
	name, body string
	want       string // file content after
	output     string // a substring of output
}

func TestAIOEditor(t *testing.T) {
	h := newFilesHarness(t, nil)
	run := func(t *testing.T, route, path, initial string, steps []editCase) {
		t.Helper()
		if initial != "" {
			h.writeFile(t, path, initial)
		}
		for _, s := range steps {
			r := h.v1(t, route, s.body)
			d := wantAIO[editResult](t, r)
			if d.Path != path {
				t.Errorf("%s: data.path: got %q, want %q", s.name, d.Path, path)
			}
			if d.NewContent == nil || *d.NewContent != s.want {
				t.Errorf("%s: data.new_content: got %v, want %q", s.name, d.NewContent, s.want)
			}
			if !strings.Contains(d.Output, s.output) {
				t.Errorf("%s: data.output %q lacks %q", s.name, d.Output, s.output)
			}
			h.wantFile(t, path, s.want)
		}
	}
	t.Run("replace modes", func(t *testing.T) {
		p := "/modes.txt"
		run(t, "/v2/fs/edit", p, "a x b x c x\n", []editCase{
			{"first", `{"command":"str_replace","path":"/modes.txt","old_str":"x","new_str":"1","replace_mode":"FIRST"}`, "a 1 b x c x\n", "     1\ta 1 b x c x"},
			{"last", `{"command":"str_replace","path":"/modes.txt","old_str":"x","new_str":"3","replace_mode":"LAST"}`, "a 1 b x c 3\n", "has been edited"},
			{"all", `{"command":"str_replace","path":"/modes.txt","old_str":" ","new_str":"_","replace_mode":"ALL"}`, "a_1_b_x_c_3\n", "Review the changes"},
		})
	})
	t.Run("anchors at start and end", func(t *testing.T) {
		run(t, "/v1/file/str_replace_editor", "/anchor.txt", "BEGIN middle END", []editCase{
			{"start", `{"command":"str_replace","path":"/anchor.txt","old_str":"BEGIN","new_str":"start"}`, "start middle END", "start middle END"},
			{"end", `{"command":"str_replace","path":"/anchor.txt","old_str":"END","new_str":"end\n"}`, "start middle end\n", "start middle end"},
			{"delete all", `{"command":"str_replace","path":"/anchor.txt","old_str":"start middle end\n"}`, "", "has been edited"},
		})
	})
	t.Run("crlf kept", func(t *testing.T) {
		run(t, "/v2/fs/edit", "/crlf.txt", "one\r\ntwo\r\nthree\r\n", []editCase{
			{"replace", `{"command":"str_replace","path":"/crlf.txt","old_str":"two\r\n","new_str":"2a\n2b\n"}`, "one\r\n2a\r\n2b\r\nthree\r\n", "     2\t2a\n"},
			{"insert", `{"command":"insert","path":"/crlf.txt","insert_line":1,"new_str":"ins"}`, "one\r\nins\r\n2a\r\n2b\r\nthree\r\n", "     2\tins"},
			{"insert at end", `{"command":"insert","path":"/crlf.txt","insert_line":5,"new_str":"last\n"}`, "one\r\nins\r\n2a\r\n2b\r\nthree\r\nlast\r\n", "     6\tlast"},
		})
	})
	t.Run("insert at top and end", func(t *testing.T) {
		run(t, "/v1/file/str_replace_editor", "/ins.txt", "a\nb", []editCase{
			{"top", `{"command":"insert","path":"/ins.txt","insert_line":0,"new_str":"top"}`, "top\na\nb", "     1\ttop"},
			{"end without newline", `{"command":"insert","path":"/ins.txt","insert_line":3,"new_str":"z\n"}`, "top\na\nb\nz\n", "     4\tz"},
		})
	})
	t.Run("undo after undo", func(t *testing.T) {
		p := "/undo.txt"
		run(t, "/v2/fs/edit", p, "v0\n", []editCase{
			{"edit 1", `{"command":"str_replace","path":"/undo.txt","old_str":"v0","new_str":"v1"}`, "v1\n", ""},
			{"edit 2", `{"command":"str_replace","path":"/undo.txt","old_str":"v1","new_str":"v2"}`, "v2\n", ""},
			{"undo 1", `{"command":"undo_edit","path":"/undo.txt"}`, "v1\n", "undone successfully"},
			{"undo 2", `{"command":"undo_edit","path":"/undo.txt"}`, "v0\n", "     1\tv0"},
		})
		f := wantAIOError(t, h.post(t, "/v2/fs/edit", `{"command":"undo_edit","path":"/undo.txt"}`), 400, "invalid_request")
		if f.Message != "No edit history found for /undo.txt." {
			t.Errorf("message: got %q", f.Message)
		}
		h.wantFile(t, p, "v0\n")
	})
	t.Run("v1 create view undo", func(t *testing.T) {
		r := h.v1(t, "/v1/file/str_replace_editor", `{"command":"create","path":"/new/c.py","file_text":"print(1)\nprint(2)\n"}`)
		d := wantAIO[editResult](t, r)
		if d.PrevExist || d.OldContent != nil || d.NewContent == nil || *d.NewContent != "print(1)\nprint(2)\n" || d.Output != "File created successfully at: /new/c.py" {
			t.Errorf("create: got %+v", d)
		}
		h.wantFile(t, "/new/c.py", "print(1)\nprint(2)\n")
		wantV1Failure(t, h.v1(t, "/v1/file/str_replace_editor", `{"command":"create","path":"/new/c.py","file_text":"x"}`), "already_exists", unix.EEXIST, "FileExistsError")
		d = wantAIO[editResult](t, h.v1(t, "/v1/file/str_replace_editor", `{"command":"view","path":"/new/c.py","view_range":[2,-1]}`))
		if want := "Here's the result of running `cat -n` on /new/c.py:\n     2\tprint(2)\n"; d.Output != want || !d.PrevExist {
			t.Errorf("view: got %q, want %q", d.Output, want)
		}
		d = wantAIO[editResult](t, h.v1(t, "/v1/file/str_replace_editor", `{"command":"view","path":"/new"}`))
		if !strings.Contains(d.Output, "/new/c.py\n") || !strings.Contains(d.Output, "2 levels deep in /new") {
			t.Errorf("view dir: got %q", d.Output)
		}
		wantAIO[editResult](t, h.v1(t, "/v1/file/str_replace_editor", `{"command":"undo_edit","path":"/new/c.py"}`))
		h.wantAbsent(t, "/new/c.py")
	})
	t.Run("v1 replace", func(t *testing.T) {
		h.writeFile(t, "/r.txt", "x y x")
		d := wantAIO[replaceResult](t, h.v1(t, "/v1/file/replace", `{"file":"/r.txt","old_str":"y","new_str":"z"}`))
		if d.File != "/r.txt" || d.ReplacedCount != 1 {
			t.Errorf("replace: got %+v", d)
		}
		d = wantAIO[replaceResult](t, h.v1(t, "/v1/file/replace", `{"file":"/r.txt","old_str":"x","new_str":"w","replace_mode":"ALL"}`))
		if d.ReplacedCount != 2 {
			t.Errorf("replace ALL: got %+v", d)
		}
		h.wantFile(t, "/r.txt", "w z w")
		f := wantAIOError(t, h.v1(t, "/v1/file/replace", `{"file":"/r.txt","old_str":"w","new_str":"q"}`), 400, "invalid_request")
		if f.Message != "old_str has multiple occurrences" {
			t.Errorf("message: got %q", f.Message)
		}
		wantValidation(t, h.post(t, "/v1/file/replace", `{"file":"/r.txt","old_str":"w"}`), "body.new_str", "missing")
		wantV1Failure(t, h.v1(t, "/v1/file/replace", `{"file":"/none","old_str":"w","new_str":"q"}`), "not_found", unix.ENOENT, "FileNotFoundError")
	})
	t.Run("failures", func(t *testing.T) {
		h.writeFile(t, "/f.txt", "dup dup\n")
		before := h.tree(t)
		for _, c := range []struct {
			name, route, body string
			status            int
			kind, msg         string
		}{
			{"not found anchor v2", "/v2/fs/edit", `{"command":"str_replace","path":"/f.txt","old_str":"zzz","new_str":"a"}`, 400, "invalid_request", "old_str not found in file"},
			{"not found anchor v1", "/v1/file/str_replace_editor", `{"command":"str_replace","path":"/f.txt","old_str":"zzz","new_str":"a"}`, 400, "invalid_request", "old_str not found in file"},
			{"multiple v2", "/v2/fs/edit", `{"command":"str_replace","path":"/f.txt","old_str":"dup","new_str":"a"}`, 400, "invalid_request", "old_str has multiple occurrences"},
			{"multiple v1", "/v1/file/str_replace_editor", `{"command":"str_replace","path":"/f.txt","old_str":"dup","new_str":"a"}`, 400, "invalid_request", "old_str has multiple occurrences"},
			{"crlf anchor is verbatim", "/v2/fs/edit", `{"command":"str_replace","path":"/f.txt","old_str":"dup\r\n","new_str":"a"}`, 400, "invalid_request", "old_str not found in file"},
			{"insert past end", "/v2/fs/edit", `{"command":"insert","path":"/f.txt","insert_line":3,"new_str":"a"}`, 400, "invalid_request", "Invalid `insert_line` parameter: 3. It should be within the range of lines of the file: [0, 1]"},
			{"view on v2", "/v2/fs/edit", `{"command":"view","path":"/f.txt"}`, 400, "invalid_request", ""},
			{"missing file v2", "/v2/fs/edit", `{"command":"str_replace","path":"/none.txt","old_str":"a"}`, 404, "not_found", ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				f := wantAIOError(t, h.post(t, c.route, c.body), c.status, c.kind)
				if c.msg != "" && f.Message != c.msg {
					t.Errorf("data.message: got %q, want %q", f.Message, c.msg)
				}
			})
		}
		wantValidation(t, h.post(t, "/v2/fs/edit", `{"path":"/f.txt"}`), "body.command", "missing")
		wantValidation(t, h.post(t, "/v2/fs/edit", `{"command":"str_replace","path":"/f.txt","old_str":"dup","replace_mode":"SOME"}`), "body.replace_mode", "enum")
		wantValidation(t, h.post(t, "/v1/file/str_replace_editor", `{"command":"explode","path":"/f.txt"}`), "body.command", "enum")
		h.wantTree(t, before)
	})
}

func TestAIOUndoHistoryBounded(t *testing.T) {
	u := newUndoHistory(2, 10)
	u.mu.Lock()
	u.push("/a", undoStep{content: "1111", existed: true})
	u.push("/a", undoStep{content: "22", existed: true})
	u.push("/a", undoStep{content: "33", existed: true}) // over 2 a file: "1111" goes
	u.push("/b", undoStep{content: "4444", existed: true})
	u.push("/b", undoStep{content: "55", existed: true}) // total 10: fits
	u.push("/c", undoStep{content: "6", existed: true})  // total 11: /a, least recent, loses "22"
	u.push("/d", undoStep{content: "01234567890", existed: true})
	u.mu.Unlock()
	for p, want := range map[string]int{"/a": 1, "/b": 2, "/c": 1, "/d": 0} {
		if got := u.depth(p); got != want {
			t.Errorf("%s: %d steps, want %d", p, got, want)
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if st, _ := u.pop("/a"); st.content != "33" {
		t.Errorf("/a pop: got %q, want 33", st.content)
	}
	if u.total != 7 {
		t.Errorf("total: got %d, want 7", u.total)
	}
}

type statData = statResult

func TestAIOStat(t *testing.T) {
	h := newFilesHarness(t, nil)
	h.writeFile(t, "/d/f.txt", "hello")
	os.Chmod(h.host("/d/f.txt"), 0o640)
	h.symlink(t, "/d/f.txt", "/link")
	h.symlink(t, "d", "/dlink")
	cases := []struct {
		name, v2, v1 string
		want         statResult
	}{
		{"file", "path=/d/f.txt", `{"path":"/d/f.txt"}`, statResult{Path: "/d/f.txt", Size: 5, Permissions: "0640"}},
		{"dir", "path=/d", `{"path":"/d"}`, statResult{Path: "/d", Size: -1, Permissions: "0755", IsDirectory: true}},
		{"link followed", "path=/link", `{"path":"/link"}`, statResult{Path: "/link", Size: 5, Permissions: "0640", IsSymlink: true}},
		{"link itself", "path=/link&follow_symlinks=false", `{"path":"/link","follow_symlinks":false}`, statResult{Path: "/link", Size: 8, Permissions: "0777", IsSymlink: true}},
		{"dir link", "path=/dlink", `{"path":"/dlink"}`, statResult{Path: "/dlink", Size: -1, Permissions: "0755", IsDirectory: true, IsSymlink: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []resp{h.get(t, "/v2/fs/stat?"+c.v2), h.v1(t, "/v1/file/stat", c.v1)} {
				d := wantAIO[statResult](t, r)
				if c.want.Size < 0 {
					c.want.Size = d.Size
				}
				if d.ModifiedTime == "" {
					t.Errorf("modified_time is empty")
				}
				d.ModifiedTime = ""
				if d != c.want {
					t.Errorf("got %+v, want %+v", d, c.want)
				}
			}
		})
	}
	wantAIOError(t, h.get(t, "/v2/fs/stat?path=/none"), 404, "not_found")
	wantV1Failure(t, h.v1(t, "/v1/file/stat", `{"path":"/none"}`), "not_found", unix.ENOENT, "FileNotFoundError")
	wantValidation(t, h.get(t, "/v2/fs/stat?path=/d&follow_symlinks=maybe"), "query.follow_symlinks", "bool_parsing")
	wantValidation(t, h.post(t, "/v1/file/stat", `{}`), "body.path", "missing")
}

func TestAIOList(t *testing.T) {
	h := newFilesHarness(t, nil)
	h.writeFile(t, "/p/a.py", "12345")
	h.writeFile(t, "/p/b.txt", "1")
	h.writeFile(t, "/p/.hid", "")
	h.writeFile(t, "/p/sub/c.py", "123")
	h.writeFile(t, "/p/sub/deeper/d.md", "")
	h.writeFile(t, "/p/.hdir/e.txt", "")
	h.writeFile(t, "/other/o.txt", "")
	h.symlink(t, "/other", "/p/ln")
	names := func(fs []listEntry) string {
		var out []string
		for _, f := range fs {
			out = append(out, strings.TrimPrefix(f.Path, "/p/"))
		}
		return strings.Join(out, ",")
	}
	cases := []struct {
		name, v2, v1    string
		want            string
		files, dirs     int
		truncated       bool
		perms, noHidden bool
	}{
		{"flat", "path=/p", `{"path":"/p"}`, ".hdir,.hid,a.py,b.txt,ln,sub", 3, 3, false, false, false},
		{"no hidden", "path=/p&show_hidden=false", `{"path":"/p","show_hidden":false}`, "a.py,b.txt,ln,sub", 2, 2, false, false, true},
		{"recursive", "path=/p&recursive=true&show_hidden=false", `{"path":"/p","recursive":true,"show_hidden":false}`, "a.py,b.txt,ln,sub,sub/c.py,sub/deeper,sub/deeper/d.md", 4, 3, false, false, true},
		{"max depth", "path=/p&recursive=true&max_depth=2&show_hidden=false", `{"path":"/p","recursive":true,"max_depth":2,"show_hidden":false}`, "a.py,b.txt,ln,sub,sub/c.py,sub/deeper", 3, 3, false, false, true},
		{"size desc", "path=/p&sort_by=size&sort_desc=true&show_hidden=false&include_permissions=true", `{"path":"/p","sort_by":"size","sort_desc":true,"show_hidden":false,"include_permissions":true}`, "", 2, 2, false, true, true},
		{"file types", "path=/p&recursive=true&file_types=.py&show_hidden=false", `{"path":"/p","recursive":true,"file_types":[".py"],"show_hidden":false}`, "a.py,ln,sub,sub/c.py,sub/deeper", 2, 3, false, false, true},
		{"type order", "path=/p&sort_by=type&show_hidden=false", `{"path":"/p","sort_by":"type","show_hidden":false}`, "ln,sub,a.py,b.txt", 2, 2, false, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []resp{h.get(t, "/v2/fs/list?"+c.v2), h.v1(t, "/v1/file/list", c.v1)} {
				d := wantAIO[listResult](t, r)
				if d.Path != "/p" || d.FileCount != c.files || d.DirectoryCount != c.dirs || d.TotalCount != len(d.Files) || d.TotalCount != c.files+c.dirs || d.Truncated != c.truncated {
					t.Errorf("envelope: got path %s files %d dirs %d total %d/%d truncated %v; want %d %d", d.Path, d.FileCount, d.DirectoryCount, d.TotalCount, len(d.Files), d.Truncated, c.files, c.dirs)
				}
				if c.want != "" && names(d.Files) != c.want {
					t.Errorf("entries: got %s, want %s", names(d.Files), c.want)
				}
				for _, f := range d.Files {
					if (f.Permissions != nil) != c.perms {
						t.Errorf("%s: permissions %v, want present=%v", f.Path, f.Permissions, c.perms)
					}
					if f.IsHidden != strings.HasPrefix(f.Name, ".") {
						t.Errorf("%s: is_hidden %v", f.Path, f.IsHidden)
					}
					if f.Name == "ln" && !f.IsDirectory {
						t.Errorf("a symlink to a directory is not a directory")
					}
					if strings.HasPrefix(f.Path, "/p/ln/") {
						t.Errorf("descended through a symlink: %s", f.Path)
					}
				}
				if c.name == "size desc" {
					for i := 1; i < len(d.Files); i++ {
						if *d.Files[i].Size > *d.Files[i-1].Size {
							t.Errorf("size desc: %s (%d) after %s (%d)", d.Files[i].Name, *d.Files[i].Size, d.Files[i-1].Name, *d.Files[i-1].Size)
						}
						if d.Files[i].Name == "a.py" && *d.Files[i].Permissions != "0644" {
							t.Errorf("a.py permissions: got %s", *d.Files[i].Permissions)
						}
					}
				}
			}
		})
	}
	// Raw body: is_hidden appears only when true, extension null for dirs.
	r := h.get(t, "/v2/fs/list?path=/p")
	var raw struct {
		Data struct {
			Files []map[string]any `json:"files"`
		} `json:"data"`
	}
	json.Unmarshal(r.Body, &raw)
	for _, f := range raw.Data.Files {
		hv, has := f["is_hidden"]
		if strings.HasPrefix(f["name"].(string), ".") != has || (has && hv != true) {
			t.Errorf("is_hidden in %v", f)
		}
		if _, has := f["permissions"]; has {
			t.Errorf("permissions without include_permissions: %v", f)
		}
		if f["name"] == "a.py" && f["extension"] != ".py" || f["name"] == "sub" && f["extension"] != nil {
			t.Errorf("extension in %v", f)
		}
	}
	t.Run("truncated", func(t *testing.T) {
		h := newFilesHarness(t, func(l *aioFileLimits) { l.List = 3 })
		for i := range 5 {
			h.writeFile(t, fmt.Sprintf("/t/f%d", i), "")
		}
		for _, r := range []resp{h.get(t, "/v2/fs/list?path=/t"), h.v1(t, "/v1/file/list", `{"path":"/t"}`)} {
			d := wantAIO[listResult](t, r)
			if !d.Truncated || d.TotalCount != 3 || len(d.Files) != 3 || d.FileCount != 3 {
				t.Errorf("got truncated %v total %d files %d", d.Truncated, d.TotalCount, len(d.Files))
			}
		}
	})
	t.Run("visit bound", func(t *testing.T) {
		h := newFilesHarness(t, func(l *aioFileLimits) { l.Visit = 4 })
		for i := range 6 {
			h.writeFile(t, fmt.Sprintf("/v/f%d.txt", i), "")
		}
		h.writeFile(t, "/v/z.py", "")
		d := wantAIO[listResult](t, h.v1(t, "/v1/file/list", `{"path":"/v","file_types":[".py"]}`))
		if !d.Truncated || d.TotalCount != 0 {
			t.Errorf("list: got truncated %v total %d, want true 0", d.Truncated, d.TotalCount)
		}
		f := wantAIO[findResult](t, h.get(t, "/v2/fs/search?path=/v&pattern=*.py"))
		if !f.Truncated || len(f.Files) != 0 {
			t.Errorf("search: got %+v, want truncated and nothing", f)
		}
		g := wantAIO[globResult](t, h.v1(t, "/v1/file/glob", `{"path":"/v","pattern":"*.py"}`))
		if !g.Truncated || len(g.Files) != 0 {
			t.Errorf("glob: got %+v, want truncated and nothing", g)
		}
	})
	wantAIOError(t, h.get(t, "/v2/fs/list?path=/p/a.py"), 400, "invalid_target")
	wantV1Failure(t, h.v1(t, "/v1/file/list", `{"path":"/p/a.py"}`), "invalid_target", unix.ENOTDIR, "NotADirectoryError")
	wantAIOError(t, h.get(t, "/v2/fs/list?path=/none"), 404, "not_found")
	wantV1Failure(t, h.v1(t, "/v1/file/list", `{"path":"/none"}`), "not_found", unix.ENOENT, "FileNotFoundError")
	wantAIOError(t, h.get(t, "/v2/fs/list?path=/p&sort_by=color"), 400, "invalid_request")
	wantValidation(t, h.get(t, "/v2/fs/list?path=/p&recursive=sure"), "query.recursive", "bool_parsing")
	wantValidation(t, h.post(t, "/v1/file/list", `{"recursive":true}`), "body.path", "missing")
}

func TestAIOSearchFindGlob(t *testing.T) {
	h := newFilesHarness(t, func(l *aioFileLimits) { l.Search = 4 })
	h.writeFile(t, "/s/a.go", "")
	h.writeFile(t, "/s/x/b.go", "123")
	h.writeFile(t, "/s/x/y/c.go", "1")
	h.writeFile(t, "/s/x/y/c.txt", "")
	h.writeFile(t, "/s/.h/d.go", "")
	h.writeFile(t, "/s/node/e.go", "")
	h.writeFile(t, "/elsewhere/z.go", "")
	h.symlink(t, "/elsewhere", "/s/ln")
	cases := []struct {
		name, pattern string
		want          string
		truncated     bool
	}{
		{"name at any depth", "*.txt", "/s/x/y/c.txt", false},
		{"star star", "x/**/*.go", "/s/x/b.go,/s/x/y/c.go", false},
		{"dir", "y", "/s/x/y", false},
		{"relative path", "x/*.go", "/s/x/b.go", false},
		{"capped", "*.go", "/s/.h/d.go,/s/a.go,/s/node/e.go,/s/x/b.go", true},
		{"none", "*.rs", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []resp{
				h.get(t, "/v2/fs/search?path=/s&pattern="+c.pattern),
				h.v1(t, "/v1/file/find", `{"path":"/s","glob":`+jsonStr(c.pattern)+`}`),
			} {
				d := wantAIO[findResult](t, r)
				if got := strings.Join(d.Files, ","); got != c.want || d.Truncated != c.truncated || d.Path != "/s" {
					t.Errorf("got %s truncated %v path %s, want %s %v", got, d.Truncated, d.Path, c.want, c.truncated)
				}
			}
		})
	}
	wantValidation(t, h.get(t, "/v2/fs/search?path=/s"), "query.pattern", "missing")
	wantValidation(t, h.post(t, "/v1/file/find", `{"path":"/s"}`), "body.glob", "missing")
	wantAIOError(t, h.get(t, "/v2/fs/search?path=/s&pattern=%5B"), 400, "invalid_request")
	wantAIOError(t, h.get(t, "/v2/fs/search?path=/none&pattern=*"), 404, "not_found")
	wantV1Failure(t, h.v1(t, "/v1/file/find", `{"path":"/none","glob":"*"}`), "not_found", unix.ENOENT, "FileNotFoundError")

	t.Run("glob", func(t *testing.T) {
		gcases := []struct {
			name, body string
			want       string
			truncated  bool
			meta       bool
		}{
			{"top level only", `{"path":"/s","pattern":"*.go"}`, "/s/a.go", false, true},
			{"any depth", `{"path":"/s","pattern":"**/*.go"}`, "/s/a.go,/s/node/e.go,/s/x/b.go,/s/x/y/c.go", false, true},
			{"hidden", `{"path":"/s","pattern":"**/*.go","include_hidden":true}`, "/s/.h/d.go,/s/a.go,/s/node/e.go,/s/x/b.go,/s/x/y/c.go", false, true},
			{"exclude", `{"path":"/s","pattern":"**/*.go","exclude":["node","y"]}`, "/s/a.go,/s/x/b.go", false, true},
			{"dirs", `{"path":"/s","pattern":"*","files_only":false}`, "/s/a.go,/s/ln,/s/node,/s/x", false, true},
			{"size desc", `{"path":"/s","pattern":"**/*.go","sort_by":"size","sort_desc":true,"include_metadata":false}`, "/s/x/b.go,/s/x/y/c.go,/s/node/e.go,/s/a.go", false, false},
			{"max results", `{"path":"/s","pattern":"**/*.go","max_results":2}`, "/s/a.go,/s/node/e.go", true, true},
		}
		for _, c := range gcases {
			t.Run(c.name, func(t *testing.T) {
				d := wantAIO[globResult](t, h.v1(t, "/v1/file/glob", c.body))
				var got []string
				for _, f := range d.Files {
					got = append(got, f.Path)
					if (f.Size != nil) != c.meta || (f.ModifiedTime != nil) != c.meta {
						t.Errorf("%s: metadata %v %v, want %v", f.Path, f.Size, f.ModifiedTime, c.meta)
					}
					if f.Name != f.Path[strings.LastIndex(f.Path, "/")+1:] {
						t.Errorf("%s: name %q", f.Path, f.Name)
					}
				}
				if strings.Join(got, ",") != c.want || d.Truncated != c.truncated || d.TotalCount != len(d.Files) || d.Path != "/s" {
					t.Errorf("got %s truncated %v total %d path %s pattern %s, want %s %v", strings.Join(got, ","), d.Truncated, d.TotalCount, d.Path, d.Pattern, c.want, c.truncated)
				}
			})
		}
		wantValidation(t, h.post(t, "/v1/file/glob", `{"path":"/s","pattern":"*","max_results":0}`), "body.max_results", "greater_than_equal")
		wantValidation(t, h.post(t, "/v1/file/glob", `{"path":"/s","pattern":"*","max_results":50001}`), "body.max_results", "less_than_equal")
		wantValidation(t, h.post(t, "/v1/file/glob", `{"path":"/s"}`), "body.pattern", "missing")
		wantAIOError(t, h.post(t, "/v1/file/glob", `{"path":"/s","pattern":"*","sort_by":"x"}`), 400, "invalid_request")
		wantV1Failure(t, h.v1(t, "/v1/file/glob", `{"path":"/none","pattern":"*"}`), "not_found", unix.ENOENT, "FileNotFoundError")
	})
}

func TestAIOMkdirCopyMoveDelete(t *testing.T) {
	h := newFilesHarness(t, nil)
	t.Run("mkdir", func(t *testing.T) {
		d := wantAIO[mkdirResult](t, h.post(t, "/v2/fs/mkdir", `{"path":"/m/a/b"}`))
		if d != (mkdirResult{Path: "/m/a/b", Created: true}) {
			t.Errorf("got %+v", d)
		}
		h.wantDir(t, "/m/a/b")
		d = wantAIO[mkdirResult](t, h.v1(t, "/v1/file/mkdir", `{"path":"/m/a/b","parents":true}`))
		if d != (mkdirResult{Path: "/m/a/b", Created: false}) {
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
		d := wantAIO[copyResult](t, h.post(t, "/v2/fs/copy", `{"source":"/c/src/f.sh","destination":"/c/dst/f.sh"}`))
		if d != (copyResult{Source: "/c/src/f.sh", Destination: "/c/dst/f.sh", Entries: 1, BytesCopied: 10}) {
			t.Errorf("file: got %+v", d)
		}
		h.wantFile(t, "/c/dst/f.sh", "#!/bin/sh\n")
		if fi, _ := os.Stat(h.host("/c/dst/f.sh")); fi.Mode().Perm() != 0o750 {
			t.Errorf("mode: got %v, want 0750", fi.Mode().Perm())
		}
		d = wantAIO[copyResult](t, h.v1(t, "/v1/file/copy", `{"source":"/c/src","destination":"/c/tree"}`))
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
		wantAIO[copyResult](t, h.post(t, "/v2/fs/copy", `{"source":"/c/src/f.sh","destination":"/c/exists.txt","overwrite":true}`))
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
		d := wantAIO[moveResult](t, h.post(t, "/v2/fs/move", `{"source":"/mv/a","destination":"/mv/b","overwrite":true}`))
		if d != (moveResult{Source: "/mv/a", Destination: "/mv/b"}) {
			t.Errorf("got %+v", d)
		}
		h.wantFile(t, "/mv/b", "A")
		h.wantAbsent(t, "/mv/a")
		wantAIO[moveResult](t, h.v1(t, "/v1/file/move", `{"source":"/mv/b","destination":"/mv/new/c"}`))
		h.wantFile(t, "/mv/new/c", "A")
		wantAIOError(t, h.post(t, "/v2/fs/move", `{"source":"/mv/none","destination":"/mv/z"}`), 404, "not_found")
	})
	t.Run("delete", func(t *testing.T) {
		h.writeFile(t, "/del/d/f", "x")
		f := wantAIOError(t, h.post(t, "/v2/fs/delete", `{"path":"/del/d"}`), 409, "invalid_target")
		wantErrno(t, f, unix.ENOTEMPTY, "OSError")
		wantV1Failure(t, h.v1(t, "/v1/file/delete", `{"path":"/del/d"}`), "invalid_target", unix.ENOTEMPTY, "OSError")
		h.wantFile(t, "/del/d/f", "x")
		d := wantAIO[deleteResult](t, h.v1(t, "/v1/file/delete", `{"path":"/del/d","recursive":true}`))
		if d.Path != "/del/d" {
			t.Errorf("got %+v", d)
		}
		h.wantAbsent(t, "/del/d")
		wantAIOError(t, h.post(t, "/v2/fs/delete", `{"path":"/del/d"}`), 404, "not_found")
		wantAIOError(t, h.post(t, "/v2/fs/delete", `{"path":"/"}`), 400, "invalid_target")
	})
}

func TestAIOUserOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "the ownership tests run as root (non-root is simulated)")
	}
	h := newFilesHarness(t, nil)
	before := h.tree(t)
	for _, c := range []struct{ route, body string }{
		{"/v2/fs/write?user=no-such-sandfs-user", `{"path":"/o/w.txt","content":"x"}`},
		{"/v1/file/write", `{"file":"/o/w.txt","content":"x","user":"no-such-sandfs-user"}`},
		{"/v2/fs/mkdir?user=no-such-sandfs-user", `{"path":"/o/d"}`},
		{"/v1/file/mkdir", `{"path":"/o/d","user":"no-such-sandfs-user"}`},
		{"/v2/fs/copy?user=no-such-sandfs-user", `{"source":"/","destination":"/o/c"}`},
		{"/v1/file/str_replace_editor", `{"command":"create","path":"/o/e","file_text":"x","user":"no-such-sandfs-user"}`},
	} {
		f := wantAIOError(t, h.post(t, c.route, c.body), 400, "invalid_request")
		if f.Message != "no such user: no-such-sandfs-user" {
			t.Errorf("%s: message %q", c.route, f.Message)
		}
	}
	h.wantTree(t, before)
	t.Run("non-root daemon", func(t *testing.T) {
		asUID(t, 501)
		f := wantAIOError(t, h.post(t, "/v2/fs/write?user=nobody", `{"path":"/o/w.txt","content":"x"}`), 400, "invalid_request")
		if want := "cannot run as nobody: sandfs is running as uid 501 and only root can change identity"; f.Message != want {
			t.Errorf("message: got %q, want %q", f.Message, want)
		}
		wantAIOError(t, h.post(t, "/v1/file/mkdir", `{"path":"/o/d","user":"nobody"}`), 400, "invalid_request")
		h.wantTree(t, before)
	})
	t.Run("owned", func(t *testing.T) {
		uid, gid := 65534, 65534
		if _, _, err := resolveOwner("nobody"); err != nil {
			testenv.Skip(t, nil, "no account nobody here")
		}
		o, _, _ := resolveOwner("nobody")
		uid, gid = o.Uid, o.Gid
		wantAIO[fileWriteResult](t, h.post(t, "/v2/fs/write?user=nobody", `{"path":"/o/p/w.txt","content":"x"}`))
		wantAIO[mkdirResult](t, h.v1(t, "/v1/file/mkdir", `{"path":"/o/m/n","user":"nobody"}`))
		wantAIO[fileWriteResult](t, h.v1(t, "/v1/file/write", `{"file":"/o/ap.txt","content":"x","append":true,"user":"nobody"}`))
		for _, p := range []string{"/o", "/o/p", "/o/p/w.txt", "/o/m", "/o/m/n", "/o/ap.txt"} {
			fi, err := os.Lstat(h.host(p))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if int(st.Uid) != uid || int(st.Gid) != gid {
				t.Errorf("%s: owner %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, gid)
			}
		}
		wantAIO[copyResult](t, h.post(t, "/v2/fs/copy?user=nobody", `{"source":"/o/p","destination":"/o/cp"}`))
		for _, p := range []string{"/o/cp", "/o/cp/w.txt"} {
			if st := lstatSys(t, h.host(p)); int(st.Uid) != uid || int(st.Gid) != gid {
				t.Errorf("copy %s: owner %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, gid)
			}
		}
		// An existing file keeps its owner.
		h.writeFile(t, "/mine.txt", "a")
		wantAIO[fileWriteResult](t, h.post(t, "/v2/fs/write?user=nobody", `{"path":"/mine.txt","content":"b"}`))
		if fi, _ := os.Lstat(h.host("/mine.txt")); fi.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("an existing file changed owner")
		}
		h.wantFile(t, "/mine.txt", "b")
	})
}

func TestAIOCapabilities(t *testing.T) {
	h := newFilesHarness(t, nil)
	d := wantAIO[capabilities](t, h.get(t, "/v1/capabilities"))
	for _, op := range []string{"read", "write", "edit", "list", "stat", "search", "glob", "find", "mkdir", "copy", "move", "delete", "watch"} {
		if !d.Files[op] {
			t.Errorf("files.%s: got false, want true", op)
		}
	}
	if len(d.Files) != 19 || d.Files["fuse_mount"] {
		t.Errorf("files: got %v, want 19 flags and fuse_mount false", d.Files)
	}
	if d.Exec || d.Browser || d.Computer || d.CodeInterpreter {
		t.Errorf("other planes: got %+v, want false", d)
	}
	h2 := newHarness(t, harnessOpts{Token: "tok"})
	wantAIOError(t, h2.do(t, req{Method: "GET", Target: "/v1/capabilities", NoAuth: true}), 401, "unauthorized")
}

func lstatSys(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}

// TestAIOJournal: a change made through the file routes is told once, by
// core, with origin api.
func TestAIOJournal(t *testing.T) {
	h := newFilesHarness(t, nil)
	j := h.srv.sandboxes["default"].Journal()
	seq := j.Seq()
	wantAIO[fileWriteResult](t, h.post(t, "/v2/fs/write", `{"path":"/j.txt","content":"x"}`))
	wantAIO[editResult](t, h.post(t, "/v2/fs/edit", `{"command":"str_replace","path":"/j.txt","old_str":"x","new_str":"y"}`))
	wantAIO[copyResult](t, h.post(t, "/v2/fs/copy", `{"source":"/j.txt","destination":"/k.txt"}`))
	wantAIO[moveResult](t, h.post(t, "/v2/fs/move", `{"source":"/k.txt","destination":"/l.txt"}`))
	wantAIO[deleteResult](t, h.post(t, "/v2/fs/delete", `{"path":"/l.txt"}`))
	wantAIO[mkdirResult](t, h.post(t, "/v2/fs/mkdir", `{"path":"/jd"}`))
	es, _ := j.Since(seq, 100)
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%s %s %s", e.Type, e.Path, e.Origin))
	}
	want := "create /j.txt api,write /j.txt api,write /j.txt api,create /k.txt api,write /k.txt api,rename /l.txt api,remove /l.txt api,create /jd api"
	if strings.Join(got, ",") != want {
		t.Errorf("events:\ngot  %s\nwant %s", strings.Join(got, ","), want)
	}
}
