package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// The client verbs on the AIO /v2/fs routes (api.md §4, §8): grep, find,
// cp, download, tar. Answers are the AIO envelope {success, message, data,
// hint}; failures carry the §2 status, so the exit codes are those of every
// verb (2 not found, 3 refused, 1 anything else).

// aioData decodes the envelope's data into out.
func aioData(raw []byte, out any) error {
	var env struct {
		Success bool            `json:"success"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("the answer is not the AIO envelope expected: %w", err)
	}
	if !env.Success {
		return fmt.Errorf("%s", env.Message)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Data, out)
}

var grepCommand = &command{
	name:     "grep",
	short:    "search file contents (ripgrep-like)",
	synopsis: "grep [flags] PATTERN [PATH]",
	about: `Search the files under PATH (default: the daemon's working directory) for
the regular expression PATTERN (POST /v2/fs/grep) and print "file:line:text"
for each matching line, in path then line order. Binary files, files over
--max-filesize and the default excludes (.git, node_modules, …) are skipped.
With -A/-B/-C, context lines are printed as "file-line-text" and groups are
separated by "--". Exit status 0 whether or not anything matched (1 is for
failures); a cut answer is said on stderr.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var (
			ci, fixed, multi, noRec bool
			before, after, ctxN     int
			maxResults, offset      int
			maxSize, typ            string
			include, exclude        multiFlag
		)
		fs.BoolVar(&ci, "i", false, "case insensitive")
		fs.Bool("n", true, "print line numbers (always on)")
		fs.BoolVar(&fixed, "F", false, "PATTERN is a literal string")
		fs.BoolVar(&multi, "U", false, "multiline: . matches newlines, matches may span lines")
		fs.IntVar(&before, "B", 0, "`N` lines of context before each match")
		fs.IntVar(&after, "A", 0, "`N` lines of context after each match")
		fs.IntVar(&ctxN, "C", 0, "`N` lines of context around each match")
		fs.IntVar(&maxResults, "max-results", 0, "at most `N` matches (daemon default 500)")
		fs.IntVar(&offset, "offset", 0, "skip the first `N` matches")
		fs.StringVar(&maxSize, "max-filesize", "", "skip files larger than `SIZE` (1M, 500K; default 1M)")
		fs.StringVar(&typ, "type", "", "only files of ripgrep `TYPE` (go, py, js, ts, rust, …)")
		fs.Var(&include, "include", "only files matching `GLOB` (repeatable)")
		fs.Var(&exclude, "exclude", "skip names matching `GLOB` (repeatable; replaces the default excludes)")
		fs.BoolVar(&noRec, "no-recursive", false, "only the files directly in PATH")
		return cf.run(e, nargs{1, 2, "grep takes PATTERN and an optional PATH"}, func(ctx context.Context, c *client, args []string) error {
			if err := cf.defaultOnly("grep"); err != nil {
				return err
			}
			body := map[string]any{"pattern": args[0], "path": "."}
			if len(args) == 2 {
				body["path"] = args[1]
			}
			if ctxN > 0 {
				before, after = max(before, ctxN), max(after, ctxN)
			}
			set := func(k string, v any, ok bool) {
				if ok {
					body[k] = v
				}
			}
			set("case_insensitive", true, ci)
			set("fixed_strings", true, fixed)
			set("multiline", true, multi)
			set("context_before", before, before > 0)
			set("context_after", after, after > 0)
			set("max_results", maxResults, maxResults > 0)
			set("offset", offset, offset > 0)
			set("max_file_size", maxSize, maxSize != "")
			set("type", typ, typ != "")
			set("include", []string(include), len(include) > 0)
			set("exclude", []string(exclude), len(exclude) > 0)
			set("recursive", false, noRec)
			err := cf.callAndPrint(ctx, c, e.stdout, jsonRequest("POST", "/v2/fs/grep", body), nil, func(raw []byte) error {
				return printGrep(e, raw, before > 0 || after > 0)
			})
			return userPattern(err, "grep", args[0])
		})
	},
}

// printGrep prints grep's answer as ripgrep does: "file:line:text", and
// with context (ctxMode) "file-line-text" lines and "--" between groups.
func printGrep(e *env, raw []byte, ctxMode bool) error {
	var res struct {
		Matches []struct {
			File          string   `json:"file"`
			LineNumber    int      `json:"line_number"`
			LineContent   string   `json:"line_content"`
			ContextBefore []string `json:"context_before"`
			ContextAfter  []string `json:"context_after"`
		} `json:"matches"`
		Truncated bool `json:"truncated"`
	}
	if err := aioData(raw, &res); err != nil {
		return err
	}
	for i, m := range res.Matches {
		if ctxMode && i > 0 {
			fmt.Fprintln(e.stdout, "--")
		}
		for j, l := range m.ContextBefore {
			fmt.Fprintf(e.stdout, "%s-%d-%s\n", printable(m.File), m.LineNumber-len(m.ContextBefore)+j, l)
		}
		if _, err := fmt.Fprintf(e.stdout, "%s:%d:%s\n", printable(m.File), m.LineNumber, m.LineContent); err != nil {
			return err
		}
		last := m.LineNumber + strings.Count(m.LineContent, "\n")
		for j, l := range m.ContextAfter {
			fmt.Fprintf(e.stdout, "%s-%d-%s\n", printable(m.File), last+1+j, l)
		}
	}
	if res.Truncated {
		fmt.Fprintf(e.stderr, "sandfs: more matches than the %d shown (raise --max-results or use --offset)\n", len(res.Matches))
	}
	return nil
}

var findCommand = &command{
	name:     "find",
	short:    "find files by name",
	synopsis: "find [--json] PATH GLOB",
	about: `Print the API paths under PATH whose name (or path relative to PATH)
matches GLOB, one a line (GET /v2/fs/search); "**" matches any depth
("**/*.go"). A cut answer is said on stderr.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		return cf.run(e, nargs{2, 2, "find takes PATH and GLOB"}, func(ctx context.Context, c *client, args []string) error {
			if err := cf.defaultOnly("find"); err != nil {
				return err
			}
			q := url.Values{"path": {args[0]}, "pattern": {args[1]}}
			err := cf.callAndPrint(ctx, c, e.stdout, request{method: "GET", route: "/v2/fs/search", query: q}, nil, func(raw []byte) error {
				var res struct {
					Files     []string `json:"files"`
					Truncated bool     `json:"truncated"`
				}
				if err := aioData(raw, &res); err != nil {
					return err
				}
				return printPaths(e, res.Files, res.Truncated, "sandfs: only the first %d paths were listed")
			})
			return userPattern(err, "find", args[1])
		})
	},
}

var downloadCommand = &command{
	name:     "download",
	short:    "download a file",
	synopsis: "download [-f] [--abort-on-change] PATH [LOCAL|-]",
	about: `Download the file PATH (GET /v2/fs/download) into LOCAL (default: its name
in the current directory; "-" is stdout). The bytes stream into
LOCAL.sandfs-download and are renamed into place when complete, so a failed
transfer leaves no half file. An existing LOCAL is refused unless -f
(--force), as cp -n would: curl -o overwrites, but a download that replaces
a local file by surprise cannot be undone. A progress bar is drawn on stderr when stderr
is a terminal. --abort-on-change asks the daemon to cut the transfer if the
file changes while it is sent (change_policy=abort): the download then
fails with "the file changed during the download" and keeps nothing.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, false)
		var abort, force bool
		fs.BoolVar(&abort, "abort-on-change", false, "cut the transfer if the file changes meanwhile")
		fs.BoolVar(&force, "f", false, "replace an existing LOCAL")
		fs.BoolVar(&force, "force", false, "same as -f")
		return cf.run(e, nargs{1, 2, "download takes PATH and an optional LOCAL"}, func(ctx context.Context, c *client, args []string) error {
			if err := cf.defaultOnly("download"); err != nil {
				return err
			}
			local := path.Base(args[0])
			if len(args) == 2 {
				local = args[1]
			}
			if local != "-" {
				if fi, err := os.Stat(local); err == nil && fi.IsDir() {
					local = filepath.Join(local, path.Base(args[0]))
				}
				if _, err := os.Lstat(local); err == nil && !force {
					return fmt.Errorf("%s exists; -f (--force) replaces it", local)
				}
			}
			q := pathQuery(args[0])
			if abort {
				q.Set("change_policy", "abort")
			}
			changed := func(err error) error {
				if abort && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errShort)) {
					return fmt.Errorf("download %s: the file changed during the download (--abort-on-change); nothing was kept", args[0])
				}
				return fmt.Errorf("download %s: %w", args[0], err)
			}
			resp, err := c.do(ctx, request{method: "GET", route: "/v2/fs/download", query: q})
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var body io.Reader = resp.Body
			if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				bar := progressbar.DefaultBytes(resp.ContentLength, path.Base(args[0]))
				defer bar.Finish()
				body = io.TeeReader(resp.Body, bar)
			}
			if local == "-" {
				if _, err := io.Copy(e.stdout, body); err != nil {
					return changed(err)
				}
				return nil
			}
			tmp := local + ".sandfs-download"
			out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			n, err := io.Copy(out, body)
			if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
				err = fmt.Errorf("%w: got %d of %d bytes", errShort, n, resp.ContentLength)
			}
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(tmp)
				return changed(err)
			}
			return os.Rename(tmp, local)
		})
	},
}

var tarCommand = &command{
	name:     "tar",
	short:    "a directory as a tar stream, out or in",
	synopsis: "tar [-f FILE] PATH | tar --extract LOCAL.tar [--mode merge|rename] PATH",
	about: `Without --extract, write the directory PATH on the daemon to stdout as an
uncompressed tar stream (GET /v2/fs/tree), or to FILE with -f; as tar and
gzip do, it refuses to write to a terminal. With --extract LOCAL.tar ("-":
stdin), extract that archive into the directory PATH on the daemon
(PUT /v2/fs/tree): --mode merge (default) merges into it, --mode rename
builds it beside and renames it in (PATH must not exist). A hostile archive
(absolute or ".." names, devices, links leaving PATH) is refused whole.
Prints the number of entries extracted.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var extract, mode, outFile string
		fs.StringVar(&outFile, "f", "", "without --extract: write the tar stream to `FILE`")
		fs.StringVar(&extract, "extract", "", "extract the local archive `FILE` (\"-\": stdin) into PATH")
		fs.StringVar(&mode, "mode", "merge", "with --extract: merge or rename")
		return cf.run(e, nargs{1, 1, "tar takes one PATH"}, func(ctx context.Context, c *client, args []string) error {
			if err := cf.defaultOnly("tar"); err != nil {
				return err
			}
			if extract == "" {
				var out io.Writer = e.stdout
				if outFile != "" && outFile != "-" {
					f, err := os.OpenFile(outFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
					if err != nil {
						return err
					}
					defer f.Close()
					out = f
				} else if f, ok := e.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
					return usagef("refusing to write a tar stream to a terminal; redirect it or give -f FILE")
				}
				resp, err := c.do(ctx, request{method: "GET", route: "/v2/fs/tree", query: pathQuery(args[0])})
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if _, err := io.Copy(out, resp.Body); err != nil {
					return fmt.Errorf("tar %s: %w", args[0], err)
				}
				if f, ok := out.(*os.File); ok && f != e.stdout {
					return f.Close()
				}
				return nil
			}
			var body io.Reader = e.stdin
			length := int64(-1)
			if extract != "-" {
				f, err := os.Open(extract)
				if err != nil {
					return err
				}
				defer f.Close()
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					length = fi.Size()
				}
				body = f
			}
			q := pathQuery(args[0])
			q.Set("mode", mode)
			r := request{method: "PUT", route: "/v2/fs/tree", query: q, body: body, length: length, contentType: "application/x-tar"}
			return cf.callAndPrint(ctx, c, e.stdout, r, nil, func(raw []byte) error {
				var res struct {
					Entries int `json:"entries"`
				}
				if err := aioData(raw, &res); err != nil {
					return err
				}
				_, err := fmt.Fprintln(e.stdout, strconv.Itoa(res.Entries))
				return err
			})
		})
	},
}

// errShort is a download that ended before its Content-Length.
var errShort = errors.New("the transfer ended early")
