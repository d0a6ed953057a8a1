package main

import (
	"context"
	"fmt"

	"sandfs/api"
)

// sandboxMove is "sandbox move NAME HOST": POST /v1/sandboxes/NAME/move
// {to: HOST} (daemon/move.go), printing where the sandbox is served now,
// from which checkpoint, and what went through the fleet.
func sandboxMove(ctx context.Context, cf *clientFlags, c *client, e *env, name, to string) error {
	var out api.SandboxMoved
	return cf.callAndPrint(ctx, c, e.stdout, jsonRequest("POST", sandboxRoute(name, "/move"), map[string]any{"to": to}), &out, func([]byte) error {
		fmt.Fprintf(e.stdout, "sandbox %s moved from %s to %s (%s) in %.1fs\n",
			printable(out.Name), printable(out.From), printable(out.To), printable(out.URL), out.Seconds)
		_, err := fmt.Fprintf(e.stdout, "checkpoint %s (seq %d): sent %d objects, %d bytes; fetched %d objects, %d bytes\n",
			out.Checkpoint, out.Seq, out.Sent.Objects, out.Sent.Bytes, out.Fetched.Objects, out.Fetched.Bytes)
		return err
	})
}
