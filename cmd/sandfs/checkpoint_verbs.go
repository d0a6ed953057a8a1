package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"sandfs/api"
	"text/tabwriter"
	"time"
)

// The history verbs: checkpoints of a sandbox's tree and restore (the
// named family's routes of api.md §5a). One line per item; --json prints
// the daemon's answer.

// sandboxRoute is the named family's route of the sandbox name.
func sandboxRoute(name, rest string) string { return "/v1/sandboxes/" + url.PathEscape(name) + rest }

func checkpointLine(cp api.Checkpoint) string {
	name := ""
	if cp.Name != "" {
		name = "  " + printable(cp.Name)
	}
	return fmt.Sprintf("%s  %s  %s  seq %d  %d files  %d dirs  %d symlinks  %d bytes  %d new%s",
		cp.ID, cp.CreatedAt.UTC().Format(time.RFC3339), cp.Reason, cp.Seq, cp.Files, cp.Dirs, cp.Symlinks, cp.Bytes, cp.NewBytes, name)
}

var checkpointCommand = &command{
	name:     "checkpoint",
	short:    "record the tree as a checkpoint, or delete one",
	synopsis: "checkpoint [--json] [--sandbox S] [--name N] [--skip-excluded] | checkpoint rm ID...",
	about: `Record the sandbox's tree as it is now (POST /v1/sandboxes/S/checkpoints):
every path, type, mode, owner, mtime, symlink target and content, into the
daemon's state directory. Prints one line: id, time, reason, journal seq,
counts, bytes, and the bytes new to the store. The default excludes (.git,
node_modules, …) are kept unless --skip-excluded.
"checkpoint rm ID..." deletes checkpoints (DELETE …/checkpoints/ID),
printing each id deleted.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		sandbox := &cf.sandbox
		name := fs.String("name", "", "a `NAME` for the checkpoint")
		skip := fs.Bool("skip-excluded", false, "leave out the default excludes (.git, node_modules, …)")
		return cf.run(e, nargs{0, -1, ""}, func(ctx context.Context, c *client, args []string) error {
			if len(args) > 0 && args[0] == "rm" {
				if len(args) == 1 {
					return usagef("checkpoint rm takes at least one ID")
				}
				for _, id := range args[1:] {
					var out struct {
						ID string `json:"id"`
					}
					if err := cf.callAndPrint(ctx, c, e.stdout, request{method: "DELETE", route: sandboxRoute(*sandbox, "/checkpoints/"+url.PathEscape(id))}, &out, func([]byte) error {
						_, err := fmt.Fprintf(e.stdout, "deleted %s\n", printable(out.ID))
						return err
					}); err != nil {
						return err
					}
				}
				return nil
			}
			if len(args) > 0 {
				return usagef("checkpoint takes no arguments but rm ID... (got %q)", args[0])
			}
			var cp api.Checkpoint
			body := api.CheckpointRequest{Name: *name, SkipExcluded: *skip}
			return cf.callAndPrint(ctx, c, e.stdout, jsonRequest("POST", sandboxRoute(*sandbox, "/checkpoints"), body), &cp, func([]byte) error {
				_, err := fmt.Fprintln(e.stdout, checkpointLine(cp))
				return err
			})
		})
	},
}

var checkpointsCommand = &command{
	name:     "checkpoints",
	short:    "list the checkpoints",
	synopsis: "checkpoints [--json] [--sandbox S]",
	about: `List the sandbox's checkpoints, oldest first (GET
/v1/sandboxes/S/checkpoints), one a line as "sandfs checkpoint" prints it.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		sandbox := &cf.sandbox
		return cf.run(e, nargs{0, 0, "checkpoints takes no arguments"}, func(ctx context.Context, c *client, args []string) error {
			var list api.CheckpointList
			return cf.callAndPrint(ctx, c, e.stdout, request{method: "GET", route: sandboxRoute(*sandbox, "/checkpoints")}, &list, func([]byte) error {
				for _, cp := range list.Checkpoints {
					if _, err := fmt.Fprintln(e.stdout, checkpointLine(cp)); err != nil {
						return err
					}
				}
				return nil
			})
		})
	},
}

var restoreCommand = &command{
	name:     "restore",
	short:    "bring the tree back to a checkpoint",
	synopsis: "restore [--json] [--sandbox S] [--path P]... [--actor A] [--dry-run] ID",
	about: `Bring the sandbox's tree, or only the paths given (--path, files or
subtrees, repeatable), back to the checkpoint ID (POST
/v1/sandboxes/S/restore). With --actor, only what that actor (an
X-Sandfs-Actor name, or fuse:COMM for the mount's processes) changed after
the checkpoint; a path someone else changed after it is skipped, never
overwritten. --dry-run changes nothing and tells what would be done.
One line per path: "write P", "remove P", "skip P: REASON"; then, unless
a dry run, "undo ID": restoring that checkpoint undoes this restore.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		sandbox := &cf.sandbox
		var paths multiFlag
		fs.Var(&paths, "path", "restore only `P` (a file or subtree; repeatable)")
		actor := fs.String("actor", "", "restore only what `A` changed after the checkpoint")
		dry := fs.Bool("dry-run", false, "change nothing; tell what would be done")
		return cf.run(e, nargs{1, 1, "restore takes one checkpoint ID"}, func(ctx context.Context, c *client, args []string) error {
			body := map[string]any{"checkpoint": args[0], "paths": []string(paths), "actor": *actor, "dry_run": *dry}
			var res api.Restore
			return cf.callAndPrint(ctx, c, e.stdout, jsonRequest("POST", sandboxRoute(*sandbox, "/restore"), body), &res, func([]byte) error {
				tw := tabwriter.NewWriter(e.stdout, 0, 8, 1, ' ', 0)
				writeApplied(tw, res.Written, res.Removed, res.Skipped)
				if res.Undo != "" {
					fmt.Fprintf(tw, "undo\t%s\n", res.Undo)
				}
				return tw.Flush()
			})
		})
	},
}

// writeApplied writes what a restore or a merge did, a line per path:
// "write P", "remove P", "skip P: REASON".
func writeApplied(w io.Writer, written, removed []string, skipped []api.RestoreSkip) {
	for _, p := range written {
		fmt.Fprintf(w, "write\t%s\n", printable(p))
	}
	for _, p := range removed {
		fmt.Fprintf(w, "remove\t%s\n", printable(p))
	}
	for _, s := range skipped {
		fmt.Fprintf(w, "skip\t%s: %s\n", printable(s.Path), printable(s.Reason))
	}
}
