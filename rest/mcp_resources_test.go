package rest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/core"
)

// TestMCPResources: resources/list pages through every regular file of
// the sandbox, in walk order, with a cursor; resources/read answers a file
// by its file:/// URI with its ETag and modification time in _meta, a
// missing one as the protocol's "not found".
func TestMCPResources(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/a.txt", "alpha\n")
	h.writeFile(t, "/b/c.txt", "c")
	h.writeFile(t, "/b-d.txt", "d") // after b/c.txt in a walk, before it as a string
	h.writeFile(t, "/p.png", "\x89PNG")
	h.writeFile(t, "/bin.dat", "\xff\xfe")
	h.writeFile(t, "/sp ace.txt", "s")
	h.mkdir(t, "/empty")
	h.symlink(t, "a.txt", "/link")
	var want []string
	for i := range 150 {
		p := fmt.Sprintf("/many/f%03d", i)
		h.writeFile(t, p, "x")
		want = append(want, "file://"+p)
	}
	want = append([]string{"file:///a.txt", "file:///b/c.txt", "file:///b-d.txt", "file:///bin.dat"}, want...)
	want = append(want, "file:///p.png", "file:///sp%20ace.txt")
	cs := mustMCP(t, h.ts.URL+"/mcp", "resources-test", nil)
	sb := h.srv.sandboxOf(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var got []string
	cursor, pages := "", 0
	for {
		res, err := cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range res.Resources {
			got = append(got, r.URI)
			info, err := sb.Lstat(ctx, r.Name)
			if err != nil {
				t.Fatalf("%s: %v", r.Name, err)
			}
			if r.Meta["etag"] != core.ETag(info) || r.Annotations == nil || r.Annotations.LastModified != info.ModTime.UTC().Format(time.RFC3339Nano) || r.Size != info.Size {
				t.Errorf("%s: meta %v, annotations %+v, size %d; want etag %s, mtime %s", r.URI, r.Meta, r.Annotations, r.Size, core.ETag(info), info.ModTime)
			}
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || pages != 2 {
		t.Errorf("listed in %d pages:\n%s\nwant in 2:\n%s", pages, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: "!!"}); err == nil || !strings.Contains(err.Error(), "invalid cursor") {
		t.Errorf("a bad cursor: %v", err)
	}

	info, _ := sb.Lstat(ctx, "/a.txt")
	for _, c := range []struct {
		name, uri, mime, text string
		blob                  string
		etag                  string
		code                  int64 // the JSON-RPC error's, 0 for none
	}{
		{"text", "file:///a.txt", "text/plain", "alpha\n", "", core.ETag(info), 0},
		{"escaped", "file:///sp%20ace.txt", "text/plain", "s", "", "", 0},
		{"image", "file:///p.png", "image/png", "", "\x89PNG", "", 0},
		{"binary", "file:///bin.dat", "application/octet-stream", "", "\xff\xfe", "", 0},
		{"through a symlink", "file:///link", "text/plain", "alpha\n", "", "", 0},
		{"missing", "file:///nope.txt", "", "", "", "", sdk.CodeResourceNotFound},
		{"under a file", "file:///a.txt/x", "", "", "", "", sdk.CodeResourceNotFound},
		{"directory", "file:///b", "", "", "", "", -1},
		{"other scheme", "http://x/a.txt", "", "", "", "", -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: c.uri})
			if c.code != 0 {
				var je *jsonrpc.Error
				if err == nil || c.code > 0 && (!errors.As(err, &je) || je.Code != c.code) {
					t.Fatalf("err %v, want code %d", err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rc := res.Contents[0]
			if rc.MIMEType != c.mime || rc.Text != c.text || string(rc.Blob) != c.blob {
				t.Fatalf("%+v, want %s %q %q", rc, c.mime, c.text, c.blob)
			}
			if rc.Meta["etag"] == nil || rc.Meta["lastModified"] == nil || c.etag != "" && rc.Meta["etag"] != c.etag {
				t.Fatalf("meta %v, want etag %s", rc.Meta, c.etag)
			}
		})
	}
	if b, _ := os.ReadFile(h.host("/a.txt")); string(b) != "alpha\n" {
		t.Errorf("a.txt: %q", b)
	}
}
