package main

import "testing"

// TestParseTraceLine: the lines trace_pipe gives for the tracepoint, for
// our marks and for lost events, and lines that are none of them.
func TestParseTraceLine(t *testing.T) {
	for _, c := range []struct {
		line string
		want traceLine
	}{
		{"              ls-12384   [001] ...1.  3544.918048: fuse_request_send: connection 43 req 4 opcode 3 (FUSE_GETATTR) len 56 \n",
			traceLine{send: true, conn: 43, op: "GETATTR", mark: -1}},
		{"  <...>-7 [000] d..2. 1.5: fuse_request_send: connection 1048577 req 18 opcode 44 (FUSE_READDIRPLUS) len 80\n",
			traceLine{send: true, conn: 1048577, op: "READDIRPLUS", mark: -1}},
		{"x-1 [000] ..... 1.0: fuse_request_send: connection 43 req 4 opcode 99 len 56\n",
			traceLine{send: true, conn: 43, op: "99", mark: -1}},
		{"            bash-12309   [001] ...1.  3544.943208: tracing_mark_write: sandfs-bench-cut 7\n",
			traceLine{mark: 7}},
		{"run-1 [001] ...1. 3.0: tracing_mark_write: sandfs-bench-cut 0\n", traceLine{mark: 0}},
		{"run-1 [001] ...1. 3.0: tracing_mark_write: someone else's 7\n", traceLine{mark: -1}},
		{"CPU:1 [LOST 123 EVENTS]\n", traceLine{lost: 123, mark: -1}},
		{"x-1 [000] ..... 1.0: fuse_request_end: connection 43 req 4 len 16 error 0\n", traceLine{mark: -1}},
		{"x-1 [000] ..... 1.0: fuse_request_send: connection x req 4 opcode 3 (FUSE_GETATTR) len 56\n", traceLine{mark: -1}},
		{"", traceLine{mark: -1}},
	} {
		if got := parseTraceLine(c.line); got != c.want {
			t.Errorf("parseTraceLine(%q) = %+v, want %+v", c.line, got, c.want)
		}
	}
}

// TestKernelDev: stat's st_dev (glibc's encoding) to the kernel's dev_t
// the tracepoint prints as the connection.
func TestKernelDev(t *testing.T) {
	for _, c := range []struct {
		dev  uint64
		want uint32
	}{
		{43, 43},                    // 0:43, an anonymous device as FUSE mounts get
		{0x100000, 256},             // 0:256: minor's high bits above bit 20
		{0x0803, 8<<20 | 3},         // 8:3
		{0x1f00112, 1<<20 | 0x1f12}, // 1:7954
	} {
		if got := kernelDev(c.dev); got != c.want {
			t.Errorf("kernelDev(%#x) = %d, want %d", c.dev, got, c.want)
		}
	}
}
