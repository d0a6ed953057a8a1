package rest

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"sandfs/api"
	"sandfs/rest/httpkit"
	"sandfs/rest/httpkit/httpkittest"
	"sandfs/rest/named"
)

// Fuzz targets of the rest layer. Their seeds (f.Add and
// testdata/fuzz/) run in every `go test`; `make fuzz` explores. Requests go
// straight to the Server's handler (no socket) so that an exec is cheap.

func serveLocal(h http.Handler, req *http.Request) resp {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return resp{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// FuzzRange sends any Range header to the four routes that serve bytes
// with Range (sandbox-agent, AIO download, named read, sandboxd): the answer is 200
// with the whole file, 206 with exactly the bytes asked for, or 416 in the
// family's shape; never anything else, never a panic.
func FuzzRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=0-", "bytes=-1", "bytes=3-9", "bytes=0-1,4-5", "bytes=999-", "bytes=5-2",
		"bytes=abc", "bytes=-", "bytes=,", "bytes=0-1,0-1,0-1", "chars=0-1", "", "bytes= 1 - 2 ", "bytes=-0", "bytes=0-1,-0", "bytes=-00, 2-3", "bytes=- 0", "bytes=\t-+0", "bytes=-99999999999999999999"} {
		f.Add(s)
	}
	h := newHarness(f, harnessOpts{})
	content := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	if err := os.WriteFile(filepath.Join(h.root, "f"), content, 0o644); err != nil {
		f.Fatal(err)
	}
	routes := []struct{ family, target string }{
		{FamilyAgent, "/v1/fs/file?path=/f"},
		{FamilyAIOv2, "/v2/fs/download?path=/f"},
		{FamilyNamed, "/v1/sandboxes/default/fs/read?path=/f"},
		{FamilySandboxd, "/v1/files/f"},
	}
	handler := h.srv.Handler()
	f.Fuzz(func(t *testing.T, rng string) {
		for _, rt := range routes {
			req := localRequest("GET", rt.target, nil)
			req.Header["Range"] = []string{rng}
			r := serveLocal(handler, req)
			switch r.Status {
			case 200:
				if !bytes.Equal(r.Body, content) {
					t.Fatalf("%s Range %q: 200 with %q", rt.target, rng, r.Body)
				}
			case 206:
				checkPartial(t, rt.target, rng, r, content)
			case 416:
				if err := checkFamilyShape(rt.family, r); err != nil {
					t.Fatalf("%s Range %q: 416 not in the family's shape: %v: %s", rt.target, rng, err, r.Body)
				}
				// net/http names the size only when the range is well formed.
				if cr := r.Header.Get("Content-Range"); cr != "" && cr != fmt.Sprintf("bytes */%d", len(content)) {
					t.Errorf("%s Range %q: 416 with Content-Range %q", rt.target, rng, cr)
				}
			default:
				t.Fatalf("%s Range %q: status %d: %s", rt.target, rng, r.Status, r.Body)
			}
		}
	})
}

// checkPartial checks a 206: one range (Content-Range) or several
// (multipart/byteranges), each part exactly the bytes of the file it names.
func checkPartial(t *testing.T, target, rng string, r resp, content []byte) {
	t.Helper()
	part := func(cr string, body []byte) {
		var a, b, size int
		if _, err := fmt.Sscanf(cr, "bytes %d-%d/%d", &a, &b, &size); err != nil || size != len(content) || a < 0 || b < a || b >= size {
			t.Fatalf("%s Range %q: Content-Range %q", target, rng, cr)
		}
		if !bytes.Equal(body, content[a:b+1]) {
			t.Fatalf("%s Range %q: part %q is %q, want %q", target, rng, cr, body, content[a:b+1])
		}
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/byteranges" {
		part(r.Header.Get("Content-Range"), r.Body)
		return
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	n := 0
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s Range %q: multipart: %v", target, rng, err)
		}
		b, _ := io.ReadAll(p)
		part(p.Header.Get("Content-Range"), b)
		n++
	}
	if n < 2 {
		t.Fatalf("%s Range %q: multipart/byteranges with %d parts", target, rng, n)
	}
}

// decodeTargets are the request types of the JSON routes of the
// sandbox-agent and named families, which httpkit.DecodeJSON reads (the
// AIO family's are fuzzed in rest/aio).
var decodeTargets = []httpkittest.DecodeTarget{
	{Name: "api.FSMoveRequest", New: func() any { return new(api.FSMoveRequest) }},
	{Name: "namedDeleteRequest", New: func() any { return new(named.DeleteRequest) }},
	{Name: "namedMoveRequest", New: func() any { return new(named.MoveRequest) }},
	{Name: "namedChmodRequest", New: func() any { return new(named.ChmodRequest) }},
	{Name: "namedChownRequest", New: func() any { return new(named.ChownRequest) }},
}

// FuzzDecoders fuzzes httpkit.DecodeJSON with those types
// (httpkittest.FuzzDecode says what must hold).
func FuzzDecoders(f *testing.F) {
	httpkittest.FuzzDecode(f, func(w http.ResponseWriter, r *http.Request, limit int64, v any, _ bool) error {
		return httpkit.DecodeJSON(w, r, limit, v)
	}, decodeTargets)
}
