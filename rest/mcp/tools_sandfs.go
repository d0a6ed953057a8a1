package mcp

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/changes"
	"sandfs/core/checkpoint"
	"sandfs/core/grep"
	"sandfs/core/journal"
	"sandfs/rest/httpkit"
)

// sandfs's own tools: what the reference server has no tool for (delete,
// copy, content search) and the history of the sandbox (changes since a
// point, checkpoints, restore). Each is the call the REST route of the
// same work makes, with the same bounds; answers are the REST routes'
// JSON (api types), as text and as structured content.

type deleteIn struct {
	Path         string `json:"path"`
	Recursive    bool   `json:"recursive,omitempty" jsonschema:"Delete a non-empty directory with everything under it"`
	ExpectedETag string `json:"expected_etag,omitempty" jsonschema:"Delete only if the entry's ETag is still this one"`
}

type copyIn struct {
	Source       string `json:"source"`
	Destination  string `json:"destination"`
	Overwrite    bool   `json:"overwrite,omitempty" jsonschema:"Replace an existing destination"`
	ExpectedETag string `json:"expected_etag,omitempty" jsonschema:"Copy only if the destination's ETag is still this one"`
}

type grepIn struct {
	Path            string   `json:"path" jsonschema:"A file, or a directory searched recursively"`
	Pattern         string   `json:"pattern" jsonschema:"A regular expression (RE2), or a fixed string with fixed_strings"`
	Include         []string `json:"include,omitempty" jsonschema:"Search only files matching one of these globs (a name, or a relative path when it holds /)"`
	Exclude         []string `json:"exclude,omitempty" jsonschema:"Skip files and directories matching these globs (default: .git, node_modules and the like)"`
	CaseInsensitive bool     `json:"case_insensitive,omitempty"`
	FixedStrings    bool     `json:"fixed_strings,omitempty"`
	ContextBefore   int      `json:"context_before,omitempty" jsonschema:"Lines before each match, 0 to 20"`
	ContextAfter    int      `json:"context_after,omitempty" jsonschema:"Lines after each match, 0 to 20"`
	MaxResults      int      `json:"max_results,omitempty" jsonschema:"At most this many matches, 1 to 10000 (default 500)"`
	Offset          int      `json:"offset,omitempty" jsonschema:"Matches skipped before the first returned"`
}

type changesIn struct {
	Since string `json:"since,omitempty" jsonschema:"A journal seq, an RFC 3339 time, a checkpoint id (cp_...) or fork (since this sandbox, a fork, was made); empty: the oldest event kept"`
	Path  string `json:"path,omitempty" jsonschema:"Only changes at or under this path"`
	Diff  bool   `json:"diff,omitempty" jsonschema:"A unified diff of each changed text file"`
	Limit int    `json:"limit,omitempty" jsonschema:"At most this many paths"`
}

type checkpointIn struct {
	Name string `json:"name,omitempty" jsonschema:"A name for the checkpoint"`
}

type restoreIn struct {
	Checkpoint string   `json:"checkpoint" jsonschema:"The checkpoint's id (cp_...)"`
	Paths      []string `json:"paths,omitempty" jsonschema:"Files or subtrees to restore; empty: the whole tree"`
	Actor      string   `json:"actor,omitempty" jsonschema:"Restore only the paths this actor changed since the checkpoint: an API actor's name, or fuse:COMM for a process on the mount; a path someone else changed after it is skipped and named"`
	DryRun     bool     `json:"dry_run,omitempty" jsonschema:"Say what would be written and removed, change nothing"`
}

func (f *Family) addSandfsTools(s *sdk.Server) {
	addTool(f, s, &sdk.Tool{Name: "delete", Annotations: rw("Delete", true, true),
		Description: "Delete a file, a symlink (not its target) or a directory (recursive for a non-empty one). " +
			"expected_etag: delete only the version you read; a mismatch is an error naming the current ETag, and nothing is deleted."},
		func(ctx context.Context, req *sdk.CallToolRequest, in deleteIn) (*sdk.CallToolResult, any, error) {
			sb, err := f.sandbox(ctx)
			if err != nil {
				return nil, nil, err
			}
			o := core.RemoveOptions{Recursive: in.Recursive}
			if in.ExpectedETag != "" {
				o.Pre.IfMatch = []string{in.ExpectedETag}
			}
			if err := sb.RemoveWith(actorCtx(ctx, req), in.Path, o); err != nil {
				return nil, nil, toolErr(err, "rm")
			}
			ap, _ := sb.Clean(in.Path)
			return textResult("Successfully deleted " + ap)
		})

	addTool(f, s, &sdk.Tool{Name: "copy", Annotations: rw("Copy", false, true),
		Description: "Copy a file, symlink or directory tree (modes kept). The destination must not exist unless overwrite. " +
			"expected_etag: replace only the destination's version you read. Answers the new ETag of a copied file."},
		func(ctx context.Context, req *sdk.CallToolRequest, in copyIn) (*sdk.CallToolResult, any, error) {
			sb, err := f.sandbox(ctx)
			if err != nil {
				return nil, nil, err
			}
			o := core.CopyOptions{Overwrite: in.Overwrite}
			if in.ExpectedETag != "" {
				o.Pre.IfMatch = []string{in.ExpectedETag}
			}
			st, err := sb.Copy(actorCtx(ctx, req), in.Source, in.Destination, o)
			if err != nil {
				return nil, nil, toolErr(err, "copyfile")
			}
			src, _ := sb.Clean(in.Source)
			dst, _ := sb.Clean(in.Destination)
			msg := fmt.Sprintf("Successfully copied %s to %s (%d entries, %d bytes)", src, dst, st.Entries, st.Bytes)
			if etag := etagOf(ctx, sb, dst); etag != "" {
				msg += "\nETag: " + etag
			}
			return textResult(msg)
		})

	addTool(f, s, &sdk.Tool{Name: "grep", Annotations: ro("Search File Contents"),
		Description: "Search file contents for a regular expression (or a fixed string), as ripgrep does: binary files and files " +
			"over 1 MiB are skipped, .git and node_modules are not entered unless exclude says otherwise. Answers path:line:text lines."},
		func(ctx context.Context, req *sdk.CallToolRequest, in grepIn) (*sdk.CallToolResult, any, error) {
			return f.grep(ctx, in)
		})

	addTool(f, s, &sdk.Tool{Name: "changes_since", Annotations: ro("Changes Since"),
		Description: "The net change of every path since a point (a journal seq, a time, a checkpoint id, or fork: since this sandbox, a fork, was made): added, modified, " +
			"deleted or renamed, who changed it, and with diff a unified diff of each text file."},
		func(ctx context.Context, req *sdk.CallToolRequest, in changesIn) (*sdk.CallToolResult, any, error) {
			return f.changesSince(ctx, in)
		})

	addTool(f, s, &sdk.Tool{Name: "checkpoint", Annotations: rw("Checkpoint", false, false),
		Description: "Take a checkpoint of the whole sandbox tree (content-addressed: unchanged files cost nothing); restore can bring it back."},
		func(ctx context.Context, req *sdk.CallToolRequest, in checkpointIn) (*sdk.CallToolResult, any, error) {
			sb, err := f.sandbox(ctx)
			if err != nil {
				return nil, nil, err
			}
			if err := checkLabel("name", in.Name, maxCheckpointName); err != nil {
				return nil, nil, err
			}
			cp, err := checkpoint.Create(actorCtx(ctx, req), sb, checkpoint.Options{Name: in.Name})
			if err != nil {
				return nil, nil, err
			}
			return jsonResult(wireCheckpoint(cp))
		})

	addTool(f, s, &sdk.Tool{Name: "list_checkpoints", Annotations: ro("List Checkpoints"),
		Description: "Every checkpoint of the sandbox, oldest first."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			sb, err := f.sandbox(ctx)
			if err != nil {
				return nil, nil, err
			}
			list, err := checkpoint.List(sb)
			if err != nil {
				return nil, nil, err
			}
			out := api.CheckpointList{Checkpoints: make([]api.Checkpoint, len(list)), Count: len(list)}
			for i, cp := range list {
				out.Checkpoints[i] = wireCheckpoint(cp)
			}
			return jsonResult(out)
		})

	addTool(f, s, &sdk.Tool{Name: "restore", Annotations: rw("Restore", false, true),
		Description: "Bring back the tree (or the given paths) as a checkpoint holds it. A checkpoint is taken first, so the " +
			"restore can itself be undone (its id is the answer's undo). dry_run says what would change and changes nothing."},
		func(ctx context.Context, req *sdk.CallToolRequest, in restoreIn) (*sdk.CallToolResult, any, error) {
			sb, err := f.sandbox(ctx)
			if err != nil {
				return nil, nil, err
			}
			if in.Checkpoint == "" {
				return nil, nil, errorf("checkpoint is required")
			}
			if err := httpkit.CheckActor("actor", in.Actor); err != nil {
				return nil, nil, err
			}
			res, err := checkpoint.Restore(actorCtx(ctx, req), sb, checkpoint.RestoreOptions{Checkpoint: in.Checkpoint, Paths: in.Paths,
				Actor: in.Actor, DryRun: in.DryRun})
			if err != nil {
				return nil, nil, err
			}
			return jsonResult(httpkit.RestoreAnswer(res))
		})
}

// maxCheckpointName bounds a checkpoint's name, as the REST route does.
const maxCheckpointName = 256

// checkLabel refuses a name over max bytes or one a person could misread
// (httpkit's rule for labels).
func checkLabel(field, v string, max int) error {
	if len(v) > max {
		return errorf("%s is %d bytes; at most %d", field, len(v), max)
	}
	if !utf8.ValidString(v) {
		return errorf("%s is not valid UTF-8", field)
	}
	return httpkit.CheckLabel(field, v)
}

func wireCheckpoint(cp checkpoint.Checkpoint) api.Checkpoint {
	return api.Checkpoint{ID: cp.ID, Name: cp.Name, Reason: cp.Reason, Seq: cp.Seq, CreatedAt: cp.Created.UTC(),
		Files: cp.Files, Dirs: cp.Dirs, Symlinks: cp.Symlinks, Bytes: cp.Bytes, NewBytes: cp.NewBytes, SkipExcluded: cp.SkipExcluded}
}

func textResult(s string) (*sdk.CallToolResult, any, error) {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}, nil, nil
}

// jsonResult answers v as indented JSON text and as structured content.
func jsonResult(v any) (*sdk.CallToolResult, any, error) {
	s, err := jsonIndent(v)
	if err != nil {
		return nil, nil, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}, StructuredContent: v}, nil, nil
}

func (f *Family) grep(ctx context.Context, in grepIn) (*sdk.CallToolResult, any, error) {
	sb, err := f.sandbox(ctx)
	if err != nil {
		return nil, nil, err
	}
	o := grep.Options{Pattern: in.Pattern, Include: in.Include, Exclude: in.Exclude, CaseInsensitive: in.CaseInsensitive,
		FixedStrings: in.FixedStrings, ContextBefore: in.ContextBefore, ContextAfter: in.ContextAfter,
		MaxResults: in.MaxResults, Offset: in.Offset, MaxFileSize: grep.DefaultMaxFileSize}
	// The bounds of the REST grep (core/grep's, as rest/aio/grep.go holds
	// its body to them); max_results 0 is the default.
	for _, b := range []struct {
		name   string
		v      int
		lo, hi int
	}{{"context_before", in.ContextBefore, 0, grep.MaxContext}, {"context_after", in.ContextAfter, 0, grep.MaxContext},
		{"max_results", in.MaxResults, 0, grep.MaxResultsLimit}, {"offset", in.Offset, 0, 1 << 30}} {
		if b.v < b.lo || b.v > b.hi {
			return nil, nil, errorf("%s must be between %d and %d, got %d", b.name, b.lo, b.hi, b.v)
		}
	}
	if o.MaxResults == 0 {
		o.MaxResults = grep.DefaultMaxResults
	}
	res, err := grep.Run(ctx, sb, in.Path, o)
	if err != nil {
		return nil, nil, toolErr(err, "open")
	}
	var w strings.Builder
	for _, m := range res.Matches {
		for i, l := range m.Before {
			fmt.Fprintf(&w, "%s-%d-%s\n", m.File, m.Line-len(m.Before)+i, l)
		}
		fmt.Fprintf(&w, "%s:%d:%s\n", m.File, m.Line, m.Text)
		for i, l := range m.After {
			fmt.Fprintf(&w, "%s-%d-%s\n", m.File, m.Line+1+i, l)
		}
	}
	fmt.Fprintf(&w, "%d matches in %d of %d files searched", len(res.Matches), res.FilesMatched, res.FilesSearched)
	if res.Truncated {
		fmt.Fprintf(&w, " (more past these: give offset %d)", o.Offset+len(res.Matches))
	}
	type match struct {
		File   string   `json:"file"`
		Line   int      `json:"line"`
		Text   string   `json:"text"`
		Before []string `json:"before,omitempty"`
		After  []string `json:"after,omitempty"`
	}
	ms := make([]match, len(res.Matches))
	for i, m := range res.Matches {
		ms[i] = match{m.File, m.Line, m.Text, m.Before, m.After}
	}
	structured := map[string]any{"matches": ms, "filesSearched": res.FilesSearched, "filesMatched": res.FilesMatched, "truncated": res.Truncated}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: w.String()}}, StructuredContent: structured}, nil, nil
}

func (f *Family) changesSince(ctx context.Context, in changesIn) (*sdk.CallToolResult, any, error) {
	sb, err := f.sandbox(ctx)
	if err != nil {
		return nil, nil, err
	}
	q := changes.Query{Diff: in.Diff, Limit: in.Limit}
	if in.Limit < 0 || in.Limit > changes.MaxLimit {
		return nil, nil, errorf("limit must be between 1 and %d, got %d", changes.MaxLimit, in.Limit)
	}
	if in.Path != "" {
		if q.Path, err = sb.Clean(in.Path); err != nil {
			return nil, nil, err
		}
	}
	switch v := in.Since; {
	case v == "":
	case strings.HasPrefix(v, "cp_"):
		q.SinceCheckpoint = v
	case v == "fork":
		fk, ok := f.host.ForkOf(ctx)
		if !ok {
			return nil, nil, errorf("since: fork: this sandbox is not a fork")
		}
		q.SinceFork = &fk
	case strings.Trim(v, "0123456789") == "":
		if q.SinceSeq, err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, nil, errorf("since: seq %q is out of range", v)
		}
	default:
		if q.SinceTime, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return nil, nil, errorf("since must be a seq, an RFC 3339 time, a checkpoint id (cp_...) or fork, got %q", v)
		}
	}
	cs, err := changes.Since(ctx, sb, q)
	if err != nil {
		return nil, nil, err
	}
	out := api.Changes{Since: api.ChangesSince{Seq: cs.SinceSeq, Checkpoint: cs.SinceCheckpoint, Fork: cs.SinceFork},
		UntilSeq: cs.UntilSeq, Lost: cs.Lost, Changes: make([]api.Change, 0, len(cs.Rows)), Truncated: cs.Truncated}
	if !cs.SinceTime.IsZero() {
		out.Since.Time = cs.SinceTime.UTC().Format(time.RFC3339Nano)
	}
	for _, row := range cs.Rows {
		if !utf8.ValidString(row.Path) || !utf8.ValidString(row.RenamedFrom) {
			continue // a name JSON cannot carry (api.md §2)
		}
		out.Changes = append(out.Changes, api.Change{Path: row.Path, Change: row.Change, RenamedFrom: row.RenamedFrom,
			IsDir: row.IsDir, Size: row.Size, Events: row.Events, First: changeEvent(row.First), Last: changeEvent(row.Last),
			Actors: row.Actors, Diff: row.Diff, DiffTruncated: row.DiffTruncated, Binary: row.Binary, DiffUnavailable: row.DiffUnavailable})
	}
	out.Count = len(out.Changes)
	return jsonResult(out)
}

func changeEvent(e journal.Event) api.ChangeEvent {
	return api.ChangeEvent{Seq: e.Seq, Time: e.Time.UTC().Format(time.RFC3339Nano), Type: string(e.Type),
		Origin: string(e.Origin), Actor: e.Actor, Pid: e.Pid, Comm: e.Comm}
}
