package mcp

import (
	"context"
	"encoding/base64"
	"io"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/core"
)

// The 14 tools of the reference filesystem server, with its names,
// argument names and answer texts. Paths are sandbox paths ("/src/a.go";
// a relative one is taken from the sandbox's working directory).

// maxReadBytes bounds what one read answers: a tool answer is one JSON
// message held whole in memory on both sides.
const maxReadBytes = 16 << 20

// maxTreeEntries bounds the entries directory_tree and search_files visit.
const maxTreeEntries = 100_000

type textOut struct {
	Content string `json:"content"`
}

type readTextIn struct {
	Path string `json:"path"`
	Tail *int   `json:"tail,omitempty" jsonschema:"If provided, returns only the last N lines of the file"`
	Head *int   `json:"head,omitempty" jsonschema:"If provided, returns only the first N lines of the file"`
	// sandfs: a byte range, for a file too large to read whole; head and
	// tail count lines from an end, so neither goes with it.
	Offset *int64 `json:"offset,omitempty" jsonschema:"sandfs: read from this byte offset (not with head or tail)"`
	Length *int64 `json:"length,omitempty" jsonschema:"sandfs: read at most this many bytes, 1 to 16 MiB (default: the rest of the file, up to 16 MiB)"`
}

// readTextOut is read_text_file's answer: the reference's content, and for
// a byte range where the next one starts and the file's size.
type readTextOut struct {
	Content string `json:"content"`
	Next    *int64 `json:"next,omitempty"`
	Size    *int64 `json:"size,omitempty"`
}

type pathIn struct {
	Path string `json:"path"`
}

type readMultipleIn struct {
	Paths []string `json:"paths" jsonschema:"Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories."`
}

type writeIn struct {
	Path         string `json:"path"`
	Content      string `json:"content"`
	ExpectedETag string `json:"expected_etag,omitempty" jsonschema:"sandfs: write only if the file's ETag is still this one (\"*\": it exists)"`
}

type edit struct {
	OldText string `json:"oldText" jsonschema:"Text to search for - must match exactly"`
	NewText string `json:"newText" jsonschema:"Text to replace with"`
}

type editIn struct {
	Path         string `json:"path"`
	Edits        []edit `json:"edits"`
	DryRun       bool   `json:"dryRun,omitempty" jsonschema:"Preview changes using git-style diff format"`
	ExpectedETag string `json:"expected_etag,omitempty" jsonschema:"sandfs: edit only if the file's ETag is still this one"`
}

type writeOut struct {
	Content string `json:"content"`
	ETag    string `json:"etag,omitempty"`
}

type sizesIn struct {
	Path   string `json:"path"`
	SortBy string `json:"sortBy,omitempty" jsonschema:"Sort entries by name or size"`
}

type treeIn struct {
	Path            string   `json:"path"`
	ExcludePatterns []string `json:"excludePatterns,omitempty"`
}

type moveIn struct {
	Source       string `json:"source"`
	Destination  string `json:"destination"`
	ExpectedETag string `json:"expected_etag,omitempty" jsonschema:"sandfs: move only if the source's ETag is still this one"`
}

type searchIn struct {
	Path            string   `json:"path"`
	Pattern         string   `json:"pattern"`
	ExcludePatterns []string `json:"excludePatterns,omitempty"`
}

func ro(title string) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: true, OpenWorldHint: ptr(false)}
}

func rw(title string, idempotent, destructive bool) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, IdempotentHint: idempotent, DestructiveHint: ptr(destructive), OpenWorldHint: ptr(false)}
}

func ptr[T any](v T) *T { return &v }

// text is a tool answer of one text, as structured content too.
func text(s string) (*sdk.CallToolResult, textOut, error) {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}, textOut{Content: s}, nil
}

func (f *Family) addRefTools(s *sdk.Server) {
	readText := func(ctx context.Context, req *sdk.CallToolRequest, in readTextIn) (*sdk.CallToolResult, readTextOut, error) {
		head, tail := deref(in.Head), deref(in.Tail)
		if head != 0 && tail != 0 {
			return nil, readTextOut{}, errorf("Cannot specify both head and tail parameters simultaneously")
		}
		if in.Offset != nil || in.Length != nil {
			if in.Head != nil || in.Tail != nil {
				return nil, readTextOut{}, errorf("Cannot specify head or tail together with offset or length")
			}
			return f.readTextRange(ctx, in)
		}
		var s string
		var err error
		switch {
		case tail > 0:
			s, err = f.readTail(ctx, in.Path, tail)
		case head > 0:
			s, err = f.readHead(ctx, in.Path, head)
		default:
			var b []byte
			b, _, err = f.readFile(ctx, in.Path)
			s = toText(b)
		}
		if err != nil {
			return nil, readTextOut{}, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}, readTextOut{Content: s}, nil
	}
	addTool(f, s, &sdk.Tool{Name: "read_file", Annotations: ro("Read File (Deprecated)"),
		Description: "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead."}, readText)
	addTool(f, s, &sdk.Tool{Name: "read_text_file", Annotations: ro("Read Text File"),
		Description: "Read the complete contents of a file from the file system as text. Use the 'head' parameter to read only " +
			"the first N lines of a file, or the 'tail' parameter to read only the last N lines of a file. Operates on the file " +
			"as text regardless of extension. Paths are sandbox paths (\"/\" is the sandbox's root). sandfs: 'offset' and " +
			"'length' read a byte range of a file of any size; the structured answer's 'next' is the offset after it, 'size' the file's."}, readText)

	addTool(f, s, &sdk.Tool{Name: "read_media_file", Annotations: ro("Read Media File"),
		Description: "Read a file and return it as a base64-encoded content block with its MIME type. Image and audio files are " +
			"returned as image/audio content; any other file type is returned as an embedded resource."},
		func(ctx context.Context, req *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, any, error) {
			b, _, err := f.readFile(ctx, in.Path)
			if err != nil {
				return nil, nil, err
			}
			ap, _ := f.clean(ctx, in.Path)
			mime := mediaTypes[strings.ToLower(path.Ext(ap))]
			if mime == "" {
				mime = "application/octet-stream"
			}
			data := base64.StdEncoding.EncodeToString(b)
			var c sdk.Content
			var wire map[string]any
			switch {
			case strings.HasPrefix(mime, "image/"):
				c = &sdk.ImageContent{Data: b, MIMEType: mime}
				wire = map[string]any{"type": "image", "data": data, "mimeType": mime}
			case strings.HasPrefix(mime, "audio/"):
				c = &sdk.AudioContent{Data: b, MIMEType: mime}
				wire = map[string]any{"type": "audio", "data": data, "mimeType": mime}
			default:
				uri := (&url.URL{Scheme: "file", Path: ap}).String() // percent-encoded, as Node's pathToFileURL
				c = &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: uri, MIMEType: mime, Blob: b}}
				wire = map[string]any{"type": "resource", "resource": map[string]any{"uri": uri, "mimeType": mime, "blob": data}}
			}
			return &sdk.CallToolResult{Content: []sdk.Content{c}, StructuredContent: map[string]any{"content": []any{wire}}}, nil, nil
		})

	addTool(f, s, &sdk.Tool{Name: "read_multiple_files", Annotations: ro("Read Multiple Files"),
		Description: "Read the contents of multiple files simultaneously. Each file's content is returned with its path as a " +
			"reference. Failed reads for individual files won't stop the entire operation."},
		func(ctx context.Context, req *sdk.CallToolRequest, in readMultipleIn) (*sdk.CallToolResult, textOut, error) {
			if len(in.Paths) == 0 {
				return nil, textOut{}, errorf("At least one file path must be provided")
			}
			parts := make([]string, len(in.Paths))
			for i, p := range in.Paths {
				b, _, err := f.readFile(ctx, p)
				if err != nil {
					parts[i] = p + ": Error - " + err.Error()
					continue
				}
				parts[i] = p + ":\n" + toText(b) + "\n"
			}
			return text(strings.Join(parts, "\n---\n"))
		})

	addTool(f, s, &sdk.Tool{Name: "write_file", Annotations: rw("Write File", true, true),
		Description: "Create a new file or completely overwrite an existing file with new content. Use with caution as it will " +
			"overwrite existing files without warning. sandfs: give expected_etag to write only over the version you read; " +
			"the answer's structured content carries the new ETag."},
		func(ctx context.Context, req *sdk.CallToolRequest, in writeIn) (*sdk.CallToolResult, writeOut, error) {
			ctx = actorCtx(ctx, req)
			etag, err := f.write(ctx, in.Path, in.Content, in.ExpectedETag)
			if err != nil {
				return nil, writeOut{}, err
			}
			msg := "Successfully wrote to " + in.Path
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}}, writeOut{Content: msg, ETag: etag}, nil
		})

	addTool(f, s, &sdk.Tool{Name: "edit_file", Annotations: rw("Edit File", false, true),
		Description: "Make line-based edits to a text file. Each edit replaces exact line sequences with new content. Returns a " +
			"git-style diff showing the changes made. sandfs: expected_etag as for write_file."},
		func(ctx context.Context, req *sdk.CallToolRequest, in editIn) (*sdk.CallToolResult, writeOut, error) {
			ctx = actorCtx(ctx, req)
			out, etag, err := f.editFile(ctx, in)
			if err != nil {
				return nil, writeOut{}, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out}}}, writeOut{Content: out, ETag: etag}, nil
		})

	addTool(f, s, &sdk.Tool{Name: "create_directory", Annotations: rw("Create Directory", true, false),
		Description: "Create a new directory or ensure a directory exists. Can create multiple nested directories in one " +
			"operation. If the directory already exists, this operation will succeed silently."},
		func(ctx context.Context, req *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, textOut, error) {
			sb, err := f.sandbox(ctx)
			if err != nil {
				return nil, textOut{}, err
			}
			if err := sb.Mkdir(actorCtx(ctx, req), in.Path, true, 0o755); err != nil {
				return nil, textOut{}, toolErr(err, "mkdir")
			}
			return text("Successfully created directory " + in.Path)
		})

	addTool(f, s, &sdk.Tool{Name: "list_directory", Annotations: ro("List Directory"),
		Description: "Get a detailed listing of all files and directories in a specified path. Results clearly distinguish " +
			"between files and directories with [FILE] and [DIR] prefixes."},
		func(ctx context.Context, req *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, textOut, error) {
			entries, err := f.list(ctx, in.Path)
			if err != nil {
				return nil, textOut{}, err
			}
			lines := make([]string, len(entries))
			for i, e := range entries {
				lines[i] = kind(e) + " " + e.Name
			}
			return text(strings.Join(lines, "\n"))
		})

	addTool(f, s, &sdk.Tool{Name: "list_directory_with_sizes", Annotations: ro("List Directory with Sizes"),
		Description: "Get a detailed listing of all files and directories in a specified path, including sizes. Results clearly " +
			"distinguish between files and directories with [FILE] and [DIR] prefixes."},
		func(ctx context.Context, req *sdk.CallToolRequest, in sizesIn) (*sdk.CallToolResult, textOut, error) {
			s, err := f.listWithSizes(ctx, in)
			if err != nil {
				return nil, textOut{}, err
			}
			return text(s)
		})

	addTool(f, s, &sdk.Tool{Name: "directory_tree", Annotations: ro("Directory Tree"),
		Description: "Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name', " +
			"'type' (file/directory), and 'children' for directories. Files have no children array, while directories always " +
			"have a children array (which may be empty). The output is formatted with 2-space indentation for readability."},
		func(ctx context.Context, req *sdk.CallToolRequest, in treeIn) (*sdk.CallToolResult, textOut, error) {
			s, err := f.tree(ctx, in)
			if err != nil {
				return nil, textOut{}, err
			}
			return text(s)
		})

	addTool(f, s, &sdk.Tool{Name: "move_file", Annotations: rw("Move File", false, true),
		Description: "Move or rename files and directories. Can move files between directories and rename them in a single " +
			"operation. If the destination exists, the operation will fail. sandfs: expected_etag as for write_file, of the source."},
		func(ctx context.Context, req *sdk.CallToolRequest, in moveIn) (*sdk.CallToolResult, textOut, error) {
			sb, err := f.sandbox(ctx)
			if err != nil {
				return nil, textOut{}, err
			}
			var o core.MoveOptions
			if in.ExpectedETag != "" {
				o.Pre.IfMatch = []string{in.ExpectedETag}
			}
			if err := sb.Move(actorCtx(ctx, req), in.Source, in.Destination, o); err != nil {
				if core.ErrnoOf(err) == errEEXIST {
					dst, _ := sb.Clean(in.Destination)
					return nil, textOut{}, errorf("Destination already exists: %s", dst)
				}
				src, _ := sb.Clean(in.Source)
				dst, _ := sb.Clean(in.Destination)
				return nil, textOut{}, renameErr(err, src, dst)
			}
			return text("Successfully moved " + in.Source + " to " + in.Destination)
		})

	addTool(f, s, &sdk.Tool{Name: "search_files", Annotations: ro("Search Files"),
		Description: "Recursively search for files and directories matching a pattern. The patterns should be glob-style " +
			"patterns that match paths relative to the working directory. Use pattern like '*.ext' to match files in current " +
			"directory, and '**/*.ext' to match files in all subdirectories. Returns full paths to all matching items."},
		func(ctx context.Context, req *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, textOut, error) {
			found, err := f.search(ctx, in)
			if err != nil {
				return nil, textOut{}, err
			}
			if len(found) == 0 {
				return text("No matches found")
			}
			return text(strings.Join(found, "\n"))
		})

	addTool(f, s, &sdk.Tool{Name: "get_file_info", Annotations: ro("Get File Info"),
		Description: "Retrieve detailed metadata about a file or directory. Returns comprehensive information including size, " +
			"creation time, last modified time, permissions, and type."},
		func(ctx context.Context, req *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, textOut, error) {
			s, err := f.fileInfo(ctx, in.Path)
			if err != nil {
				return nil, textOut{}, err
			}
			return text(s)
		})

	addTool(f, s, &sdk.Tool{Name: "list_allowed_directories", Annotations: ro("List Allowed Directories"),
		Description: "Returns the list of directories that this server is allowed to access: the sandbox's root, \"/\". " +
			"Subdirectories within these allowed directories are also accessible."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, textOut, error) {
			return text("Allowed directories:\n/")
		})
}

var mediaTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".bmp": "image/bmp", ".svg": "image/svg+xml", ".mp3": "audio/mpeg", ".wav": "audio/wav", ".ogg": "audio/ogg",
	".flac": "audio/flac",
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// toText decodes b as Node's utf-8 decoder does: each invalid byte is
// U+FFFD.
func toText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var w strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		w.WriteRune(r) // RuneError for an invalid byte
		b = b[n:]
	}
	return w.String()
}

// readFile reads the regular file at p, whole, up to maxReadBytes; info
// is the file as the open found it.
func (f *Family) readFile(ctx context.Context, p string) (b []byte, info core.Info, err error) {
	fh, info, err := f.openFile(ctx, p)
	if err != nil {
		return nil, info, err
	}
	defer fh.Close()
	if info.Size > maxReadBytes {
		return nil, info, errorf("%s is %d bytes; a read answers at most %d (read_text_file with head, tail or offset, or grep, reads a part)", info.Path, info.Size, maxReadBytes)
	}
	b, err = readAll(fh, info.Size)
	if err != nil {
		return nil, info, toolErr(err, "read")
	}
	if len(b) > maxReadBytes {
		return nil, info, errorf("%s grew past %d bytes while it was read", info.Path, maxReadBytes)
	}
	return b, info, nil
}

// readAll reads r to its end, up to one byte more than maxReadBytes, into
// a buffer sized for the size the open found (io.ReadAll would grow one
// from 512 bytes, copying as it goes).
func readAll(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, min(max(size, 0), maxReadBytes)+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) > maxReadBytes {
			return b, nil
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// readTextRange answers read_text_file's byte range.
func (f *Family) readTextRange(ctx context.Context, in readTextIn) (*sdk.CallToolResult, readTextOut, error) {
	var offset, length int64
	if in.Offset != nil {
		if offset = *in.Offset; offset < 0 {
			return nil, readTextOut{}, errorf("offset must be 0 or more, got %d", offset)
		}
	}
	if in.Length != nil {
		if length = *in.Length; length < 1 || length > maxReadBytes {
			return nil, readTextOut{}, errorf("length must be between 1 and %d, got %d", maxReadBytes, length)
		}
	}
	s, next, size, err := f.readRange(ctx, in.Path, offset, length)
	if err != nil {
		return nil, readTextOut{}, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}, readTextOut{Content: s, Next: &next, Size: &size}, nil
}
