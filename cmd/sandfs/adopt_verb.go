package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"sandfs/api"
)

// sandboxAdopt is "sandbox adopt NAME": POST /v1/sandboxes {name, adopt:
// true, checkpoint?} (daemon/adopt.go), printing the sandbox's token, the
// checkpoint it was taken up from, and the lost changes, one a line.
func sandboxAdopt(ctx context.Context, cf *clientFlags, c *client, e *env, name, cp string) error {
	body := map[string]any{"name": name, "adopt": true}
	if cp != "" {
		body["checkpoint"] = cp
	}
	var out api.SandboxAdopted
	return cf.callAndPrint(ctx, c, e.stdout, jsonRequest("POST", "/v1/sandboxes", body), &out, func([]byte) error {
		if out.Token != "" {
			fmt.Fprintln(e.stdout, out.Token)
		}
		fmt.Fprintf(e.stdout, "checkpoint %s (seq %d, from %s): fetched %d objects, %d bytes\n",
			out.Checkpoint, out.Seq, printable(out.From), out.Fetched.Objects, out.Fetched.Bytes)
		more := ""
		if out.Truncated {
			more = " (and more, not listed)"
		}
		fmt.Fprintf(e.stdout, "lost changes: %d%s\n", len(out.Lost), more)
		if len(out.Lost) == 0 {
			return nil
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tTYPE\tPATH\tHOST\tTIME")
		for _, l := range out.Lost {
			p := printable(l.Path)
			if l.OldPath != "" {
				p = printable(l.OldPath) + " -> " + p
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", l.Seq, printable(l.Type), p, printable(l.Host), printable(l.Time))
		}
		return tw.Flush()
	})
}
