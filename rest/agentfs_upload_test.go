package rest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"sandfs/api"
)

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name, body, link string
	typ              byte
}

func buildTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link, ModTime: time.Now()}
		switch e.typ {
		case tar.TypeDir:
			hdr.Mode, hdr.Size = 0o755, 0
		case tar.TypeSymlink, tar.TypeLink:
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			io.WriteString(tw, e.body)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestUploadBatch(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/dest/keep", "kept")
	h.writeFile(t, "/dest/top.txt", "old top")
	archive := buildTar(t, []tarEntry{
		{name: "d/", typ: tar.TypeDir},
		{name: "d/x.txt", body: "ex", typ: tar.TypeReg},
		{name: "top.txt", body: "top", typ: tar.TypeReg},
	})
	t.Run("files and dirs, merged", func(t *testing.T) {
		r := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/dest&sessionId=s", Body: bytes.NewReader(archive),
			Header: map[string]string{"Content-Type": "application/x-tar"}})
		wantStatus(t, r, 200)
		got := decode[api.FSUploadBatch](t, r)
		want := []string{"/dest/d", "/dest/d/x.txt", "/dest/top.txt"}
		if strings.Join(got.Paths, ",") != strings.Join(want, ",") || got.Truncated {
			t.Errorf("got %v truncated=%v, want %v truncated=false", got.Paths, got.Truncated, want)
		}
		h.wantDir(t, "/dest/d")
		h.wantFile(t, "/dest/d/x.txt", "ex")
		h.wantFile(t, "/dest/top.txt", "top")
		h.wantFile(t, "/dest/keep", "kept")
	})
	t.Run("default path, new dir, content-type with params", func(t *testing.T) {
		r := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch", Body: bytes.NewReader(archive),
			Header: map[string]string{"Content-Type": "application/x-tar; charset=binary"}})
		wantStatus(t, r, 200)
		got := decode[api.FSUploadBatch](t, r)
		if want := "/d,/d/x.txt,/top.txt"; strings.Join(got.Paths, ",") != want {
			t.Errorf("paths: got %v, want %s", got.Paths, want)
		}
		h.wantFile(t, "/d/x.txt", "ex")
	})
	t.Run("empty archive", func(t *testing.T) {
		r := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/empty-up", Body: bytes.NewReader(buildTar(t, nil)),
			Header: map[string]string{"Content-Type": "application/x-tar"}})
		wantStatus(t, r, 200)
		got := decode[api.FSUploadBatch](t, r)
		if got.Paths == nil || len(got.Paths) != 0 || got.Truncated {
			t.Errorf("got %#v, want {[] false}", got)
		}
		if !bytes.Contains(r.Body, []byte(`"paths":[]`)) {
			t.Errorf("body %s: want paths as [] not null", r.Body)
		}
	})
	t.Run("truncated at 1024", func(t *testing.T) {
		var many []tarEntry
		for i := range 1030 {
			many = append(many, tarEntry{name: fmt.Sprintf("f%04d", i), body: fmt.Sprint(i), typ: tar.TypeReg})
		}
		r := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/many", Body: bytes.NewReader(buildTar(t, many)),
			Header: map[string]string{"Content-Type": "application/x-tar"}})
		wantStatus(t, r, 200)
		got := decode[api.FSUploadBatch](t, r)
		if len(got.Paths) != 1024 || !got.Truncated {
			t.Fatalf("got %d paths truncated=%v, want 1024 truncated=true", len(got.Paths), got.Truncated)
		}
		if got.Paths[0] != "/many/f0000" || got.Paths[1023] != "/many/f1023" {
			t.Errorf("paths: got first %q last %q, want /many/f0000 … /many/f1023", got.Paths[0], got.Paths[1023])
		}
		ents, _ := os.ReadDir(h.host("/many"))
		if len(ents) != 1030 {
			t.Errorf("disk: got %d files, want 1030", len(ents))
		}
		h.wantFile(t, "/many/f1029", "1029")
	})

	fails := []struct {
		name   string
		ctype  string
		body   []byte
		status int
		typ    string
	}{
		{"no content type", "", archive, 415, "unsupported_media_type"},
		{"wrong content type", "application/json", archive, 415, "unsupported_media_type"},
		{"gzip", "application/gzip", archive, 415, "unsupported_media_type"},
		{"dotdot entry", "application/x-tar", buildTar(t, []tarEntry{{name: "ok", body: "ok", typ: tar.TypeReg}, {name: "../evil", body: "x", typ: tar.TypeReg}}), 400, "invalid_request"},
		{"absolute entry", "application/x-tar", buildTar(t, []tarEntry{{name: "/abs", body: "x", typ: tar.TypeReg}}), 400, "invalid_request"},
		{"escaping symlink", "application/x-tar", buildTar(t, []tarEntry{{name: "l", link: "../../etc", typ: tar.TypeSymlink}}), 400, "invalid_request"},
		{"device", "application/x-tar", buildTar(t, []tarEntry{{name: "dev", typ: tar.TypeChar}}), 400, "invalid_request"},
		{"garbage", "application/x-tar", bytes.Repeat([]byte("garbage!"), 128), 400, "invalid_request"},
		{"truncated archive", "application/x-tar", archive[:700], 400, "invalid_request"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			before := h.tree(t)
			hdr := map[string]string{}
			if c.ctype != "" {
				hdr["Content-Type"] = c.ctype
			}
			p := wantProblem(t, h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/bad", Body: bytes.NewReader(c.body), Header: hdr}), c.status, c.typ)
			h.wantTree(t, before)
			t.Logf("detail: %s", p.Detail)
		})
	}
}

func TestUploadBatchTooLarge(t *testing.T) {
	h := newHarness(t, harnessOpts{Limits: Limits{MaxTarBody: 4096}})
	var entries []tarEntry
	for i := range 10 {
		entries = append(entries, tarEntry{name: fmt.Sprintf("f%d", i), body: strings.Repeat("z", 1000), typ: tar.TypeReg})
	}
	archive := buildTar(t, entries)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			var body io.Reader = bytes.NewReader(archive)
			if chunked {
				body = io.NopCloser(body)
			}
			before := h.tree(t)
			r := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/up", Body: body,
				Header: map[string]string{"Content-Type": "application/x-tar"}})
			wantProblem(t, r, 413, "invalid_request")
			h.wantTree(t, before)
		})
	}
}
