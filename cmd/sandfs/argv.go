package main

import (
	"os"
	"strings"
	"unsafe"
)

// scrubArgv overwrites, with 'x', every copy of secret in this process's
// argument strings, in place: the Go runtime's os.Args share their bytes
// with the argument area the kernel shows in /proc/PID/cmdline (and ps),
// so a token given with --token stops being readable there by every local
// user once the daemon has read it. It cannot close the window between the
// start and this call; --token-file and SANDFS_TOKEN have none. Whoever
// keeps secret must hold a copy of its own (strings.Clone) first: the flag
// package's value is a slice of the same bytes.
func scrubArgv(secret string) {
	if secret == "" {
		return
	}
	for _, a := range os.Args {
		for off := 0; ; {
			i := strings.Index(a[off:], secret)
			if i < 0 {
				break
			}
			b := unsafe.Slice(unsafe.StringData(a[off+i:]), len(secret))
			for j := range b {
				b[j] = 'x'
			}
			off += i + len(secret)
		}
	}
}
