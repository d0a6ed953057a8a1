package mcp

import (
	"context"
	"encoding/base64"
	"io/fs"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/core"
)

// The sandbox's files as MCP resources: resources/list pages through the
// regular files under / in the order a walk meets them, and
// resources/read of file:///path answers one file, with its ETag (the
// REST routes', for expected_etag) and modification time in _meta.
//
// The SDK lists only resources registered up front, and a sandbox's files
// change with every call, so a middleware answers resources/list itself;
// reading goes through a template, file:///{+path}, the SDK's own path
// for it.

// resourcePage is the files one resources/list answers.
const resourcePage = 100

func (f *Family) addResources(s *sdk.Server) {
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "file", Title: "Sandbox file", URITemplate: "file:///{+path}",
		Description: "A file of the sandbox by its path (file:///src/main.go); its ETag and modification time are in _meta."},
		f.readResource)
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if lr, ok := req.(*sdk.ListResourcesRequest); ok && method == "resources/list" {
				return f.listResources(ctx, lr)
			}
			return next(ctx, method, req)
		}
	})
}

// parseFileURI parses uri as a file:///path resource URI (no host).
func parseFileURI(uri string) (*url.URL, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Host != "" || u.Path == "" {
		return nil, false
	}
	return u, true
}

// fileURI is the resource URI of API path p, percent-encoded as
// read_media_file's embedded resources are.
func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

// resourceMeta is the _meta of a file's resource: what a client needs to
// tell a version from another.
func resourceMeta(info core.Info) sdk.Meta {
	return sdk.Meta{"etag": core.ETag(info), "lastModified": info.ModTime.UTC().Format(time.RFC3339Nano)}
}

func (f *Family) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	u, ok := parseFileURI(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	sb, err := f.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	// A missing file is the protocol's own "not found" (-32002), which
	// the read's Node-worded error would not be.
	if _, err := sb.Stat(ctx, u.Path); errnoOf(err) == unix.ENOENT || errnoOf(err) == unix.ENOTDIR {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	b, info, err := f.readFile(ctx, u.Path)
	if err != nil {
		return nil, err
	}
	rc := &sdk.ResourceContents{URI: fileURI(info.Path), Meta: resourceMeta(info)}
	switch mime := mediaTypes[strings.ToLower(path.Ext(info.Path))]; {
	case mime == "" && utf8.Valid(b):
		rc.MIMEType, rc.Text = "text/plain", string(b)
	case mime == "":
		rc.MIMEType, rc.Blob = "application/octet-stream", b
	default:
		rc.MIMEType, rc.Blob = mime, b
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{rc}}, nil
}

// listResources is a page of the sandbox's regular files after the
// cursor (the last path of the previous page), at most resourcePage of
// them and at most maxTreeEntries entries walked: past either the answer
// has a next cursor.
func (f *Family) listResources(ctx context.Context, req *sdk.ListResourcesRequest) (*sdk.ListResourcesResult, error) {
	sb, err := f.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	var after []string // the cursor's path, in segments
	if req.Params != nil && req.Params.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(req.Params.Cursor)
		if err != nil || !utf8.Valid(b) || len(b) == 0 {
			return nil, errorf("invalid cursor %q", req.Params.Cursor)
		}
		after = strings.Split(string(b), "/")
	}
	res := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}}
	walked := 0
	last := ""
	err = sb.Walk(ctx, "/", core.WalkOptions{}, func(e core.WalkEntry) error {
		segs := strings.Split(e.Rel, "/")
		if after != nil && segsCmp(segs, after) <= 0 {
			if e.IsDir() && !isPrefix(segs, after) {
				return fs.SkipDir // all of it came before the cursor
			}
			return nil
		}
		if walked++; walked > maxTreeEntries || len(res.Resources) == resourcePage {
			res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(last))
			return fs.SkipAll
		}
		last = e.Rel
		if !e.IsRegular() {
			return nil
		}
		mime := mediaTypes[strings.ToLower(path.Ext(e.Name))]
		res.Resources = append(res.Resources, &sdk.Resource{URI: fileURI(e.Path), Name: e.Path, MIMEType: mime, Size: e.Size,
			Annotations: &sdk.Annotations{LastModified: e.ModTime.UTC().Format(time.RFC3339Nano)}, Meta: resourceMeta(e.Info)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// segsCmp orders two paths, as segments, as a walk meets them: each
// directory's names in byte order, a directory before what is in it.
func segsCmp(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// isPrefix reports whether dir's segments begin p's.
func isPrefix(dir, p []string) bool {
	return len(dir) <= len(p) && segsCmp(dir, p[:len(dir)]) == 0
}
