package mcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"sandfs/core"
	"sandfs/core/precond"
)

// The file work of the reference tools, each a few calls into core.

var errorf = fmt.Errorf

var errnoOf = core.ErrnoOf

var (
	errEEXIST error = unix.EEXIST
	errEISDIR error = unix.EISDIR
)

func (f *Family) clean(ctx context.Context, p string) (string, error) {
	sb, err := f.sandbox(ctx)
	if err != nil {
		return "", err
	}
	return sb.Clean(p)
}

// kind is the reference's prefix of an entry: [DIR] for a directory (not
// a symlink to one: Node's Dirent says what the entry itself is).
func kind(e core.Info) string {
	if e.IsDir() {
		return "[DIR]"
	}
	return "[FILE]"
}

// list is the entries of the directory at p, sorted by name (the
// reference answers in the order the kernel lists them).
func (f *Family) list(ctx context.Context, p string) ([]core.Info, error) {
	sb, err := f.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	entries, truncated, err := sb.List(ctx, p, maxTreeEntries)
	if err != nil {
		return nil, toolErr(err, "scandir")
	}
	if truncated {
		return nil, errorf("the directory has more than %d entries; list it with the REST API, which pages", maxTreeEntries)
	}
	return entries, nil
}

// write replaces the file at p with content, over the version expected
// when one is given, and answers the new ETag.
func (f *Family) write(ctx context.Context, p, content, expected string) (string, error) {
	sb, err := f.sandbox(ctx)
	if err != nil {
		return "", err
	}
	var o core.WriteOptions
	var etag string
	o.ETag = &etag
	if expected != "" {
		o.Pre.IfMatch = []string{expected}
	}
	if _, err := sb.WriteFile(ctx, p, strings.NewReader(content), o); err != nil {
		return "", toolErr(err, "open")
	}
	return etag, nil
}

// editFile is applyFileEdits: the fenced diff of the edits, written unless
// dry, over the version read (a change made between the read and the
// write fails the edit with the current ETag, and nothing is written).
func (f *Family) editFile(ctx context.Context, in editIn) (string, string, error) {
	sb, err := f.sandbox(ctx)
	if err != nil {
		return "", "", err
	}
	b, info, err := f.readFile(ctx, in.Path)
	if err != nil {
		return "", "", err
	}
	read := core.ETag(info)
	if in.ExpectedETag != "" && !(precond.Precondition{IfMatch: []string{in.ExpectedETag}}).Holds(read) {
		return "", "", &precond.Error{Op: "edit", Path: info.Path, Current: read}
	}
	content := normalizeEOL(toText(b))
	modified, err := applyEdits(content, in.Edits)
	if err != nil {
		return "", "", err
	}
	diff, err := gitDiff(ctx, info.Path, content, modified)
	if err != nil {
		return "", "", err
	}
	if in.DryRun {
		return fencedDiff(diff), read, nil
	}
	var etag string
	o := core.WriteOptions{Pre: precond.Precondition{IfMatch: []string{read}}, ETag: &etag}
	if _, err := sb.WriteFile(ctx, info.Path, strings.NewReader(modified), o); err != nil {
		return "", "", toolErr(err, "open")
	}
	return fencedDiff(diff), etag, nil
}

// nameOrder is JavaScript's localeCompare, which the reference sorts names
// by: ICU's collation, of which x/text's is an implementation.
var nameOrder = collate.New(language.English)

func (f *Family) listWithSizes(ctx context.Context, in sizesIn) (string, error) {
	if in.SortBy != "" && in.SortBy != "name" && in.SortBy != "size" {
		return "", errorf("sortBy must be \"name\" or \"size\", got %q", in.SortBy)
	}
	sb, err := f.sandbox(ctx)
	if err != nil {
		return "", err
	}
	entries, err := f.list(ctx, in.Path)
	if err != nil {
		return "", err
	}
	sizes := make(map[string]int64, len(entries))
	for _, e := range entries {
		if st, err := sb.Stat(ctx, e.Path); err == nil {
			sizes[e.Name] = st.Size // the target's size, as Node's fs.stat
		}
	}
	if in.SortBy == "size" {
		slices.SortStableFunc(entries, func(a, b core.Info) int { return cmp.Compare(sizes[b.Name], sizes[a.Name]) })
	} else {
		slices.SortStableFunc(entries, func(a, b core.Info) int { return nameOrder.CompareString(a.Name, b.Name) })
	}
	var w strings.Builder
	files, dirs, total := 0, 0, int64(0)
	for _, e := range entries {
		size := ""
		if e.IsDir() {
			dirs++
		} else {
			files++
			total += sizes[e.Name]
			size = padStart(formatSize(sizes[e.Name]), 10)
		}
		w.WriteString(kind(e) + " " + padEnd(e.Name, 30) + " " + size + "\n")
	}
	fmt.Fprintf(&w, "\nTotal: %d files, %d directories\nCombined size: %s", files, dirs, formatSize(total))
	return w.String(), nil
}

type treeEntry struct {
	Name     string       `json:"name"`
	Type     string       `json:"type"`
	Children *[]treeEntry `json:"children,omitempty"`
}

// tree is directory_tree's JSON, entries by name, at most maxTreeEntries.
func (f *Family) tree(ctx context.Context, in treeIn) (string, error) {
	root, err := f.clean(ctx, in.Path)
	if err != nil {
		return "", err
	}
	seen := 0
	var build func(dir string) ([]treeEntry, error)
	build = func(dir string) ([]treeEntry, error) {
		entries, err := f.list(ctx, dir)
		if err != nil {
			return nil, err
		}
		out := []treeEntry{}
		for _, e := range entries {
			if excludedTree(relTo(root, e.Path), in.ExcludePatterns) {
				continue
			}
			if seen++; seen > maxTreeEntries {
				return nil, errorf("the tree has more than %d entries; give a deeper path or excludePatterns", maxTreeEntries)
			}
			te := treeEntry{Name: e.Name, Type: "file"}
			if e.IsDir() {
				te.Type = "directory"
				kids, err := build(e.Path)
				if err != nil {
					return nil, err
				}
				te.Children = &kids
			}
			out = append(out, te)
		}
		return out, nil
	}
	t, err := build(root)
	if err != nil {
		return "", err
	}
	return jsonIndent(t)
}

// jsonIndent is JSON.stringify(v, null, 2): no HTML escaping.
func jsonIndent(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// relTo is p relative to dir (both clean API paths, p under dir).
func relTo(dir, p string) string {
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(p, dir+"/")
}

// search is search_files: every entry under the path whose path relative
// to it matches the glob, in pre-order, excluded entries pruned; symlinks
// are not descended.
func (f *Family) search(ctx context.Context, in searchIn) ([]string, error) {
	root, err := f.clean(ctx, in.Path)
	if err != nil {
		return nil, err
	}
	var found []string
	seen := 0
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := f.list(ctx, dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if seen++; seen > maxTreeEntries {
				return errorf("more than %d entries under %s; search a deeper path", maxTreeEntries, root)
			}
			rel := relTo(root, e.Path)
			if slices.ContainsFunc(in.ExcludePatterns, func(p string) bool { return globMatch(rel, p) }) {
				continue
			}
			if globMatch(rel, in.Pattern) {
				found = append(found, e.Path)
			}
			if e.IsDir() {
				if err := walk(e.Path); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return found, walk(root)
}

// fileInfo is get_file_info's text. created is the status change time
// (ctime): core reports no birth time.
func (f *Family) fileInfo(ctx context.Context, p string) (string, error) {
	sb, err := f.sandbox(ctx)
	if err != nil {
		return "", err
	}
	info, err := sb.Stat(ctx, p)
	if err != nil {
		return "", toolErr(err, "stat")
	}
	accessed := info.ModTime
	if st, err := sb.LstatRaw(ctx, info.Path); err == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK {
		accessed = timeOf(st.Atim)
	}
	return strings.Join([]string{
		"size: " + strconv.FormatInt(info.Size, 10),
		"created: " + jsDate(info.Ctime),
		"modified: " + jsDate(info.ModTime),
		"accessed: " + jsDate(accessed),
		"isDirectory: " + strconv.FormatBool(info.IsDir()),
		"isFile: " + strconv.FormatBool(info.IsRegular()),
		fmt.Sprintf("permissions: %03o", info.Mode.Perm()),
	}, "\n"), nil
}

func timeOf(ts unix.Timespec) time.Time { return time.Unix(ts.Unix()) }
