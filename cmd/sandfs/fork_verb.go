package main

import (
	"context"
	"flag"
	"fmt"

	"sandfs/api"
)

// fork: POST /v1/sandboxes {name, from, checkpoint?} (daemon/fork.go).

var forkCommand = &command{
	name:     "fork",
	short:    "make a sandbox that starts as another's tree at a checkpoint",
	synopsis: "fork FROM NAME [--checkpoint ID]",
	about: `Make the sandbox NAME from the sandbox FROM (POST /v1/sandboxes with
"from"): its tree is FROM's at the checkpoint ID, or at one taken now, and
what it writes stays its own (a kernel overlay where the daemon runs as
root, else a copy of the tree; with --sandboxes DIR and its state). Prints
the fork's token, if any, the checkpoint it starts from, and, for a copy,
"copy" and why. "sandfs sandbox rm NAME" discards it.`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		cp := fs.String("checkpoint", "", "the checkpoint `ID` of FROM to start from (default: one taken now)")
		return func(ctx context.Context, args []string) error {
			if len(args) != 2 {
				return usagef("fork takes FROM NAME")
			}
			c, err := cf.client(e.getenv)
			if err != nil {
				return err
			}
			body := map[string]any{"name": args[1], "from": args[0]}
			if *cp != "" {
				body["checkpoint"] = *cp
			}
			var out api.SandboxCreated
			return cf.callAndPrint(ctx, c, e.stdout, jsonRequest("POST", "/v1/sandboxes", body), &out, func([]byte) error {
				if out.Token != "" {
					if _, err := fmt.Fprintln(e.stdout, out.Token); err != nil {
						return err
					}
				}
				if _, err := fmt.Fprintln(e.stdout, "checkpoint", out.Checkpoint); err != nil || !out.Copy {
					return err
				}
				_, err := fmt.Fprintln(e.stdout, "copy", out.CopyWhy)
				return err
			})
		}
	},
}
