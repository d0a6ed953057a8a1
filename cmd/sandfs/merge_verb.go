package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"

	"sandfs/api"
)

// merge: POST /v1/sandboxes/{fork}/merge (daemon/merge.go).

var mergeCommand = &command{
	name:     "merge",
	short:    "merge a fork's changes back into the sandbox it was made from",
	synopsis: "merge [--json] [--into P] [--dry-run] [--strategy fail|ours|theirs] [--path P]... FORK",
	about: `Bring what the fork FORK changed since it was made back into its parent
(POST /v1/sandboxes/FORK/merge), path by path, three ways from the
checkpoint it was made from. A path both changed differently is a
conflict: --strategy fail (the default) then merges nothing and exits 1,
ours leaves the parent's, theirs takes the fork's. --dry-run changes
nothing; --path limits the merge (a file or subtree; repeatable).
One line per path: "write P", "remove P", "skip P: REASON", "conflict P:
WHY" (then its diff, ours to theirs, for two text files); then, unless a
dry run, "undo ID": restoring that checkpoint undoes the merge.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		into := fs.String("into", "", "the sandbox `P` to merge into (must be the fork's parent, the default)")
		dry := fs.Bool("dry-run", false, "change nothing; tell what would be done")
		strategy := fs.String("strategy", "", "what a conflict gets: `fail`, ours or theirs")
		var paths multiFlag
		fs.Var(&paths, "path", "merge only `P` (a file or subtree; repeatable)")
		return func(ctx context.Context, args []string) error {
			if len(args) != 1 {
				return usagef("merge takes one FORK")
			}
			c, err := cf.client(e.getenv)
			if err != nil {
				return err
			}
			body := map[string]any{"dry_run": *dry, "paths": []string(paths)}
			if *into != "" {
				body["into"] = *into
			}
			if *strategy != "" {
				body["strategy"] = *strategy
			}
			r := jsonRequest("POST", sandboxRoute(args[0], "/merge"), body)
			r.bodyOn = http.StatusConflict
			var res api.Merge
			err = cf.callAndPrint(ctx, c, e.stdout, r, &res, func([]byte) error { return printMerge(e, res) })
			if err == nil && res.Error != "" {
				err = errors.New(res.Error)
			}
			return err
		}
	},
}

func printMerge(e *env, res api.Merge) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 8, 1, ' ', 0)
	writeApplied(tw, res.Written, res.Removed, res.Skipped)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range res.Conflicts {
		took := ""
		if c.Took != "" {
			took = " (took " + c.Took + ")"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "conflict %s: %s%s\n", printable(c.Path), printable(c.Why), took)
		switch {
		case c.DiffUnavailable != "":
			b.WriteString("    (no diff: " + printable(c.DiffUnavailable) + ")\n")
		case c.Diff != "":
			writeDiff(&b, c.Diff, c.DiffTruncated, colourful(e.stdout, e.getenv))
		}
		if _, err := io.WriteString(e.stdout, b.String()); err != nil {
			return err
		}
	}
	if res.Undo != "" {
		_, err := fmt.Fprintf(e.stdout, "undo %s\n", res.Undo)
		return err
	}
	return nil
}
