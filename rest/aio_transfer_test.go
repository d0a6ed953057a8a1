package rest

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/internal/testenv"
)

// Tests of the AIO transfer routes (part B): grep, search, upload,
// download, tree, xattr. Every answer goes through h.do, which checks it
// against openapi.json.

func jsonReq(method, target, body string) req {
	return req{Method: method, Target: target, Body: strings.NewReader(body), Header: map[string]string{"Content-Type": "application/json"}}
}

func TestGrepRoutes(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/p/a.go", "package a\n// TODO one\nfunc main() {}\n")
	h.writeFile(t, "/p/b.py", "x = 1\n# TODO two\n")
	h.writeFile(t, "/p/c.bin", "TODO\x00bin")
	h.writeFile(t, "/p/big.txt", strings.Repeat("TODO big\n", 200_000)) // 1.8 MB: over the 1M default
	h.writeFile(t, "/p/.git/HEAD", "TODO in git\n")

	type match struct {
		File          string    `json:"file"`
		LineNumber    int       `json:"line_number"`
		LineContent   string    `json:"line_content"`
		ContextBefore *[]string `json:"context_before"`
		ContextAfter  *[]string `json:"context_after"`
	}
	type result struct {
		Path          string  `json:"path"`
		Pattern       string  `json:"pattern"`
		Matches       []match `json:"matches"`
		MatchCount    int     `json:"match_count"`
		FilesSearched int     `json:"files_searched"`
		FilesMatched  int     `json:"files_matched"`
		Truncated     bool    `json:"truncated"`
	}
	for _, route := range []string{"/v2/fs/grep", "/v1/file/grep"} {
		t.Run(route, func(t *testing.T) {
			do := func(body string) resp {
				t.Helper()
				r := h.do(t, jsonReq("POST", route, body))
				if strings.HasPrefix(route, "/v1/") && r.Status == 200 && !checkV1Schema(t, route, r) {
					t.Errorf("%s: not checked against the 1.x schema", route)
				}
				return r
			}
			ok := func(body string) result {
				t.Helper()
				return wantAIO[result](t, do(body))
			}
			r := ok(`{"path":"/p","pattern":"TODO"}`)
			want := result{Path: "/p", Pattern: "TODO", MatchCount: 2, FilesSearched: 2, FilesMatched: 2, Matches: []match{
				{File: "/p/a.go", LineNumber: 2, LineContent: "// TODO one"},
				{File: "/p/b.py", LineNumber: 2, LineContent: "# TODO two"},
			}}
			if !reflect.DeepEqual(r, want) {
				t.Errorf("got %+v\nwant %+v", r, want)
			}
			// A single file, with context; null fields take their defaults.
			r = ok(`{"path":"p/a.go","pattern":"todo","case_insensitive":true,"context_before":1,"context_after":5,"max_results":null,"type":null}`)
			if len(r.Matches) != 1 || r.Path != "/p/a.go" {
				t.Fatalf("single file: %+v", r)
			}
			if m := r.Matches[0]; *m.ContextBefore != nil && !reflect.DeepEqual(*m.ContextBefore, []string{"package a"}) ||
				!reflect.DeepEqual(*m.ContextAfter, []string{"func main() {}"}) {
				t.Errorf("context: %q %q", *m.ContextBefore, *m.ContextAfter)
			}
			// max_file_size lets the big file in; max_results truncates.
			r = ok(`{"path":"/p","pattern":"TODO","max_file_size":"2M","max_results":3,"include":["*.txt"]}`)
			if len(r.Matches) != 3 || !r.Truncated || r.MatchCount != 3 || r.Matches[2].LineNumber != 3 {
				t.Errorf("truncated: %+v", r)
			}
			// type alias; exclude replaces the defaults (.git is searched).
			r = ok(`{"path":"/p","pattern":"TODO","type":"py"}`)
			if len(r.Matches) != 1 || r.Matches[0].File != "/p/b.py" {
				t.Errorf("type py: %+v", r)
			}
			r = ok(`{"path":"/p","pattern":"TODO","exclude":["*.go","*.py","big.txt"]}`)
			if len(r.Matches) != 1 || r.Matches[0].File != "/p/.git/HEAD" {
				t.Errorf("exclude: %+v", r)
			}
			// Failures.
			for _, c := range []struct {
				name, body string
				status     int
				errType    string
			}{
				{"bad regex", `{"path":"/p","pattern":"a(b"}`, 400, "invalid_request"},
				{"unknown type", `{"path":"/p","pattern":"a","type":"klingon"}`, 400, "invalid_request"},
				{"bad max_file_size", `{"path":"/p","pattern":"a","max_file_size":"lots"}`, 400, "invalid_request"},
			} {
				t.Run(c.name, func(t *testing.T) {
					f := wantAIOError(t, do(c.body), c.status, c.errType)
					if f.Errno != nil {
						t.Errorf("errno: got %v, want null", *f.Errno)
					}
				})
			}
			missing := 404
			if strings.HasPrefix(route, "/v1/") {
				missing = 200
			}
			f := wantAIOError(t, do(`{"path":"/nope","pattern":"a"}`), missing, "not_found")
			wantErrno(t, f, unix.ENOENT, "FileNotFoundError")
			if f.Path != "/nope" || f.Operation != "grep" {
				t.Errorf("failure path/op: %q %q", f.Path, f.Operation)
			}
			wantValidation(t, h.do(t, jsonReq("POST", route, `{"path":"/p"}`)), "body.pattern", "missing")
			wantValidation(t, h.do(t, jsonReq("POST", route, `{"path":"/p","pattern":"x","context_before":21}`)), "body.context_before", "less_than_equal")
			wantValidation(t, h.do(t, jsonReq("POST", route, `{"path":"/p","pattern":"x","max_results":0}`)), "body.max_results", "greater_than_equal")
			wantValidation(t, h.do(t, jsonReq("POST", route, `{"path":`)), "body", "json_invalid")
		})
	}

	t.Run("/v1/file/search", func(t *testing.T) {
		type sr struct {
			File        string   `json:"file"`
			Matches     []string `json:"matches"`
			LineNumbers []int    `json:"line_numbers"`
		}
		search := func(body string) resp {
			t.Helper()
			r := h.do(t, jsonReq("POST", "/v1/file/search", body))
			if r.Status == 200 && !checkV1Schema(t, "/v1/file/search", r) {
				t.Errorf("not checked against the 1.x schema")
			}
			return r
		}
		r := wantAIO[sr](t, search(`{"file":"/p/a.go","regex":"^(package|func)"}`))
		if want := (sr{"/p/a.go", []string{"package a", "func main() {}"}, []int{0, 2}}); !reflect.DeepEqual(r, want) {
			t.Errorf("got %+v, want %+v", r, want)
		}
		r = wantAIO[sr](t, search(`{"file":"/p/c.bin","regex":"TODO"}`))
		if len(r.Matches) != 1 {
			t.Errorf("a file named directly is searched even when binary: %+v", r)
		}
		wantAIOError(t, h.do(t, jsonReq("POST", "/v1/file/search", `{"file":"/p/a.go","regex":"("}`)), 400, "invalid_request")
		f := wantAIOError(t, search(`{"file":"/p","regex":"x"}`), 200, "invalid_target")
		wantErrno(t, f, unix.EISDIR, "IsADirectoryError")
		wantAIOError(t, search(`{"file":"/zz","regex":"x"}`), 200, "not_found")
		wantValidation(t, h.do(t, jsonReq("POST", "/v1/file/search", `{"file":"/p/a.go"}`)), "body.regex", "missing")
	})
}

// multipartBody builds an upload form: fields in order, then the file.
func multipartBody(t *testing.T, fields [][2]string, filename string, content io.Reader) (io.Reader, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for _, f := range fields {
			mw.WriteField(f[0], f[1])
		}
		if content != nil {
			fw, err := mw.CreateFormFile("file", filename)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := io.Copy(fw, content); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	return pr, mw.FormDataContentType()
}

func TestUploadRoutes(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.mkdir(t, "/dir")
	type up struct {
		FilePath string `json:"file_path"`
		FileSize int64  `json:"file_size"`
		Success  bool   `json:"success"`
	}
	upload := func(route string, fields [][2]string, name, content string) resp {
		body, ct := multipartBody(t, fields, name, strings.NewReader(content))
		r := h.do(t, req{Method: "POST", Target: route, Body: body, Header: map[string]string{"Content-Type": ct}})
		if route == "/v1/file/upload" && r.Status == 200 && !checkV1Schema(t, route, r) {
			t.Errorf("not checked against the 1.x schema")
		}
		return r
	}
	for _, route := range []string{"/v2/fs/upload", "/v1/file/upload"} {
		t.Run(route, func(t *testing.T) {
			for _, c := range []struct {
				name    string
				fields  [][2]string
				file    string
				want    string
				content string
			}{
				{"to a path, parents made", [][2]string{{"path", "/new/sub/x.txt"}}, "ignored.txt", "/new/sub/x.txt", "hello"},
				{"replace", [][2]string{{"path", "/new/sub/x.txt"}}, "f", "/new/sub/x.txt", "bye"},
				{"into a directory", [][2]string{{"path", "/dir"}}, "n.bin", "/dir/n.bin", "\x00\x01"},
				{"no path: working directory", nil, "w.txt", "/w.txt", ""},
			} {
				t.Run(c.name, func(t *testing.T) {
					got := wantAIO[up](t, upload(route, c.fields, c.file, c.content))
					if want := (up{c.want, int64(len(c.content)), true}); got != want {
						t.Errorf("got %+v, want %+v", got, want)
					}
					h.wantFile(t, c.want, c.content)
				})
			}
			// No file part at all:
			body, ct := multipartBody(t, [][2]string{{"path", "/x"}}, "", nil)
			wantValidation(t, h.do(t, req{Method: "POST", Target: route, Body: body, Header: map[string]string{"Content-Type": ct}}), "body.file", "missing")
			wantAIOError(t, h.do(t, jsonReq("POST", route, `{}`)), 415, "unsupported_media_type")
			status := 400
			if strings.HasPrefix(route, "/v1/") {
				status = 200
			}
			wantAIOError(t, upload(route, [][2]string{{"path", "/dir"}}, "", "x"), 400, "invalid_request") // no name for a directory target
			f := wantAIOError(t, upload(route, [][2]string{{"path", "/new/sub/x.txt/under"}}, "f", "x"), status, "invalid_target")
			wantErrno(t, f, unix.ENOTDIR, "NotADirectoryError")
			wantAIOError(t, upload(route, [][2]string{{"path", "/x"}, {"user", "no-such-user-zz"}}, "f", "x"), 400, "invalid_request")
			h.wantAbsent(t, "/x")
		})
	}
	// The wrong field order is refused.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, _ := mw.CreateFormFile("file", "late.txt")
		fw.Write([]byte("x"))
		mw.WriteField("path", "/elsewhere")
		pw.CloseWithError(mw.Close())
	}()
	wantValidation(t, h.do(t, req{Method: "POST", Target: "/v2/fs/upload", Body: pr, Header: map[string]string{"Content-Type": mw.FormDataContentType()}}), "body.path", "value_error")
	// No spool file is left anywhere.
	for _, p := range h.tree(t) {
		if strings.Contains(p, ".sandfs-") {
			t.Errorf("leftover %s", p)
		}
	}
}

func TestDownloadRoutes(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	content := strings.Repeat("0123456789", 1000)
	h.writeFile(t, "/d/f.txt", content)
	h.mkdir(t, "/d/sub")
	for _, route := range []string{"/v2/fs/download", "/v1/file/download"} {
		t.Run(route, func(t *testing.T) {
			r := h.do(t, req{Method: "GET", Target: route + "?path=/d/f.txt"})
			wantStatus(t, r, 200)
			if string(r.Body) != content {
				t.Errorf("body: %d bytes, want %d", len(r.Body), len(content))
			}
			etag := r.Header.Get("ETag")
			for k, want := range map[string]string{
				"Accept-Ranges":       "bytes",
				"Content-Type":        "application/octet-stream",
				"Content-Disposition": "attachment; filename=f.txt",
				"Content-Length":      "10000",
			} {
				if got := r.Header.Get(k); got != want {
					t.Errorf("%s: got %q, want %q", k, got, want)
				}
			}
			if !strings.HasPrefix(etag, `"`) || r.Header.Get("Last-Modified") == "" {
				t.Errorf("ETag %q / Last-Modified %q", etag, r.Header.Get("Last-Modified"))
			}
			r = h.do(t, req{Method: "GET", Target: route + "?path=/d/f.txt", Header: map[string]string{"Range": "bytes=10-19"}})
			wantStatus(t, r, 206)
			if string(r.Body) != "0123456789" || r.Header.Get("Content-Range") != "bytes 10-19/10000" {
				t.Errorf("range: %q %q", r.Body, r.Header.Get("Content-Range"))
			}
			wantStatus(t, h.do(t, req{Method: "GET", Target: route + "?path=/d/f.txt", Header: map[string]string{"Range": "bytes=20000-"}}), 416)
			wantStatus(t, h.do(t, req{Method: "GET", Target: route + "?path=/d/f.txt", Header: map[string]string{"If-None-Match": etag}}), 304)
			// change_policy=abort with the current ETag streams; with another it is 409.
			r = h.do(t, req{Method: "GET", Target: route + "?path=/d/f.txt&change_policy=abort", Header: map[string]string{"If-Match": etag}})
			wantStatus(t, r, 200)
			if len(r.Body) != len(content) {
				t.Errorf("abort policy body: %d bytes", len(r.Body))
			}
			f := wantAIOError(t, h.do(t, req{Method: "GET", Target: route + "?path=/d/f.txt&change_policy=abort", Header: map[string]string{"If-Match": `"0-0-0"`}}), 409, "file_changed")
			if f.Operation != "download" {
				t.Errorf("operation: %q", f.Operation)
			}
			wantStatus(t, h.do(t, req{Method: "GET", Target: route + "?path=/d/f.txt", Header: map[string]string{"If-Match": `"0-0-0"`}}), 412)
			f = wantAIOError(t, h.do(t, req{Method: "GET", Target: route + "?path=/d/none"}), 404, "not_found")
			wantErrno(t, f, unix.ENOENT, "FileNotFoundError")
			wantAIOError(t, h.do(t, req{Method: "GET", Target: route + "?path=/d/sub"}), 400, "invalid_target")
			wantValidation(t, h.do(t, req{Method: "GET", Target: route}), "query.path", "missing")
			wantValidation(t, h.do(t, req{Method: "GET", Target: route + "?path=/d/f.txt&change_policy=maybe"}), "query.change_policy", "enum")
		})
	}
	r := h.do(t, req{Method: "HEAD", Target: "/v2/fs/download?path=/d/f.txt"})
	wantStatus(t, r, 200)
	if len(r.Body) != 0 || r.Header.Get("Content-Length") != "10000" {
		t.Errorf("HEAD: %d bytes, Content-Length %q", len(r.Body), r.Header.Get("Content-Length"))
	}
	wantStatus(t, h.do(t, req{Method: "HEAD", Target: "/v2/fs/download?path=/d/none"}), 404)
}

// TestDownloadCutOnChange: under change_policy=abort a file that changes
// while it streams cuts the transfer: the client reads a short body.
func TestDownloadCutOnChange(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	const size = 64 << 20
	p := h.host("/big.bin")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
	res, err := h.ts.Client().Get(h.ts.URL + "/v2/fs/download?path=/big.bin&change_policy=abort")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	buf := make([]byte, 1<<20)
	if _, err := io.ReadFull(res.Body, buf); err != nil {
		t.Fatal(err)
	}
	// Append while the client holds the stream (the server is blocked on
	// the socket buffers, a few MiB ahead at most).
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("changed"))
	f.Close()
	n, err := io.Copy(io.Discard, res.Body)
	if err == nil || int64(len(buf))+n >= size {
		t.Errorf("read %d bytes more, err %v: want a cut transfer short of %d", n, err, size)
	}
}

// TestTransferBoundedMemory uploads and downloads 1 GiB (generated on the
// wire, sparse on disk) and checks the heap does not grow with the size.
func TestTransferBoundedMemory(t *testing.T) {
	if testing.Short() {
		testenv.Skip(t, nil, "1 GiB transfer")
	}
	h := newHarness(t, harnessOpts{})
	// The disk under t.TempDir() may write at tens of MB/s: when there is a
	// tmpfs, serve a sandbox from it so the test measures memory, not disk.
	if dir, err := os.MkdirTemp("/dev/shm", "sandfs-test-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		h = newHarnessAt(t, dir)
	}
	// 1 GiB; 128 MiB under the race detector, where the multipart parser
	// runs ten times slower: still twice the heap growth allowed, so a
	// handler that buffered the body would fail either way.
	size, allowed := int64(1<<30), int64(64<<20)
	if raceEnabled {
		size, allowed = 128<<20, 32<<20
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	base := heap()
	start := time.Now()
	var peak uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if v := heap(); v > peak {
				peak = v
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	// The form is framed by hand around a generated stream: no pipe, no
	// goroutine, a known Content-Length.
	var head, tail bytes.Buffer
	mw := multipart.NewWriter(&head)
	mw.WriteField("path", "/huge.bin")
	mw.CreateFormFile("file", "huge.bin")
	fmt.Fprintf(&tail, "\r\n--%s--\r\n", mw.Boundary())
	hr, _ := http.NewRequest("POST", h.ts.URL+"/v2/fs/upload",
		io.MultiReader(&head, io.LimitReader(zeroReader{}, size), &tail))
	hr.ContentLength = int64(head.Len()) + size + int64(tail.Len())
	hr.Header.Set("Content-Type", mw.FormDataContentType())
	// Large socket writes, as a real uploader makes (the default 4 KiB
	// buffer costs a syscall per 4 KiB).
	tr := h.ts.Client().Transport.(*http.Transport).Clone()
	tr.WriteBufferSize, tr.ReadBufferSize = 1<<20, 1<<20
	hc := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	res, err := hc.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf(`"file_size":%d`, size)) {
		t.Fatalf("upload: %d %s", res.StatusCode, b)
	}
	if st, err := os.Stat(h.host("/huge.bin")); err != nil || st.Size() != size {
		t.Fatalf("uploaded file: %v %v", st, err)
	}
	t.Logf("upload done after %v", time.Since(start))
	res, err = hc.Get(h.ts.URL + "/v1/file/download?path=/huge.bin")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{res.Body}, make([]byte, 1<<20))
	res.Body.Close()
	if err != nil || n != size {
		t.Fatalf("download: %d bytes, %v", n, err)
	}
	t.Logf("download done after %v", time.Since(start))
	close(stop)
	<-done
	if grew := int64(peak) - int64(base); grew > allowed {
		t.Errorf("heap in use grew by %d MiB moving %d MiB, want < %d MiB", grew>>20, size>>20, allowed>>20)
	}
}

type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

func TestTreeRoutes(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/src/a.txt", "a")
	h.writeFile(t, "/src/sub/b.txt", "bb")
	h.mkdir(t, "/src/empty")
	h.symlink(t, "sub/b.txt", "/src/link")
	r := h.do(t, req{Method: "GET", Target: "/v2/fs/tree?path=/src"})
	wantStatus(t, r, 200)
	if ct := r.Header.Get("Content-Type"); ct != "application/x-tar" {
		t.Errorf("Content-Type %q", ct)
	}
	archive := r.Body
	type tres struct {
		Path    string `json:"path"`
		Entries int    `json:"entries"`
		Mode    string `json:"mode"`
	}
	put := func(target string, body []byte) resp {
		return h.do(t, req{Method: "PUT", Target: target, Body: bytes.NewReader(body), Header: map[string]string{"Content-Type": "application/x-tar"}})
	}
	got := wantAIO[tres](t, put("/v2/fs/tree?path=/copy&mode=rename", archive))
	if want := (tres{"/copy", 5, "rename"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	h.wantFile(t, "/copy/a.txt", "a")
	h.wantFile(t, "/copy/sub/b.txt", "bb")
	h.wantDir(t, "/copy/empty")
	if l, err := os.Readlink(h.host("/copy/link")); err != nil || l != "sub/b.txt" {
		t.Errorf("link: %q %v", l, err)
	}
	// Same files both sides.
	snap := func(dir string) map[string]string {
		out := map[string]string{}
		filepath.Walk(h.host(dir), func(p string, fi os.FileInfo, err error) error {
			rel, _ := filepath.Rel(h.host(dir), p)
			b, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("%v %q", fi.Mode(), b)
			return nil
		})
		return out
	}
	if a, b := snap("/src"), snap("/copy"); !reflect.DeepEqual(a, b) {
		t.Errorf("round trip differs:\n%v\n%v", a, b)
	}
	// rename onto an existing directory: 409; merge: fine.
	wantAIOError(t, put("/v2/fs/tree?path=/copy&mode=rename", archive), 409, "already_exists")
	got = wantAIO[tres](t, put("/v2/fs/tree?path=/copy", archive))
	if got.Mode != "merge" || got.Entries != 5 {
		t.Errorf("merge: %+v", got)
	}
	// A hostile archive is refused whole.
	before := h.tree(t)
	var evil bytes.Buffer
	tw := tar.NewWriter(&evil)
	tw.WriteHeader(&tar.Header{Name: "ok.txt", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("ok"))
	tw.WriteHeader(&tar.Header{Name: "../escape.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	wantAIOError(t, put("/v2/fs/tree?path=/evil", evil.Bytes()), 400, "invalid_path")
	h.wantTree(t, before)
	wantAIOError(t, h.do(t, req{Method: "PUT", Target: "/v2/fs/tree?path=/x", Body: strings.NewReader("{}"), Header: map[string]string{"Content-Type": "application/json"}}), 415, "unsupported_media_type")
	wantValidation(t, put("/v2/fs/tree?path=/x&mode=overwrite", archive), "query.mode", "enum")
	wantAIOError(t, h.do(t, req{Method: "GET", Target: "/v2/fs/tree?path=/nope"}), 404, "not_found")
	wantAIOError(t, h.do(t, req{Method: "GET", Target: "/v2/fs/tree?path=/src/a.txt"}), 400, "invalid_target")
	wantValidation(t, h.do(t, req{Method: "GET", Target: "/v2/fs/tree"}), "query.path", "missing")
}

func TestXattrRoutes(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/f", "x")
	type xr struct {
		Path   string            `json:"path"`
		Xattrs map[string]string `json:"xattrs"`
	}
	v := base64.StdEncoding.EncodeToString([]byte("val\x00ue"))
	r := h.do(t, jsonReq("PUT", "/v2/fs/xattr", `{"path":"/f","name":"user.k","value":"`+v+`"}`))
	if r.Status == 400 && strings.Contains(string(r.Body), "EOPNOTSUPP") {
		testenv.Skip(t, nil, "no user xattrs here")
	}
	got := wantAIO[xr](t, r)
	if want := (xr{"/f", map[string]string{"user.k": v}}); !reflect.DeepEqual(got, want) {
		t.Errorf("set: got %+v, want %+v", got, want)
	}
	if b, err := getxattr(h.host("/f"), "user.k"); err != nil || string(b) != "val\x00ue" {
		t.Errorf("on disk: %q %v", b, err)
	}
	got = wantAIO[xr](t, h.do(t, req{Method: "GET", Target: "/v2/fs/xattr?path=/f"}))
	if got.Xattrs["user.k"] != v {
		t.Errorf("get: %+v", got)
	}
	got = wantAIO[xr](t, h.do(t, req{Method: "GET", Target: "/v2/fs/xattr?path=/f&name=user.k"}))
	if len(got.Xattrs) != 1 {
		t.Errorf("get one: %+v", got)
	}
	f := wantAIOError(t, h.do(t, req{Method: "GET", Target: "/v2/fs/xattr?path=/f&name=user.none"}), 404, "not_found")
	wantErrno(t, f, unix.ENODATA, "OSError")
	got = wantAIO[xr](t, h.do(t, req{Method: "DELETE", Target: "/v2/fs/xattr?path=/f&name=user.k"}))
	if len(got.Xattrs) != 0 {
		t.Errorf("after delete: %+v", got)
	}
	wantAIOError(t, h.do(t, req{Method: "DELETE", Target: "/v2/fs/xattr?path=/f&name=user.k"}), 404, "not_found")
	wantAIOError(t, h.do(t, req{Method: "GET", Target: "/v2/fs/xattr?path=/none"}), 404, "not_found")
	wantAIOError(t, h.do(t, jsonReq("PUT", "/v2/fs/xattr", `{"path":"/f","name":"user.k","value":"!!"}`)), 400, "invalid_request")
	wantValidation(t, h.do(t, jsonReq("PUT", "/v2/fs/xattr", `{"path":"/f","name":"user.k"}`)), "body.value", "missing")
	wantValidation(t, h.do(t, req{Method: "DELETE", Target: "/v2/fs/xattr?path=/f"}), "query.name", "missing")
}

func getxattr(path, name string) ([]byte, error) {
	buf := make([]byte, 1024)
	n, err := unix.Getxattr(path, name, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// newHarnessAt is newHarness on a given root directory.
func newHarnessAt(t *testing.T, root string) *harness {
	t.Helper()
	sb, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatalf("core.Open: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	h := &harness{root: root, logs: &syncBuffer{}, served: make(chan struct{}, 64)}
	h.srv, err = New(Config{Sandboxes: map[string]*core.Sandbox{"default": sb}, Log: slog.New(slog.NewTextHandler(h.logs, nil))})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.ts = httptest.NewServer(h.srv.Handler())
	t.Cleanup(h.ts.Close)
	return h
}
