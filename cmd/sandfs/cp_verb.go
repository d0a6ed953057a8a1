package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path"
	"sandfs/api"
	"strings"
)

// cp, on the AIO copy route for the default sandbox and the named family's
// for another, with cp(1)'s habits; and userPattern, which keeps the
// daemon's pattern rewrites out of grep's and find's errors.

var cpCommand = &command{
	name:     "cp",
	short:    "copy a file or directory on the daemon",
	synopsis: "cp [-r|-R] [-f] [--json] [--sandbox NAME] SRC DST",
	about: `Copy SRC to DST on the daemon (POST /v2/fs/copy; with --sandbox,
/v1/sandboxes/NAME/fs/copy); modes are kept. As with cp, a DST that is an
existing directory receives SRC inside it (DST/NAME), and a directory SRC
needs -r (or -R). An existing file DST is refused (exit 3) unless -f.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var force, recursive bool
		fs.BoolVar(&force, "f", false, "overwrite an existing DST")
		fs.BoolVar(&recursive, "r", false, "copy directories and their contents")
		fs.BoolVar(&recursive, "R", false, "same as -r")
		return cf.run(e, nargs{2, 2, "cp takes SRC and DST"}, func(ctx context.Context, c *client, args []string) error {
			src, dst := args[0], args[1]
			srcSt, err := cf.stat(ctx, c, src)
			if err != nil {
				return err
			}
			if srcSt.IsDir && !recursive {
				return &apiError{Status: 400, Detail: fmt.Sprintf("cp: -r not given; not copying the directory %s", src)}
			}
			dstSt, err := cf.stat(ctx, c, dst)
			switch {
			case err == nil && dstSt.IsDir:
				dst = path.Join(dst, path.Base(path.Clean(src)))
				if _, err := cf.stat(ctx, c, dst); err == nil && !force {
					return &apiError{Status: 409, Detail: fmt.Sprintf("cp: %s exists (-f replaces it)", dst)}
				}
			case err == nil && !force:
				return &apiError{Status: 409, Detail: fmt.Sprintf("cp: %s exists (-f replaces it)", dst)}
			case err != nil && !isNotFound(err):
				return err
			}
			if inside(src, dst) {
				return &apiError{Status: 400, Detail: fmt.Sprintf("cp: cannot copy %s into itself (%s)", src, dst)}
			}
			if cf.named() {
				r := jsonRequest("POST", cf.fsRoute("/copy"), map[string]any{"source": src, "dest": dst, "recursive": recursive})
				return cf.callAndPrint(ctx, c, e.stdout, r, nil, nil)
			}
			r := jsonRequest("POST", "/v2/fs/copy", map[string]any{"source": src, "destination": dst, "overwrite": force})
			return cf.callAndPrint(ctx, c, e.stdout, r, nil, func(raw []byte) error { return aioData(raw, nil) })
		})
	},
}

// stat is the named family's stat of p in the sandbox asked for.
func (cf *clientFlags) stat(ctx context.Context, c *client, p string) (api.Entry, error) {
	var st api.Entry
	_, err := c.callJSON(ctx, request{method: "GET", route: cf.fsRoute("/stat"), query: pathQuery(p)}, &st)
	return st, err
}

// userPattern rewords the daemon's refusal of a pattern so that it quotes
// PATTERN as the user typed it: the daemon reports the expression it
// compiled ("(?m)(" for grep's "(", "**/[" for find's "["), a rewrite of
// its own the user never wrote.
func userPattern(err error, verb, pat string) error {
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != 400 {
		return err
	}
	d := ae.Detail
	reason := ""
	switch {
	case strings.Contains(d, "error parsing regexp: "):
		reason = d[strings.Index(d, "error parsing regexp: ")+len("error parsing regexp: "):]
		if j := strings.Index(reason, ": `"); j >= 0 {
			reason = reason[:j]
		}
	case strings.Contains(d, "invalid pattern "):
		reason = d[strings.Index(d, "invalid pattern "):]
		if j := strings.LastIndex(reason, "\": "); j >= 0 {
			reason = reason[j+3:]
		}
	default:
		return err
	}
	out := *ae
	out.Detail = fmt.Sprintf("%s: invalid pattern %q: %s", verb, pat, reason)
	return &out
}
