package agentfs

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

// TestWriteStatIsJSONMarshal: the hand-encoded stat answer is byte for
// byte what aio.WriteJSON(agentStat) writes, for paths needing escapes and
// times of every fraction width.
func TestWriteStatIsJSONMarshal(t *testing.T) {
	base := time.Date(2026, 11, 30, 15, 4, 5, 0, time.FixedZone("x", 3600))
	cases := []struct {
		path string
		typ  string
		size uint64
		t    time.Time
	}{
		{"/a.txt", entryFile, 6, base},
		{"/dir", entryDirectory, 4096, base.Add(123 * time.Millisecond)},
		{"/é/ü.txt", entryFile, 0, base.Add(123456 * time.Microsecond)},
		{`/q"uote\back`, entryFile, 1 << 40, base.Add(123456789)},
		{"/<b>&amp;", entryFile, 1, base.Add(1)},
		{"/ctl\x01\n\t", entryFile, 1, base.Add(1000)},
		{"/bad\xff\xfeutf8", entryFile, 1, base},
		{"/line\u2028sep", entryFile, 1, base},
		{"/zero-time", entryFile, 1, time.Time{}},
	}
	for _, c := range cases {
		want := httptest.NewRecorder()
		in := core.Info{Path: c.path, Size: int64(c.size), ModTime: c.t, Inode: 0xfeed + c.size, Mode: 0o644}
		if c.typ == entryDirectory {
			in.Mode |= fs.ModeDir
		}
		httpkit.WriteJSON(want, http.StatusOK, agentStat(in))
		got := httptest.NewRecorder()
		writeStat(got, in)
		if got.Body.String() != want.Body.String() {
			t.Errorf("%q: writeStat wrote\n%s want\n%s", c.path, got.Body, want.Body)
		}
		if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%q: status %d %q, want %d %q", c.path, got.Code, got.Header().Get("Content-Type"), want.Code, want.Header().Get("Content-Type"))
		}
	}
}

// TestPathQuery: the fast path decodes as url.ParseQuery does, and every
// other query takes the general path with its errors.
func TestPathQuery(t *testing.T) {
	cases := []struct {
		raw     string
		want    string
		wantErr bool
	}{
		{"path=/a.txt", "/a.txt", false},
		{"path=%2Fa%20b%2Bc", "/a b+c", false},
		{"path=a+b", "a b", false},
		{"path=", "", false},
		{"path=/x&sessionId=1", "/x", false},
		{"sessionId=1&path=/y", "/y", false},
		{"path=%zz", "", true},
		{"path=/a;b", "", true},
		{"other=1", "", true},
		{"", "", true},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/v1/fs/stat?"+c.raw, nil)
		got, err := pathQuery(r)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("pathQuery(%q) = %q, %v; want %q, error %v", c.raw, got, err, c.want, c.wantErr)
		}
	}
}

// TestServeSmallIsServeContent: a small unconditional GET answered from
// one read carries the status, headers and bytes http.ServeContent sends;
// conditional and large requests are left to ServeContent.
func TestServeSmallIsServeContent(t *testing.T) {
	dir := t.TempDir()
	mod := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	for _, size := range []int{0, 1, 4096, smallFile} {
		p := filepath.Join(dir, strconv.Itoa(size))
		body := bytes.Repeat([]byte("abcdefg\n"), size/8+1)[:size]
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("GET", "/v1/fs/file?path=/x", nil)
		want := httptest.NewRecorder()
		want.Header()["Content-Type"] = ctOctet
		http.ServeContent(want, r, "", mod, f)
		got := httptest.NewRecorder()
		got.Header()["Content-Type"] = ctOctet
		if !serveSmall(got, r, f, int64(size), mod) {
			t.Fatalf("size %d: serveSmall declined", size)
		}
		if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), body) || !bytes.Equal(want.Body.Bytes(), body) {
			t.Errorf("size %d: status %d, %d bytes; ServeContent %d, %d bytes", size, got.Code, got.Body.Len(), want.Code, want.Body.Len())
		}
		for _, h := range []string{"Content-Type", "Content-Length", "Last-Modified", "Accept-Ranges"} {
			if got.Header().Get(h) != want.Header().Get(h) {
				t.Errorf("size %d: %s %q, ServeContent %q", size, h, got.Header().Get(h), want.Header().Get(h))
			}
		}
		for _, h := range conditionalHeaders {
			r := httptest.NewRequest("GET", "/v1/fs/file?path=/x", nil)
			r.Header.Set(h, "bytes=0-1")
			if serveSmall(httptest.NewRecorder(), r, f, int64(size), mod) {
				t.Errorf("size %d: serveSmall answered a request with %s", size, h)
			}
		}
		f.Close()
	}
	f, _ := os.Open(filepath.Join(dir, "1"))
	defer f.Close()
	if serveSmall(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil), f, smallFile+1, mod) {
		t.Errorf("serveSmall answered a file over smallFile")
	}
}
