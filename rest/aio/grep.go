package aio

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"sandfs/core"
	"sandfs/core/grep"
	"sandfs/internal/size"
	"sandfs/rest/httpkit"
)

// AIO content search (api.md §4 grep row; the AIO spec "Search"; the 1.x
// FileGrepRequest / FileSearchRequest models): POST /v2/fs/grep and
// POST /v1/file/grep take the same body; POST /v1/file/search is the 1.x
// one-file regex search. All three are grep.Run.

// grepRequest is FileGrepRequest. Every optional field is nullable (null is
// the default).
type grepRequest struct {
	Path            *string         `json:"path"`
	Pattern         *string         `json:"pattern"`
	Include         []string        `json:"include"`
	Exclude         *[]string       `json:"exclude"`
	CaseInsensitive *bool           `json:"case_insensitive"`
	FixedStrings    *bool           `json:"fixed_strings"`
	ContextBefore   *int            `json:"context_before"`
	ContextAfter    *int            `json:"context_after"`
	MaxResults      *int            `json:"max_results"`
	MaxFileSize     json.RawMessage `json:"max_file_size"` // "1M", "500K", or a number of bytes
	Multiline       *bool           `json:"multiline"`
	Offset          *int            `json:"offset"`
	Type            *string         `json:"type"`
	Recursive       *bool           `json:"recursive"`
}

// grepMatch is GrepMatch. The context lists appear when they were asked for.
type grepMatch struct {
	File          string    `json:"file"`
	LineNumber    int       `json:"line_number"`
	LineContent   string    `json:"line_content"`
	ContextBefore *[]string `json:"context_before,omitempty"`
	ContextAfter  *[]string `json:"context_after,omitempty"`
}

// grepResult is FileGrepResult.
type grepResult struct {
	Path          string      `json:"path"`
	Pattern       string      `json:"pattern"`
	Matches       []grepMatch `json:"matches"`
	MatchCount    int         `json:"match_count"`
	FilesSearched int         `json:"files_searched"`
	FilesMatched  int         `json:"files_matched"`
	Truncated     bool        `json:"truncated"`
}

// searchRequest is the 1.x FileSearchRequest.
type searchRequest struct {
	File  *string `json:"file"`
	Regex *string `json:"regex"`
	Sudo  *bool   `json:"sudo"` // accepted and ignored: the daemon reads with its own privileges
}

// searchResult is the 1.x FileSearchResult.
type searchResult struct {
	File        string   `json:"file"`
	Matches     []string `json:"matches"`
	LineNumbers []int    `json:"line_numbers"`
}

// grep: POST /v2/fs/grep, POST /v1/file/grep — ripgrep-like content search
// of a file or a directory tree.
func (s *Family) grep(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req grepRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	o, err := grepOptions(req)
	if err != nil {
		return httpkit.WithOp("grep", err)
	}
	ctx, skipped := core.WithSkippedNames(r.Context())
	res, err := grep.Run(ctx, s.host.SandboxOf(ctx), *req.Path, o)
	if err != nil {
		return httpkit.WithOp("grep", err)
	}
	httpkit.NoteSkipped(w, skipped)
	p, _ := s.fileFS(ctx).Clean(*req.Path)
	out := grepResult{Path: p, Pattern: o.Pattern, Matches: make([]grepMatch, len(res.Matches)),
		MatchCount: len(res.Matches), FilesSearched: res.FilesSearched, FilesMatched: res.FilesMatched, Truncated: res.Truncated}
	for i, m := range res.Matches {
		gm := grepMatch{File: m.File, LineNumber: m.Line, LineContent: m.Text}
		if o.ContextBefore > 0 {
			b := nonNil(m.Before)
			gm.ContextBefore = &b
		}
		if o.ContextAfter > 0 {
			a := nonNil(m.After)
			gm.ContextAfter = &a
		}
		out.Matches[i] = gm
	}
	return writeAIO(w, out)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// grepOptions checks a grep body against the 1.x model's bounds (422, as
// pydantic would) and turns it into core options.
func grepOptions(req grepRequest) (grep.Options, error) {
	var o grep.Options
	if req.Path == nil {
		return o, httpkit.InvalidField("body.path", "missing", "Field required")
	}
	if req.Pattern == nil {
		return o, httpkit.InvalidField("body.pattern", "missing", "Field required")
	}
	o.Pattern = *req.Pattern
	o.Include = req.Include
	if req.Exclude != nil {
		o.Exclude = append([]string{}, *req.Exclude...)
	}
	o.CaseInsensitive = req.CaseInsensitive != nil && *req.CaseInsensitive
	o.FixedStrings = req.FixedStrings != nil && *req.FixedStrings
	o.Multiline = req.Multiline != nil && *req.Multiline
	o.NoRecurse = req.Recursive != nil && !*req.Recursive
	if req.Type != nil {
		o.Type = *req.Type
	}
	bounds := []struct {
		name     string
		v        *int
		lo, hi   int
		dst      *int
		fallback int
	}{
		{"context_before", req.ContextBefore, 0, grep.MaxContext, &o.ContextBefore, 0},
		{"context_after", req.ContextAfter, 0, grep.MaxContext, &o.ContextAfter, 0},
		{"max_results", req.MaxResults, 1, grep.MaxResultsLimit, &o.MaxResults, grep.DefaultMaxResults},
		{"offset", req.Offset, 0, -1, &o.Offset, 0},
	}
	for _, b := range bounds {
		*b.dst = b.fallback
		if b.v == nil {
			continue
		}
		if *b.v < b.lo {
			return o, httpkit.InvalidField("body."+b.name, "greater_than_equal", "Input should be greater than or equal to %d", b.lo)
		}
		if b.hi >= 0 && *b.v > b.hi {
			return o, httpkit.InvalidField("body."+b.name, "less_than_equal", "Input should be less than or equal to %d", b.hi)
		}
		*b.dst = *b.v
	}
	o.MaxFileSize = grep.DefaultMaxFileSize
	if raw := strings.TrimSpace(string(req.MaxFileSize)); raw != "" && raw != "null" {
		var str string
		var num int64
		switch {
		case json.Unmarshal(req.MaxFileSize, &str) == nil:
			n, ok := parseSize(str)
			if !ok {
				return o, httpkit.InvalidRequest("max_file_size %q is not a size (a number of bytes with an optional K, M or G suffix, as rg --max-filesize)", str)
			}
			o.MaxFileSize = n
		case json.Unmarshal(req.MaxFileSize, &num) == nil && num > 0:
			o.MaxFileSize = num
		default:
			return o, httpkit.InvalidField("body.max_file_size", "string_type", "Input should be a valid string")
		}
	}
	return o, nil
}

// parseSize reads "1M", "500K", "2G", "1024", "1.5M" (internal/size: K, M,
// G are powers of 1024, as rg's --max-filesize; a trailing "B" or "iB" is
// allowed); a size must be more than zero.
func parseSize(s string) (int64, bool) {
	n, err := size.Parse(s, true)
	return n, err == nil && n > 0
}

// searchInFile: POST /v1/file/search {file, regex} — the 1.x one-file regex
// search: the matching lines and their numbers, 0-based like the 1.x read's
// lines (a decision: the 1.x model does not say; grep's line_number is
// 1-based). Neither the binary test nor the size limit applies to a file
// named this way beyond the buffered-read limit of 16 MiB and the regex's
// work bound (grep.MaxInputFor: a file over it is a 400 saying so); at most
// 10,000 lines are returned.
func (s *Family) searchInFile(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req searchRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	if req.File == nil {
		return httpkit.InvalidField("body.file", "missing", "Field required")
	}
	if req.Regex == nil {
		return httpkit.InvalidField("body.regex", "missing", "Field required")
	}
	o := grep.Options{Pattern: *req.Regex, MaxResults: 10_000, MaxFileSize: 16 << 20, Exclude: []string{}, OneFile: true}
	res, err := grep.Run(r.Context(), s.host.SandboxOf(r.Context()), *req.File, o)
	if err != nil {
		return httpkit.WithOp("search", err)
	}
	p, _ := s.fileFS(r.Context()).Clean(*req.File)
	out := searchResult{File: p, Matches: make([]string, len(res.Matches)), LineNumbers: make([]int, len(res.Matches))}
	for i, m := range res.Matches {
		out.Matches[i] = m.Text
		out.LineNumbers[i] = m.Line - 1
	}
	return writeAIO(w, out)
}
