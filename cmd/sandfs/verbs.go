package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strconv"
	"text/tabwriter"
)

// The client verbs: each is one call (or one call per argument) to the
// sandbox-agent /v1/fs routes of api.md §3. Mutating verbs are quiet on
// success, as their Unix namesakes are; --json prints the daemon's answer.

var lsCommand = &command{
	name:     "ls",
	short:    "list a directory",
	synopsis: "ls [--json] [PATH]",
	about: `List the directory PATH (GET /v1/fs/entries), one entry a line: name,
type (file or directory), size in bytes, modification time. Entries are
sorted by name. PATH defaults to the daemon's working directory.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		return cf.run(e, nargs{0, 1, "ls takes at most one PATH"}, func(ctx context.Context, c *client, args []string) error {
			q := url.Values{}
			if len(args) == 1 {
				q.Set("path", args[0])
			}
			var entries []fsEntry
			return cf.callAndPrint(ctx, c, e.stdout, request{method: "GET", route: "/v1/fs/entries", query: q}, &entries, func([]byte) error {
				sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
				tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
				for _, en := range entries {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", printable(en.Name), en.EntryType, en.Size, en.Modified)
				}
				return tw.Flush()
			})
		})
	},
}

var statCommand = &command{
	name:     "stat",
	short:    "describe a file or directory",
	synopsis: "stat [--json] PATH",
	about: `Describe PATH (GET /v1/fs/stat): its API path, type, size and
modification time, one "key: value" a line.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		return cf.run(e, nargs{1, 1, "stat takes one PATH"}, func(ctx context.Context, c *client, args []string) error {
			var st fsStat
			return cf.callAndPrint(ctx, c, e.stdout, request{method: "GET", route: "/v1/fs/stat", query: pathQuery(args[0])}, &st, func([]byte) error {
				_, err := fmt.Fprintf(e.stdout, "path: %s\ntype: %s\nsize: %d\nmodified: %s\n",
					printable(st.Path), st.EntryType, st.Size, st.Modified)
				return err
			})
		})
	},
}

var catCommand = &command{
	name:     "cat",
	short:    "print files",
	synopsis: "cat PATH...",
	about: `Write the bytes of each file PATH to stdout (GET /v1/fs/file), streamed,
in order. Stops at the first error.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, false)
		return cf.run(e, nargs{1, -1, "cat takes at least one PATH"}, func(ctx context.Context, c *client, args []string) error {
			for _, p := range args {
				resp, err := c.do(ctx, request{method: "GET", route: "/v1/fs/file", query: pathQuery(p)})
				if err != nil {
					return err
				}
				_, err = io.Copy(e.stdout, resp.Body)
				resp.Body.Close()
				if err != nil {
					return fmt.Errorf("cat %s: %w", p, err)
				}
			}
			return nil
		})
	},
}

var putCommand = &command{
	name:     "put",
	short:    "write a file from a local file or stdin",
	synopsis: "put [--json] PATH [LOCALFILE|-]",
	about: `Write PATH on the daemon (PUT /v1/fs/file) from LOCALFILE, or from stdin when
LOCALFILE is "-" or absent. The bytes stream; the daemon replaces the file
atomically and creates missing parent directories.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		return cf.run(e, nargs{1, 2, "put takes PATH and an optional LOCALFILE"}, func(ctx context.Context, c *client, args []string) error {
			body, length := e.stdin, int64(-1)
			if len(args) == 2 && args[1] != "-" {
				f, err := os.Open(args[1])
				if err != nil {
					return err
				}
				defer f.Close()
				fi, err := f.Stat()
				if err != nil {
					return err
				}
				if fi.IsDir() {
					return fmt.Errorf("%s is a directory (upload-batch sends directories)", args[1])
				}
				if fi.Mode().IsRegular() {
					length = fi.Size()
				}
				body = f
			}
			return cf.callAndPrint(ctx, c, e.stdout, request{
				method: "PUT", route: "/v1/fs/file", query: pathQuery(args[0]),
				body: body, length: length, contentType: "application/octet-stream",
			}, nil, nil)
		})
	},
}

var rmCommand = &command{
	name:     "rm",
	short:    "remove files or directories",
	synopsis: "rm [-r] [--json] PATH...",
	about: `Remove each PATH (DELETE /v1/fs/entry). A non-empty directory needs -r.
Stops at the first error.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var recursive bool
		fs.BoolVar(&recursive, "r", false, "remove directories and their contents")
		fs.BoolVar(&recursive, "recursive", false, "same as -r")
		return cf.run(e, nargs{1, -1, "rm takes at least one PATH"}, func(ctx context.Context, c *client, args []string) error {
			for _, p := range args {
				q := pathQuery(p)
				if recursive {
					q.Set("recursive", "true")
				}
				if err := cf.callAndPrint(ctx, c, e.stdout, request{method: "DELETE", route: "/v1/fs/entry", query: q}, nil, nil); err != nil {
					return err
				}
			}
			return nil
		})
	},
}

var mkdirCommand = &command{
	name:     "mkdir",
	short:    "create directories",
	synopsis: "mkdir [--json] PATH...",
	about: `Create each directory PATH and any missing parents (POST /v1/fs/mkdir);
an existing directory is fine. Stops at the first error.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		return cf.run(e, nargs{1, -1, "mkdir takes at least one PATH"}, func(ctx context.Context, c *client, args []string) error {
			for _, p := range args {
				if err := cf.callAndPrint(ctx, c, e.stdout, request{method: "POST", route: "/v1/fs/mkdir", query: pathQuery(p)}, nil, nil); err != nil {
					return err
				}
			}
			return nil
		})
	},
}

var mvCommand = &command{
	name:     "mv",
	short:    "move or rename",
	synopsis: "mv [--overwrite] [--json] FROM TO",
	about: `Rename FROM to TO (POST /v1/fs/move). An existing TO is refused (exit 3)
unless --overwrite, which replaces it (a directory with all it holds).`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var overwrite bool
		fs.BoolVar(&overwrite, "overwrite", false, "replace an existing TO")
		return cf.run(e, nargs{2, 2, "mv takes FROM and TO"}, func(ctx context.Context, c *client, args []string) error {
			r := jsonRequest("POST", "/v1/fs/move", fsMoveRequest{From: args[0], To: args[1], Overwrite: overwrite})
			return cf.callAndPrint(ctx, c, e.stdout, r, nil, nil)
		})
	},
}

// nargs is how many arguments a verb takes, from min to max (-1: no
// limit), and the usage error it says otherwise.
type nargs struct {
	min, max int
	usage    string
}

// run is a client verb's body: once its arguments fit n, it makes the
// client the flags describe and calls do with it.
func (cf *clientFlags) run(e *env, n nargs, do func(ctx context.Context, c *client, args []string) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
		if len(args) < n.min || (n.max >= 0 && len(args) > n.max) {
			return usagef("%s", n.usage)
		}
		c, err := cf.client(e.getenv)
		if err != nil {
			return err
		}
		return do(ctx, c, args)
	}
}

// callAndPrint sends r, decodes its JSON answer into out (nil: not
// decoded), and prints it: with --json the daemon's answer as sent, else
// what show makes of it (nil: nothing; a mutating verb is quiet on success,
// as its Unix namesake is).
func (cf *clientFlags) callAndPrint(ctx context.Context, c *client, w io.Writer, r request, out any, show func(raw []byte) error) error {
	raw, err := c.callJSON(ctx, r, out)
	if err != nil {
		return err
	}
	if cf.json {
		return writeJSON(w, raw)
	}
	if show == nil {
		return nil
	}
	return show(raw)
}

// jsonRequest is a request whose body is v as JSON.
func jsonRequest(method, route string, v any) request {
	b, _ := json.Marshal(v) // maps and structs of strings, numbers and bools: never fails
	return request{method: method, route: route, body: bytes.NewReader(b), length: int64(len(b)), contentType: "application/json"}
}

func pathQuery(p string) url.Values {
	return url.Values{"path": {p}}
}

// writeJSON prints a JSON answer as the daemon sent it, ending in a newline.
func writeJSON(w io.Writer, raw []byte) error {
	raw = bytes.TrimRight(raw, "\r\n")
	_, err := w.Write(append(raw, '\n'))
	return err
}

// printPaths prints API paths, one a line; a list the daemon cut is said
// on stderr, by cut with the number of paths shown.
func printPaths(e *env, paths []string, truncated bool, cut string) error {
	for _, p := range paths {
		if _, err := fmt.Fprintln(e.stdout, printable(p)); err != nil {
			return err
		}
	}
	if truncated {
		fmt.Fprintf(e.stderr, cut+"\n", len(paths))
	}
	return nil
}

// printable quotes a name holding control characters (a newline or tab in a
// file name would otherwise break the one-entry-a-line output).
func printable(s string) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}
