package main

import (
	"context"
	"flag"
	"fmt"
	"sandfs/daemon"
	"strings"
)

// chmod and chown: the named family's attribute routes (api.md §5), which
// serve every sandbox, "default" included. version: the build.

var chmodCommand = &command{
	name:     "chmod",
	short:    "change the mode of files",
	synopsis: "chmod [-R] [--json] [--sandbox NAME] MODE PATH...",
	about: `Set the permission bits of each PATH to the octal MODE ("0644", "755")
(POST /v1/sandboxes/NAME/fs/chmod); -R changes everything under a
directory too. Setuid and setgid are refused unless the daemon runs with
--allow-setid. Stops at the first error.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		recursive := fs.Bool("R", false, "change directories and their contents")
		return cf.run(e, nargs{2, -1, "chmod takes MODE and at least one PATH"}, func(ctx context.Context, c *client, args []string) error {
			for _, p := range args[1:] {
				r := jsonRequest("POST", cf.fsRoute("/chmod"), map[string]any{"path": p, "mode": args[0], "recursive": *recursive})
				if err := cf.callAndPrint(ctx, c, e.stdout, r, nil, nil); err != nil {
					return err
				}
			}
			return nil
		})
	},
}

var chownCommand = &command{
	name:     "chown",
	short:    "change the owner of files",
	synopsis: "chown [-R] [--json] [--sandbox NAME] OWNER[:GROUP] PATH...",
	about: `Set the owner and/or group of each PATH (POST /v1/sandboxes/NAME/fs/chown):
OWNER, OWNER:GROUP or :GROUP, each a name (looked up on the daemon's
machine) or a number; -R changes everything under a directory too. Stops at
the first error.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		recursive := fs.Bool("R", false, "change directories and their contents")
		return cf.run(e, nargs{2, -1, "chown takes OWNER[:GROUP] and at least one PATH"}, func(ctx context.Context, c *client, args []string) error {
			owner, group, _ := strings.Cut(args[0], ":")
			if owner == "" && group == "" {
				return usagef("chown: %q names no owner and no group", args[0])
			}
			for _, p := range args[1:] {
				body := map[string]any{"path": p, "recursive": *recursive}
				if owner != "" {
					body["uid"] = owner
				}
				if group != "" {
					body["gid"] = group
				}
				if err := cf.callAndPrint(ctx, c, e.stdout, jsonRequest("POST", cf.fsRoute("/chown"), body), nil, nil); err != nil {
					return err
				}
			}
			return nil
		})
	},
}

var versionCommand = &command{
	name:     "version",
	short:    "print the build (also sandfs --version)",
	synopsis: "version",
	about: `Print this binary's build, from Go's build info: "sandfs VERSION
[REVISION TIME] [dirty]" (the module version, "(devel)" for a build from a
work tree; the VCS revision and commit time "go build" stamps; "dirty" when
the tree had uncommitted changes). A daemon says the same in GET /health's
"version".`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		return func(_ context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("version takes no arguments")
			}
			_, err := fmt.Fprintln(e.stdout, daemon.Version())
			return err
		}
	},
}
