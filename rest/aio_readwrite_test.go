package rest

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/rest/aio"
)

func TestAIORead(t *testing.T) {
	h := newFilesHarness(t, func(l *aio.FileLimits) { l.ReadBytes = 64 })
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
			d := wantAIO[aio.FileReadResult](t, h.get(t, "/v2/fs/read?"+c.v2))
			if d.Content != c.want || d.File != "/src/app.py" {
				t.Errorf("v2: got %q %q, want %q /src/app.py", d.Content, d.File, c.want)
			}
			d = wantAIO[aio.FileReadResult](t, h.v1(t, "/v1/file/read", c.v1))
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
			for _, f := range []aio.Failure{f, f1} {
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
			d := wantAIO[aio.FileWriteResult](t, h.v1(t, c.route, c.body))
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

type statData = aio.StatResult

func TestAIOStat(t *testing.T) {
	h := newFilesHarness(t, nil)
	h.writeFile(t, "/d/f.txt", "hello")
	os.Chmod(h.host("/d/f.txt"), 0o640)
	h.symlink(t, "/d/f.txt", "/link")
	h.symlink(t, "d", "/dlink")
	cases := []struct {
		name, v2, v1 string
		want         aio.StatResult
	}{
		{"file", "path=/d/f.txt", `{"path":"/d/f.txt"}`, aio.StatResult{Path: "/d/f.txt", Size: 5, Permissions: "0640"}},
		{"dir", "path=/d", `{"path":"/d"}`, aio.StatResult{Path: "/d", Size: -1, Permissions: "0755", IsDirectory: true}},
		{"link followed", "path=/link", `{"path":"/link"}`, aio.StatResult{Path: "/link", Size: 5, Permissions: "0640", IsSymlink: true}},
		{"link itself", "path=/link&follow_symlinks=false", `{"path":"/link","follow_symlinks":false}`, aio.StatResult{Path: "/link", Size: 8, Permissions: "0777", IsSymlink: true}},
		{"dir link", "path=/dlink", `{"path":"/dlink"}`, aio.StatResult{Path: "/dlink", Size: -1, Permissions: "0755", IsDirectory: true, IsSymlink: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []resp{h.get(t, "/v2/fs/stat?"+c.v2), h.v1(t, "/v1/file/stat", c.v1)} {
				d := wantAIO[aio.StatResult](t, r)
				if c.want.Size < 0 {
					c.want.Size = d.Size
				}
				if d.ModifiedTime == "" {
					t.Errorf("modified_time is empty")
				}
				d.ModifiedTime = ""
				follow := !strings.Contains(c.v2, "follow_symlinks=false")
				target := c.want.Path
				if follow && target == "/link" {
					target = "/d/f.txt" // an absolute target: the host would leave the root
				}
				if want := hostETag(t, h.host(target), follow); d.ETag != want {
					t.Errorf("etag: got %q, want %q", d.ETag, want)
				}
				d.ETag = ""
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
