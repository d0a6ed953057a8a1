package rest

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"sandfs/rest/aio"
)

// A 3 KiB GNU sparse archive (made by GNU tar -S, core/testdata) declaring a
// 1 TiB file is refused at once by both tar routes, 413 in each family's
// shape, with nothing written: no file, no staging directory.
func TestTarSparseDeclaredSize(t *testing.T) {
	archive, err := os.ReadFile("../core/tar/testdata/sparse-1t.tar")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/dest/keep", "kept")
	hdr := map[string]string{"Content-Type": "application/x-tar"}
	for _, tc := range []struct {
		name   string
		r      req
		detail func(*testing.T, resp) string
	}{
		{"PUT /v2/fs/tree", req{Method: "PUT", Target: "/v2/fs/tree?path=/dest", Header: hdr},
			aioDetail},
		{"PUT /v2/fs/tree new", req{Method: "PUT", Target: "/v2/fs/tree?path=/new/dir&mode=rename", Header: hdr},
			aioDetail},
		{"POST /v1/fs/upload-batch", req{Method: "POST", Target: "/v1/fs/upload-batch?path=/dest", Header: hdr},
			func(t *testing.T, r resp) string { return wantProblem(t, r, 413, "invalid_request").Detail }},
		{"POST /v1/fs/upload-batch new", req{Method: "POST", Target: "/v1/fs/upload-batch?path=/new/dir", Header: hdr},
			func(t *testing.T, r resp) string { return wantProblem(t, r, 413, "invalid_request").Detail }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.tree(t)
			tc.r.Body = bytes.NewReader(archive)
			start := time.Now()
			r := h.do(t, tc.r)
			took := time.Since(start)
			if d := tc.detail(t, r); !strings.Contains(d, "declares 1099511627776 bytes") {
				t.Errorf("detail %q: want it to say the entry declares 1099511627776 bytes", d)
			}
			if took > 500*time.Millisecond {
				t.Errorf("answer took %v, want well under a second", took)
			}
			h.wantTree(t, before)
		})
	}
}

// aioDetail checks a 413 AIO failure and returns its envelope's message,
// where the AIO family says why (data.message is the errno's text).
func aioDetail(t *testing.T, r resp) string {
	t.Helper()
	wantAIOError(t, r, 413, "file_too_large")
	if m := decode[aioEnv[aio.Failure]](t, r).Message; m != nil {
		return *m
	}
	return ""
}
