// Package integration holds the Linux tests of the built daemon: each test
// builds cmd/sandfs once, runs it as a subprocess on loopback (and later on a
// real FUSE mount under fusermount3), and talks to it as a client would. No
// test here touches files through a mount served by its own process.
package integration
