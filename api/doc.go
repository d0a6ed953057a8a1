// Package api holds the wire types the daemon's HTTP face answers and its
// own client (cmd/sandfs) reads: one declaration per shape, so the two
// never drift apart. Only types and their JSON names live here, no
// behaviour; it imports nothing of sandfs, and rest and cmd import it.
package api
