package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"sandfs/api"
	"sandfs/internal/statedir"
)

// The registry verbs: the sandboxes of a daemon serving --sandboxes DIR
// (GET, POST, PATCH, DELETE /v1/sandboxes; api.md "The live registry").

var sandboxCommand = &command{
	name:     "sandbox",
	short:    "list, create, adopt, move and remove sandboxes; set a quota; print a token",
	synopsis: "sandbox ls | create NAME [--quota-bytes SIZE] [--quota-entries N] | adopt NAME [--checkpoint ID] | move NAME HOST | rm NAME | quota NAME SIZE[,ENTRIES] | token NAME",
	about: `The daemon's sandboxes (its --sandboxes DIR):
  ls           one line each: name, bytes used and the quota, entries used
               and the quota ("-": no bound) (GET /v1/sandboxes)
  create NAME  make DIR/NAME and serve it; prints its token, if any (POST
               /v1/sandboxes); NAME is a DNS label (a-z, 0-9, inner '-')
  adopt NAME   take the sandbox up on this daemon from the fleet's newest
               replicated checkpoint of it (or --checkpoint ID), whatever
               became of the host that served it; prints its token, the
               checkpoint, and the changes the fleet heard of after it,
               which the tree lacks: the lost changes (POST /v1/sandboxes
               {name, adopt: true}; docs/fleet.md)
  move NAME HOST
               move the sandbox to the fleet's host HOST (its --events-host;
               both with --placement and --replicate): its writes are
               refused (503) meanwhile, its last checkpoint goes through
               the fleet, HOST serves it, and its root and state stay on
               this host's disk; prints the checkpoint and what was sent
               and fetched (POST /v1/sandboxes/NAME/move {to};
               docs/fleet.md "Moving a sandbox")
  rm NAME      unmount, stop and remove the sandbox and its tree (DELETE
               /v1/sandboxes/NAME); the fixed ones (--root, --sandbox) stay
  quota NAME SIZE[,ENTRIES]
               set the sandbox's quota, 0 for no bound (PATCH
               /v1/sandboxes/NAME)
  token NAME   print the sandbox's token from the daemon's state directory
               (STATE/sandboxes/NAME/token; the daemon's user only, no
               request made)`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		var cf clientFlags
		cf.add(fs, e.getenv, true)
		var qBytes sizeFlag
		fs.Var(&qBytes, "quota-bytes", "create: the quota in bytes (`SIZE`, K/M/G/T; 0: --default-quota)")
		qEntries := fs.Int64("quota-entries", 0, "create: the quota in entries (`N`; 0: --default-quota)")
		cp := fs.String("checkpoint", "", "adopt: the fleet's checkpoint `ID` to take up (default: the newest)")
		const usage = "sandbox takes ls, create NAME, adopt NAME, move NAME HOST, rm NAME, quota NAME SIZE[,ENTRIES] or token NAME"
		return func(ctx context.Context, args []string) error {
			if len(args) == 0 {
				return usagef(usage)
			}
			want := map[string]int{"ls": 1, "create": 2, "rm": 2, "quota": 3, "token": 2, "adopt": 2, "move": 3}[args[0]]
			if want == 0 || len(args) != want {
				return usagef(usage)
			}
			if args[0] == "token" {
				return printSandboxToken(cf.state, e, args[1])
			}
			c, err := cf.client(e.getenv)
			if err != nil {
				return err
			}
			switch args[0] {
			case "ls":
				return sandboxList(ctx, &cf, c, e)
			case "create":
				if qBytes < 0 || *qEntries < 0 {
					return usagef("--quota-bytes and --quota-entries must not be negative")
				}
				body := map[string]any{"name": args[1]}
				if qBytes != 0 || *qEntries != 0 {
					body["quota"] = api.Sizes{Bytes: int64(qBytes), Entries: *qEntries}
				}
				var out api.SandboxCreated
				return cf.callAndPrint(ctx, c, e.stdout, jsonRequest("POST", "/v1/sandboxes", body), &out, func([]byte) error {
					if out.Token == "" {
						return nil // a daemon without tokens (--no-auth)
					}
					_, err := fmt.Fprintln(e.stdout, out.Token)
					return err
				})
			case "adopt":
				return sandboxAdopt(ctx, &cf, c, e, args[1], *cp)
			case "move":
				return sandboxMove(ctx, &cf, c, e, args[1], args[2])
			case "rm":
				return cf.callAndPrint(ctx, c, e.stdout, request{method: "DELETE", route: sandboxRoute(args[1], "")}, nil, nil)
			default: // quota
				q, err := parseQuota(args[2])
				if err != nil {
					return usagef("%v", err)
				}
				body := map[string]any{"quota": api.Sizes{Bytes: q.Bytes, Entries: q.Entries}}
				return cf.callAndPrint(ctx, c, e.stdout, jsonRequest("PATCH", sandboxRoute(args[1], ""), body), nil, nil)
			}
		}
	},
}

// sandboxList prints GET /v1/sandboxes, one sandbox a line.
func sandboxList(ctx context.Context, cf *clientFlags, c *client, e *env) error {
	var out api.SandboxList
	return cf.callAndPrint(ctx, c, e.stdout, request{method: "GET", route: "/v1/sandboxes"}, &out, func([]byte) error {
		tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tBYTES\tQUOTA\tENTRIES\tQUOTA")
		for _, s := range out.Sandboxes {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", printable(s.Name), s.Usage.Bytes, bound(s.Quota.Bytes), s.Usage.Entries, bound(s.Quota.Entries))
		}
		return tw.Flush()
	})
}

// bound prints a quota's field, "-" for none.
func bound(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// printSandboxToken prints the token file of the sandbox name in the
// daemon's state directory (statedir.ReadTokenAt: a file of this user only).
func printSandboxToken(stateFlag string, e *env, name string) error {
	if name == "" {
		return usagef("sandbox token takes a NAME")
	}
	state, err := statedir.Default(stateFlag, e.getenv)
	if err != nil {
		return err
	}
	dir := statedir.Sandbox(state, name)
	tok, err := statedir.ReadTokenAt(unix.AT_FDCWD, dir+"/"+statedir.TokenFile)
	if err != nil {
		return fmt.Errorf("token of sandbox %s (%s/%s): %w", name, dir, statedir.TokenFile, err)
	}
	_, err = fmt.Fprintln(e.stdout, tok)
	return err
}
