package rest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

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
	// A field after a file that streamed to the query's path is refused
	// (any order is taken when the path comes from the form:
	// TestUploadFileFirst).
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, _ := mw.CreateFormFile("file", "late.txt")
		fw.Write([]byte("x"))
		mw.WriteField("path", "/elsewhere")
		pw.CloseWithError(mw.Close())
	}()
	wantValidation(t, h.do(t, req{Method: "POST", Target: "/v2/fs/upload?path=/q.txt", Body: pr, Header: map[string]string{"Content-Type": mw.FormDataContentType()}}), "body.path", "value_error")
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
