package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"sandfs/api"
	"strconv"
	"strings"
)

// The client verbs: each is one call (or one call per argument) to the
// sandbox-agent /v1/fs routes of api.md §3. Mutating verbs are quiet on
// success, as their Unix namesakes are; --json prints the daemon's answer.

var catCommand = &command{
	name:     "cat",
	short:    "print files",
	synopsis: "cat [--sandbox NAME] PATH...",
	about: `Write the bytes of each file PATH to stdout (GET /v1/fs/file; with
--sandbox, /v1/sandboxes/NAME/fs/read), streamed, in order. Stops at the
first error.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, false)
		return cf.run(e, nargs{1, -1, "cat takes at least one PATH"}, func(ctx context.Context, c *client, args []string) error {
			route := "/v1/fs/file"
			if cf.named() {
				route = cf.fsRoute("/read")
			}
			for _, p := range args {
				resp, err := c.do(ctx, request{method: "GET", route: route, query: pathQuery(p)})
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
	synopsis: "put [--json] [--sandbox NAME] [LOCAL|-] PATH",
	about: `Write PATH on the daemon (PUT /v1/fs/file) from the local file LOCAL, or
from stdin when LOCAL is "-" or absent: SOURCE then DEST, as cp takes them
(and every transfer verb: download, tar --extract, upload-batch). The bytes
stream; the daemon replaces the file atomically and creates missing parent
directories. With --sandbox, PUT /v1/sandboxes/NAME/fs/write (at most
16 MiB). The order of old, "put PATH -", is still read.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		return cf.run(e, nargs{1, 2, "put takes an optional LOCAL and PATH (SOURCE DEST, as cp)"}, func(ctx context.Context, c *client, args []string) error {
			local, remote := "-", args[0]
			if len(args) == 2 {
				local, remote = args[0], args[1]
				if remote == "-" { // the old order, "put PATH -"
					local, remote = "-", args[0]
				}
			}
			if err := refuseRoot("put", remote, "give the path of a file to write"); err != nil {
				return err
			}
			body, length := e.stdin, int64(-1)
			if local != "-" {
				f, err := os.Open(local)
				if err != nil {
					if len(args) == 2 && os.IsNotExist(err) {
						if _, err2 := os.Stat(remote); err2 == nil {
							return usagef("no local file %s; put takes LOCAL then PATH (SOURCE DEST, as cp): sandfs put %s %s", local, remote, local)
						}
					}
					return err
				}
				defer f.Close()
				fi, err := f.Stat()
				if err != nil {
					return err
				}
				if fi.IsDir() {
					return fmt.Errorf("%s is a directory (upload-batch sends directories)", local)
				}
				if fi.Mode().IsRegular() {
					length = fi.Size()
				}
				body = f
			}
			r := request{method: "PUT", route: "/v1/fs/file", query: pathQuery(remote),
				body: body, length: length, contentType: "application/octet-stream"}
			if cf.named() {
				r.route = cf.fsRoute("/write")
				r.query.Set("mkdirParents", "true")
			}
			return cf.callAndPrint(ctx, c, e.stdout, r, nil, nil)
		})
	},
}

var rmCommand = &command{
	name:     "rm",
	short:    "remove files or directories",
	synopsis: "rm [-r|-R] [-f] [--json] [--sandbox NAME] PATH...",
	about: `Remove each PATH (DELETE /v1/fs/entry; with --sandbox,
/v1/sandboxes/NAME/fs/delete). A non-empty directory needs -r (or -R).
With -f a missing PATH is no error. "/" is never removed. Stops at the
first error.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var recursive, force bool
		fs.BoolVar(&recursive, "r", false, "remove directories and their contents")
		fs.BoolVar(&recursive, "R", false, "same as -r")
		fs.BoolVar(&recursive, "recursive", false, "same as -r")
		fs.BoolVar(&force, "f", false, "a missing PATH is no error")
		fs.BoolVar(&force, "force", false, "same as -f")
		return cf.run(e, nargs{1, -1, "rm takes at least one PATH"}, func(ctx context.Context, c *client, args []string) error {
			for _, p := range args {
				if err := refuseRoot("rm", p, "it is the sandbox's root; remove what is in it instead"); err != nil {
					return err
				}
			}
			route := "/v1/fs/entry"
			if cf.named() {
				route = cf.fsRoute("/delete")
			}
			for _, p := range args {
				q := pathQuery(p)
				if recursive {
					q.Set("recursive", "true")
				}
				err := cf.callAndPrint(ctx, c, e.stdout, request{method: "DELETE", route: route, query: q}, nil, nil)
				if force && isNotFound(err) {
					continue
				}
				if err != nil {
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
	synopsis: "mkdir [-p] [--json] PATH...",
	about: `Create each directory PATH and any missing parents (POST /v1/fs/mkdir);
an existing directory is fine, as with mkdir -p (-p is accepted: it is
always so). Stops at the first error. The default sandbox only.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		fs.Bool("p", true, "make parents, no error if existing (always on)")
		return cf.run(e, nargs{1, -1, "mkdir takes at least one PATH"}, func(ctx context.Context, c *client, args []string) error {
			if err := cf.defaultOnly("mkdir"); err != nil {
				return err
			}
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
	synopsis: "mv [--overwrite] [--json] [--sandbox NAME] FROM TO",
	about: `Rename FROM to TO (POST /v1/fs/move; with --sandbox,
/v1/sandboxes/NAME/fs/rename). As with mv, a TO that is an existing
directory receives FROM inside it (TO/NAME). An existing TO is refused
(exit 3) unless --overwrite, which replaces it as rename(2) does and no
more: a file may replace a file, a directory an empty directory; a
non-empty directory is never replaced. A directory cannot move into
itself.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var overwrite bool
		fs.BoolVar(&overwrite, "overwrite", false, "replace an existing TO")
		return cf.run(e, nargs{2, 2, "mv takes FROM and TO"}, func(ctx context.Context, c *client, args []string) error {
			from, to := args[0], args[1]
			if err := refuseRoot("mv", from, "the sandbox's root cannot move"); err != nil {
				return err
			}
			if inside(from, to) {
				return &apiError{Status: 400, Detail: fmt.Sprintf("mv: cannot move %s into itself (%s is inside it)", from, to)}
			}
			switch st, err := cf.stat(ctx, c, to); {
			case err == nil && st.IsDir:
				to = path.Join(to, path.Base(path.Clean(from)))
			case err != nil && !isNotFound(err):
				return err
			}
			if !cf.named() {
				return cf.callAndPrint(ctx, c, e.stdout, jsonRequest("POST", "/v1/fs/move", api.FSMoveRequest{From: &from, To: &to, Overwrite: &overwrite}), nil, nil)
			}
			if !overwrite { // the named rename replaces, as rename(2) does
				if _, err := c.call(ctx, request{method: "GET", route: cf.fsRoute("/stat"), query: pathQuery(to)}); err == nil {
					return &apiError{Status: 409, Detail: fmt.Sprintf("%s exists (--overwrite replaces it)", to)}
				} else if !isNotFound(err) {
					return err
				}
			}
			return cf.callAndPrint(ctx, c, e.stdout, jsonRequest("POST", cf.fsRoute("/rename"), map[string]string{"source": from, "dest": to}), nil, nil)
		})
	},
}

// refuseRoot refuses, before asking the daemon, a verb on the sandbox's
// root "/" that the daemon would only answer "invalid argument" to.
func refuseRoot(verb, p, why string) error {
	if path.Clean("/"+p) == "/" && strings.HasPrefix(p, "/") {
		return &apiError{Status: 400, Detail: fmt.Sprintf("%s: refusing to act on %s: %s", verb, p, why)}
	}
	return nil
}

// within reports whether the path a is b or lies beneath it, as strings.
func within(a, b string) bool { return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") }

// inside reports whether to is from itself or below it (both cleaned; a
// relative pair is compared as given).
func inside(from, to string) bool {
	f, t := path.Clean(from), path.Clean(to)
	return t != f && within(t, f)
}

// isNotFound reports whether err is the daemon's 404.
func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == 404
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
