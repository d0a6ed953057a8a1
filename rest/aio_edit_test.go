package rest

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/rest/aio"
)

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
			d := wantAIO[aio.EditResult](t, r)
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
		d := wantAIO[aio.EditResult](t, r)
		if d.PrevExist || d.OldContent != nil || d.NewContent == nil || *d.NewContent != "print(1)\nprint(2)\n" || d.Output != "File created successfully at: /new/c.py" {
			t.Errorf("create: got %+v", d)
		}
		h.wantFile(t, "/new/c.py", "print(1)\nprint(2)\n")
		wantV1Failure(t, h.v1(t, "/v1/file/str_replace_editor", `{"command":"create","path":"/new/c.py","file_text":"x"}`), "already_exists", unix.EEXIST, "FileExistsError")
		d = wantAIO[aio.EditResult](t, h.v1(t, "/v1/file/str_replace_editor", `{"command":"view","path":"/new/c.py","view_range":[2,-1]}`))
		if want := "Here's the result of running `cat -n` on /new/c.py:\n     2\tprint(2)\n"; d.Output != want || !d.PrevExist {
			t.Errorf("view: got %q, want %q", d.Output, want)
		}
		d = wantAIO[aio.EditResult](t, h.v1(t, "/v1/file/str_replace_editor", `{"command":"view","path":"/new"}`))
		if !strings.Contains(d.Output, "/new/c.py\n") || !strings.Contains(d.Output, "2 levels deep in /new") {
			t.Errorf("view dir: got %q", d.Output)
		}
		wantAIO[aio.EditResult](t, h.v1(t, "/v1/file/str_replace_editor", `{"command":"undo_edit","path":"/new/c.py"}`))
		h.wantAbsent(t, "/new/c.py")
	})
	t.Run("v1 replace", func(t *testing.T) {
		h.writeFile(t, "/r.txt", "x y x")
		d := wantAIO[aio.ReplaceResult](t, h.v1(t, "/v1/file/replace", `{"file":"/r.txt","old_str":"y","new_str":"z"}`))
		if d.File != "/r.txt" || d.ReplacedCount != 1 {
			t.Errorf("replace: got %+v", d)
		}
		d = wantAIO[aio.ReplaceResult](t, h.v1(t, "/v1/file/replace", `{"file":"/r.txt","old_str":"x","new_str":"w","replace_mode":"ALL"}`))
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
