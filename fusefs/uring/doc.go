// Package uring serves a FUSE connection's requests over io_uring (FUSE
// over io_uring, kernel 6.14+, with /sys/module/fuse/parameters/enable_uring
// set): instead of read(2) and write(2) on /dev/fuse, each queue registers
// buffers with the kernel once (FUSE_IO_URING_CMD_REGISTER), the kernel
// writes a request into one and completes its command, and the reply goes
// back in the same buffers with the command that fetches the next request
// (FUSE_IO_URING_CMD_COMMIT_AND_FETCH): one system call per request, not two.
//
// Its rule: this package knows the wire (io_uring's rings, FUSE's ring
// layouts) and nothing of sandfs; it imports no sandfs package. It serves
// each request through a Handler it is given (go-fuse's ProtocolServer over
// the very RawFileSystem the /dev/fuse loop serves), so a request is served
// by the same handlers, with the same rules, whichever way it came.
//
// The kernel wants one queue per possible CPU (a request goes to the queue
// of the CPU its caller runs on) and switches a connection to the ring only
// once every queue has an entry registered. Each queue here is one thread
// (a goroutine locked to its OS thread, which made its ring: the rings are
// single-issuer and run their completion work when that thread waits) with
// Config.Depth entries, each a header buffer and a payload buffer of
// Config.PayloadSize, mapped outside the Go heap.
//
// What does not come over the ring: FORGET, INTERRUPT and the
// notifications still use /dev/fuse. An INTERRUPT for a request being
// served on the ring reaches go-fuse's /dev/fuse loop, which does not know
// the request and answers EAGAIN; the kernel looks for the request among
// /dev/fuse's, does not find it, and drops the interrupt. So the interrupt
// is not delivered: the handler runs to its end.
//
// The ring's end is the connection's: at unmount or abort the kernel
// completes every entry with an error (ENOTCONN), each queue ends when all
// its entries have, frees its buffers and its ring, and the last one
// closes the /dev/fuse descriptor it was given (Transport.Done). A queue
// that has to stop while the connection lives (an io_uring_enter error)
// would leave the requests of its CPU waiting for ever: Config.OnFail is
// called so the caller ends the connection (fusefs aborts it).
package uring
