package rest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/rest/aio"
)

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
	names := func(fs []aio.ListEntry) string {
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
				d := wantAIO[aio.ListResult](t, r)
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
		h := newFilesHarness(t, func(l *aio.FileLimits) { l.List = 3 })
		for i := range 5 {
			h.writeFile(t, fmt.Sprintf("/t/f%d", i), "")
		}
		for _, r := range []resp{h.get(t, "/v2/fs/list?path=/t"), h.v1(t, "/v1/file/list", `{"path":"/t"}`)} {
			d := wantAIO[aio.ListResult](t, r)
			if !d.Truncated || d.TotalCount != 3 || len(d.Files) != 3 || d.FileCount != 3 {
				t.Errorf("got truncated %v total %d files %d", d.Truncated, d.TotalCount, len(d.Files))
			}
		}
	})
	t.Run("visit bound", func(t *testing.T) {
		h := newFilesHarness(t, func(l *aio.FileLimits) { l.Visit = 4 })
		for i := range 6 {
			h.writeFile(t, fmt.Sprintf("/v/f%d.txt", i), "")
		}
		h.writeFile(t, "/v/z.py", "")
		d := wantAIO[aio.ListResult](t, h.v1(t, "/v1/file/list", `{"path":"/v","file_types":[".py"]}`))
		if !d.Truncated || d.TotalCount != 0 {
			t.Errorf("list: got truncated %v total %d, want true 0", d.Truncated, d.TotalCount)
		}
		f := wantAIO[aio.FindResult](t, h.get(t, "/v2/fs/search?path=/v&pattern=*.py"))
		if !f.Truncated || len(f.Files) != 0 {
			t.Errorf("search: got %+v, want truncated and nothing", f)
		}
		g := wantAIO[aio.GlobResult](t, h.v1(t, "/v1/file/glob", `{"path":"/v","pattern":"*.py"}`))
		if !g.Truncated || len(g.Files) != 0 {
			t.Errorf("glob: got %+v, want truncated and nothing", g)
		}
	})
	wantAIOError(t, h.get(t, "/v2/fs/list?path=/p/a.py"), 400, "invalid_target")
	wantV1Failure(t, h.v1(t, "/v1/file/list", `{"path":"/p/a.py"}`), "invalid_target", unix.ENOTDIR, "NotADirectoryError")
	wantAIOError(t, h.get(t, "/v2/fs/list?path=/none"), 404, "not_found")
	wantV1Failure(t, h.v1(t, "/v1/file/list", `{"path":"/none"}`), "not_found", unix.ENOENT, "FileNotFoundError")
	// sort_by=size sorts by size also when include_size=false hides it
	// (it sorted by name there: the AIO SDK's list_path showed it).
	t.Run("size order without sizes", func(t *testing.T) {
		for name, body := range map[string]string{"one": "1", "three": "333", "two": "22", "zero": ""} {
			h.writeFile(t, "/q/"+name, body)
		}
		for _, c := range []struct {
			r    resp
			want string
		}{
			{h.get(t, "/v2/fs/list?path=/q&sort_by=size&sort_desc=true&include_size=false"), "three,two,one,zero"},
			{h.v1(t, "/v1/file/list", `{"path":"/q","sort_by":"size","sort_desc":true,"include_size":false}`), "three,two,one,zero"},
			{h.v1(t, "/v1/file/list", `{"path":"/q","sort_by":"size","include_size":false}`), "zero,one,two,three"},
		} {
			d := wantAIO[aio.ListResult](t, c.r)
			var got []string
			for _, f := range d.Files {
				got = append(got, f.Name)
				if f.Size != nil {
					t.Errorf("%s: size %d shown with include_size false", f.Name, *f.Size)
				}
			}
			if g := strings.Join(got, ","); g != c.want {
				t.Errorf("got %s, want %s", g, c.want)
			}
		}
	})
	wantAIOError(t, h.get(t, "/v2/fs/list?path=/p&sort_by=color"), 400, "invalid_request")
	wantValidation(t, h.get(t, "/v2/fs/list?path=/p&recursive=sure"), "query.recursive", "bool_parsing")
	wantValidation(t, h.post(t, "/v1/file/list", `{"recursive":true}`), "body.path", "missing")
}

func TestAIOSearchFindGlob(t *testing.T) {
	h := newFilesHarness(t, func(l *aio.FileLimits) { l.Search = 4 })
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
				d := wantAIO[aio.FindResult](t, r)
				if got := strings.Join(d.Files, ","); got != c.want || d.Truncated != c.truncated || d.Path != "/s" {
					t.Errorf("got %s truncated %v path %s, want %s %v", got, d.Truncated, d.Path, c.want, c.truncated)
				}
			}
		})
	}
	wantValidation(t, h.get(t, "/v2/fs/search?path=/s"), "query.pattern", "missing")
	wantValidation(t, h.post(t, "/v1/file/find", `{"path":"/s"}`), "body.glob", "missing")
	r := h.get(t, "/v2/fs/search?path=/s&pattern=%5B")
	wantAIOError(t, r, 400, "invalid_request")
	if body := string(r.Body); !strings.Contains(body, `invalid pattern \"[\"`) || strings.Contains(body, "**/") {
		t.Errorf("a bad pattern is quoted as typed: %s", body) // not as the "**/[" it became
	}
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
			// max_results keeps the first of the sorted matches, not the
			// first found (the AIO SDK's glob_files with sort_by and
			// max_results showed the walk's first, then sorted).
			{"max results of the sorted", `{"path":"/s","pattern":"**/*.go","sort_by":"size","sort_desc":true,"max_results":2}`, "/s/x/b.go,/s/x/y/c.go", true, true},
			{"max results by name", `{"path":"/s","pattern":"**/*.go","sort_by":"name","sort_desc":true,"max_results":1}`, "/s/node/e.go", true, true},
			{"max results, cut while walking", `{"path":"/s","pattern":"**/*.go","include_hidden":true,"sort_by":"name","sort_desc":true,"max_results":2}`, "/s/node/e.go,/s/.h/d.go", true, true},
			{"max results exactly all", `{"path":"/s","pattern":"**/*.go","sort_by":"name","max_results":4}`, "/s/a.go,/s/x/b.go,/s/x/y/c.go,/s/node/e.go", false, true},
		}
		for _, c := range gcases {
			t.Run(c.name, func(t *testing.T) {
				d := wantAIO[aio.GlobResult](t, h.v1(t, "/v1/file/glob", c.body))
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
