package rest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
	"sandfs/rest/aio"
	"sandfs/rest/httpkit"
	"sandfs/rest/named"
)

// sendWholeBodyFirst is a client the way Python's urllib is one: it writes
// the request line, the headers and the whole body, and only then reads
// the answer. A write that fails (the server closed and the kernel answered
// RST) is the failure this guards against.
func sendWholeBodyFirst(t *testing.T, addr, method, target string, hdr map[string]string, body io.Reader, size int64) (resp, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, addr)
	for k, v := range hdr {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	if size >= 0 {
		fmt.Fprintf(&head, "Content-Length: %d\r\n", size)
	} else {
		head.WriteString("Transfer-Encoding: chunked\r\n")
	}
	head.WriteString("\r\n")
	if _, err := io.WriteString(c, head.String()); err != nil {
		return resp{}, fmt.Errorf("writing the headers: %w", err)
	}
	var w io.Writer = c
	var cw io.WriteCloser
	if size < 0 {
		cw = newChunkedWriter(c)
		w = cw
	}
	if n, err := io.Copy(w, body); err != nil {
		return resp{}, fmt.Errorf("writing the body (after %d bytes): %w", n, err)
	}
	if cw != nil {
		if err := cw.Close(); err != nil {
			return resp{}, fmt.Errorf("ending the chunked body: %w", err)
		}
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return resp{}, fmt.Errorf("reading the answer: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, fmt.Errorf("reading the answer's body: %w", err)
	}
	return resp{Status: res.StatusCode, Header: res.Header, Body: b}, nil
}

// chunkedWriter writes HTTP/1.1 chunks of what it is given, in 64 KiB
// pieces, and the last chunk on Close.
type chunkedWriter struct{ w io.Writer }

func newChunkedWriter(w io.Writer) io.WriteCloser { return &chunkedWriter{w} }

func (c *chunkedWriter) Write(p []byte) (int, error) {
	if _, err := fmt.Fprintf(c.w, "%x\r\n", len(p)); err != nil {
		return 0, err
	}
	if _, err := c.w.Write(p); err != nil {
		return 0, err
	}
	_, err := io.WriteString(c.w, "\r\n")
	return len(p), err
}

func (c *chunkedWriter) Close() error {
	_, err := io.WriteString(c.w, "0\r\n\r\n")
	return err
}

// filler is n bytes of 'x', made as they are read.
func filler(n int64) io.Reader { return io.LimitReader(repeatReader('x'), n) }

type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// jsonFiller is a JSON object {"<key>":"/big","content":"xxx…"} with n
// x's, and its length.
func jsonFiller(key string, n int64) (io.Reader, int64) {
	head, tail := `{"`+key+`":"/big","content":"`, `"}`
	return io.MultiReader(strings.NewReader(head), filler(n), strings.NewReader(tail)), int64(len(head)+len(tail)) + n
}

func jsonLen(key string, n int64) int64 { _, l := jsonFiller(key, n); return l }

// bigTar is a tar of one file of n bytes.
func bigTar(t *testing.T, n int64) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "big", Mode: 0o644, Size: n, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	io.Copy(tw, filler(n))
	tw.Close()
	return buf.Bytes()
}

type drainCase struct {
	name, method, target, family string
	hdr                          map[string]string
	body                         func() io.Reader
	size                         int64 // -1: chunked
	status                       int
}

// TestRefusalReachesClientSendingWholeBody: a body over a limit is refused
// with 413 in the family's shape, and a client that writes the whole body
// before it reads gets that answer, not a connection reset: for JSON
// routes (Content-Length over the limit, and a chunked body crossing it),
// the named write (16 MiB), and the tar uploads.
func TestRefusalReachesClientSendingWholeBody(t *testing.T) {
	const limit = 1 << 20
	h := newHarness(t, harnessOpts{Limits: Limits{MaxJSONBody: limit, MaxTarBody: limit}})
	addr := h.ts.Listener.Addr().String()
	js := map[string]string{"Content-Type": "application/json"}
	oct := map[string]string{"Content-Type": "application/octet-stream"}
	xtar := map[string]string{"Content-Type": "application/x-tar"}
	const over = 20 << 20 // more than loopback socket buffers absorb
	tarBody := bigTar(t, over)
	cases := []drainCase{
		{"v2 write", "POST", "/v2/fs/write", FamilyAIOv2, js, func() io.Reader { r, _ := jsonFiller("path", over); return r }, jsonLen("path", over), 413},
		{"v1 write", "POST", "/v1/file/write", FamilyAIOv1, js, func() io.Reader { r, _ := jsonFiller("file", over); return r }, jsonLen("file", over), 413},
		{"v2 write chunked", "POST", "/v2/fs/write", FamilyAIOv2, js, func() io.Reader { r, _ := jsonFiller("path", over); return r }, -1, 413},
		{"v1 file read", "POST", "/v1/file/read", FamilyAIOv1, js, func() io.Reader { r, _ := jsonFiller("file", over); return r }, jsonLen("file", over), 413},
		{"named rename", "POST", "/v1/sandboxes/default/fs/rename", FamilyNamed, js, func() io.Reader { r, _ := jsonFiller("source", over); return r }, jsonLen("source", over), 413},
		{"named write 20 MiB", "PUT", "/v1/sandboxes/default/fs/write?path=/big", FamilyNamed, oct, func() io.Reader { return filler(20 << 20) }, 20 << 20, 413},
		{"named write 20 MiB chunked", "PUT", "/v1/sandboxes/default/fs/write?path=/big", FamilyNamed, oct, func() io.Reader { return filler(20 << 20) }, -1, 413},
		{"upload-batch", "POST", "/v1/fs/upload-batch?path=/up", FamilyAgent, xtar, func() io.Reader { return bytes.NewReader(tarBody) }, int64(len(tarBody)), 413},
		{"upload-batch chunked", "POST", "/v1/fs/upload-batch?path=/up", FamilyAgent, xtar, func() io.Reader { return bytes.NewReader(tarBody) }, -1, 413},
		{"tree put", "PUT", "/v2/fs/tree?path=/up", FamilyAIOv2, xtar, func() io.Reader { return bytes.NewReader(tarBody) }, int64(len(tarBody)), 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := sendWholeBodyFirst(t, addr, c.method, c.target, c.hdr, c.body(), c.size)
			if err != nil {
				t.Fatalf("client sending the whole body first: %v", err)
			}
			checkRefusal(t, c, got)
		})
	}
	if _, err := os.Lstat(h.host("/big")); err == nil {
		t.Errorf("/big was written")
	}
}

// checkRefusal wants c.status in c.family's shape, with the kind a 413 or
// a 507 has.
func checkRefusal(t *testing.T, c drainCase, got resp) {
	t.Helper()
	if got.Status != c.status {
		t.Fatalf("status %d, want %d: %.300s", got.Status, c.status, got.Body)
	}
	if err := checkFamilyShape(c.family, got); err != nil {
		t.Fatalf("shape: %v: %.300s", err, got.Body)
	}
	wantKind, wantCode := httpkit.KindTooLarge, "EFBIG"
	if c.status == http.StatusInsufficientStorage {
		wantKind, wantCode = httpkit.KindNoSpace, "ENOSPC"
	}
	switch c.family {
	case FamilyAIOv1, FamilyAIOv2:
		var env struct {
			Data aio.Failure `json:"data"`
		}
		json.Unmarshal(got.Body, &env)
		if env.Data.ErrorType != string(wantKind) {
			t.Errorf("error_type %q, want %s: %s", env.Data.ErrorType, wantKind, got.Body)
		}
	case FamilyNamed:
		var e named.ErrorBody
		json.Unmarshal(got.Body, &e)
		if e.Code != wantCode {
			t.Errorf("code %q, want %s: %s", e.Code, wantCode, got.Body)
		}
	}
}

// TestRefusalReachesPythonUrllib sends the over-limit bodies with Python's
// urllib itself, the client the issue saw reset.
func TestRefusalReachesPythonUrllib(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Skip(t, nil, "no python3")
	}
	const limit = 1 << 20
	h := newHarness(t, harnessOpts{Limits: Limits{MaxJSONBody: limit, MaxTarBody: limit}})
	// The script sends body_len bytes (JSON-ish, or a raw body) and prints
	// "<status> <body>" of the answer, HTTPError included.
	const script = `
import sys, urllib.request, urllib.error
url, method, ctype, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
data = (b'{"path":"/big","content":"' + b'x' * n + b'"}') if ctype == 'application/json' else b'x' * n
req = urllib.request.Request(url, data=data, method=method, headers={'Content-Type': ctype})
try:
    r = urllib.request.urlopen(req, timeout=60)
    print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
`
	cases := []drainCase{
		{name: "v2 write", method: "POST", target: "/v2/fs/write", family: FamilyAIOv2, hdr: map[string]string{"Content-Type": "application/json"}, size: 20 << 20, status: 413},
		{name: "v1 write", method: "POST", target: "/v1/file/write", family: FamilyAIOv1, hdr: map[string]string{"Content-Type": "application/json"}, size: 20 << 20, status: 413},
		{name: "named write 20 MiB", method: "PUT", target: "/v1/sandboxes/default/fs/write?path=/big", family: FamilyNamed, hdr: map[string]string{"Content-Type": "application/octet-stream"}, size: 20 << 20, status: 413},
		{name: "upload-batch", method: "POST", target: "/v1/fs/upload-batch?path=/up", family: FamilyAgent, hdr: map[string]string{"Content-Type": "application/x-tar"}, size: 20 << 20, status: 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runUrllib(t, py, script, h.ts.URL+c.target, c)
			checkRefusal(t, c, got)
		})
	}
}

func runUrllib(t *testing.T, py, script, url string, c drainCase) resp {
	t.Helper()
	out, err := exec.Command(py, "-c", script, url, c.method, c.hdr["Content-Type"], fmt.Sprint(c.size)).CombinedOutput()
	if err != nil {
		t.Fatalf("urllib: %v\n%s", err, out)
	}
	status, body, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	var st int
	fmt.Sscan(status, &st)
	ct := "application/json"
	if c.family == FamilyAgent {
		ct = "application/problem+json"
	}
	return resp{Status: st, Header: http.Header{"Content-Type": {ct}}, Body: []byte(body)}
}

// TestNoSpaceReachesClientSendingWholeBody fills a 1 MiB tmpfs: the 507 of
// a streamed write reaches a client that sends its whole (20 MiB) body
// first, raw and through urllib.
func TestNoSpaceReachesClientSendingWholeBody(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "mounting a tmpfs needs root")
	}
	root := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=1m"); err != nil {
		testenv.Skip(t, nil, "mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(root, unix.MNT_DETACH) })
	h := newHarness(t, harnessOpts{Root: root})
	addr := h.ts.Listener.Addr().String()
	oct := map[string]string{"Content-Type": "application/octet-stream"}
	const size = 20 << 20
	cases := []drainCase{
		{"agent put", "PUT", "/v1/fs/file?path=/big", FamilyAgent, oct, func() io.Reader { return filler(size) }, size, 507},
		{"agent put chunked", "PUT", "/v1/fs/file?path=/big", FamilyAgent, oct, func() io.Reader { return filler(size) }, -1, 507},
		{"named write", "PUT", "/v1/sandboxes/default/fs/write?path=/big", FamilyNamed, oct, func() io.Reader { return filler(12 << 20) }, 12 << 20, 507}, // under its 16 MiB limit
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := sendWholeBodyFirst(t, addr, c.method, c.target, c.hdr, c.body(), c.size)
			if err != nil {
				t.Fatalf("client sending the whole body first: %v", err)
			}
			checkRefusal(t, c, got)
		})
	}
	if py, err := exec.LookPath("python3"); err == nil {
		const script = `
import sys, urllib.request, urllib.error
url, method, ctype, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
req = urllib.request.Request(url, data=b'x' * n, method=method, headers={'Content-Type': ctype})
try:
    r = urllib.request.urlopen(req, timeout=60)
    print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
`
		for _, c := range cases[:1] {
			t.Run("urllib "+c.name, func(t *testing.T) {
				checkRefusal(t, c, runUrllib(t, py, script, h.ts.URL+c.target, drainCase{method: c.method, hdr: c.hdr, size: size, family: c.family}))
			})
		}
	}
	// The disk is not left full of a half-written temp file.
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("left in the root: %v", entries)
	}
}

// TestDrainIsBounded: the drain answers first and cannot hold the daemon.
// A client that stalls half-way gets its answer at once and is cut after
// drainMaxTime; a body announcing more than drainMaxBytes is not drained;
// a client waiting on "Expect: 100-continue" is answered and not waited for.
func TestDrainIsBounded(t *testing.T) {
	oldTime := drainMaxTime
	drainMaxTime = 300 * time.Millisecond
	t.Cleanup(func() { drainMaxTime = oldTime })
	h := newHarness(t, harnessOpts{})
	addr := h.ts.Listener.Addr().String()
	cases := []struct {
		name      string
		announce  int64 // Content-Length
		send      int64 // body bytes sent before waiting
		expect    bool
		maxClosed time.Duration // the connection is closed within this after the answer
	}{
		{"stalls half-way", 20 << 20, 2 << 20, false, drainMaxTime + 2*time.Second},
		{"announces more than the drain takes", 4 << 30, 2 << 20, false, 2 * time.Second},
		{"expect 100-continue", 20 << 20, 0, true, 2 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(15 * time.Second))
			head := fmt.Sprintf("PUT /v1/sandboxes/default/fs/write?path=/big HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", addr, c.announce)
			if c.expect {
				head += "Expect: 100-continue\r\n"
			}
			if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(conn, filler(c.send)); err != nil {
				t.Fatalf("sending %d bytes: %v", c.send, err)
			}
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer while the body is pending: %v", err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(b, []byte("EFBIG")) {
				t.Fatalf("answer %d %s, want 413 EFBIG", res.StatusCode, b)
			}
			at := time.Now()
			io.Copy(io.Discard, br) // until the daemon closes
			if d := time.Since(at); d > c.maxClosed {
				t.Errorf("connection closed %v after the answer, want within %v", d, c.maxClosed)
			}
		})
	}
}
