package rest

import (
	"bytes"
	"mime/multipart"
	"strings"
	"testing"
)

// fileFirstBody is a form whose file part comes before its fields, as
// clients other than the Python SDK send it.
func fileFirstBody(t *testing.T, filename, content string, fields [][2]string) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, err := mw.CreateFormFile("file", filename)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte(content))
	for _, f := range fields {
		mw.WriteField(f[0], f[1])
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &b, mw.FormDataContentType()
}

// TestUploadFileFirst: the upload's fields are taken in any order: a file
// part before the path lands at the path (v1 and v2), one with no path at
// all in the working directory under its name, and the fields after it
// (user, expected_etag) still hold.
func TestUploadFileFirst(t *testing.T) {
	cases := []struct {
		name, target string
		fields       [][2]string
		want         string // where the file lands
		status       int
	}{
		{"v1 path after the file", "/v1/file/upload", [][2]string{{"path", "/d/landed.txt"}}, "/d/landed.txt", 200},
		{"v2 path after the file", "/v2/fs/upload", [][2]string{{"path", "/d/landed.txt"}}, "/d/landed.txt", 200},
		{"a directory path after the file", "/v1/file/upload", [][2]string{{"path", "/d/"}}, "/d/up.txt", 200},
		{"no path at all", "/v1/file/upload", nil, "/up.txt", 200},
		{"a precondition after the file, not met", "/v2/fs/upload", [][2]string{{"path", "/old.txt"}, {"expected_etag", `"nope"`}}, "", 412},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			h.mkdir(t, "/d")
			h.writeFile(t, "/old.txt", "old")
			body, ct := fileFirstBody(t, "up.txt", "uploaded bytes", c.fields)
			r := h.do(t, req{Method: "POST", Target: c.target, Body: body, Header: map[string]string{"Content-Type": ct}})
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
			if c.status != 200 {
				h.wantFile(t, "/old.txt", "old")
				return
			}
			if !strings.Contains(string(r.Body), `"file_path":"`+c.want+`"`) {
				t.Errorf("answer %s does not name %s", r.Body, c.want)
			}
			h.wantFile(t, c.want, "uploaded bytes")
			wantNoTemp(t, h.root)
		})
	}
}
