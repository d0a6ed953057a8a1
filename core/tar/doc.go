// Package tar moves directory trees in and out of a sandbox as
// uncompressed tar streams: [Write] archives a directory as it walks it,
// [Extract] extracts an archive into a directory.
//
// # What it may import
//
// sandfs/core (the Sandbox and the surface core exports for its
// subpackages, core/subpackages.go: resolution beneath the root, the
// descriptor primitives, the journal's Tell, usage reservations),
// core/journal, internal/safeat and the standard library. core does not
// import tar; the transfer and agent routes (rest) call it.
//
// A tree is walked by directory fd, each name opened relative to its
// parent with O_NOFOLLOW, never into another mount: Write archives
// symlinks as symlinks and leaves sockets, FIFOs and devices out.
//
// # Tar extraction
//
// [Extract] refuses a hostile archive whole: entries are extracted
// into a staging directory beside the destination, each one checked (no
// absolute names, no "..", no device nodes or FIFOs, no symlink or hard link
// whose target leaves the destination, no entry written through a symlink),
// and only a fully valid archive is merged into the destination. A file
// entry is refused on its declared size (for a GNU sparse entry, the logical
// size) against what is left of the byte limit before anything is written,
// and a sparse entry is written with holes, so a few KiB of archive never
// costs a terabyte of zeros. Directory
// modes are set last, each directory opened again below the stage one
// component at a time with O_NOFOLLOW and changed through its descriptor;
// the stage itself, and a directory merged into, likewise.
package tar
