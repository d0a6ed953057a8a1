package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
)

// The workload's sixth kind: the mirror serving over FUSE over io_uring
// (`serve --mount --fuse-uring`). The kernel offers the ring only to
// mounts made while /sys/module/fuse/parameters/enable_uring is Y, so the
// group sets it for its mounts and puts the old value back; the other
// kinds' daemons (go-fuse, libfuse without liburing) do not take the ring
// when offered it, so they run as before.

const enableURing = "/sys/module/fuse/parameters/enable_uring"

const uringKind = "sandfs-uring"

// wlURingOn sets enable_uring to Y and answers how to put it back; ok is
// false where the kernel has no such parameter (before 6.14, or built
// without CONFIG_FUSE_IO_URING): the kind is not run then.
func wlURingOn() (restore func(), ok bool, err error) {
	old, err := os.ReadFile(enableURing)
	if err != nil {
		return func() {}, false, nil
	}
	if err := os.WriteFile(enableURing, []byte("Y"), 0o644); err != nil {
		return func() {}, false, err
	}
	return func() {
		if err := os.WriteFile(enableURing, bytes.TrimSpace(old), 0o644); err != nil {
			logf("workload: putting %s back to %s: %v", enableURing, old, err)
		}
	}, true, nil
}

var uringMetric = regexp.MustCompile(`(?m)^sandfs_fuse_uring_requests_total\{sandbox="default"\} (\d+)$`)

// uringServed is how many requests the daemon p served over the ring.
func uringServed(p *proc) (int64, error) {
	r, err := http.Get(p.base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return 0, err
	}
	m := uringMetric.FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("/metrics has no sandfs_fuse_uring_requests_total")
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// wlURingRows are the rows of the ring kind: the whole sequence and the
// daemon's CPU per request against passthrough_hp over /dev/fuse, and the
// mirror over /dev/fuse for comparison in the notes.
func wlURingRows(t *table, ur, sfs, php *wlFigures, traced bool, served int64) {
	total := func(f *wlFigures) []float64 { return f.total }
	t.pair("workload whole sequence 1-6, ms: sandfs mirror --fuse-uring vs libfuse passthrough_hp (over /dev/fuse)", "ms",
		scaled(total(ur), 1000), scaled(total(php), 1000), atMost, 1.0,
		fmt.Sprintf("the mirror over /dev/fuse %s (--fuse-uring %s it); requests served over the ring: %s", num(median(total(sfs))*1000, "ms"),
			ratioX(total(ur), total(sfs)), commas(served)))
	t.pair("workload 4 git, ms: sandfs mirror --fuse-uring vs libfuse passthrough_hp (over /dev/fuse)", "ms",
		scaled(ur.git, 1000), scaled(php.git, 1000), atMost, 0,
		fmt.Sprintf("the mirror over /dev/fuse %s", num(median(sfs.git)*1000, "ms")))
	if traced {
		perReq := func(f *wlFigures) []float64 { return perRequest(f.daemonCPU, f.req["total"]) }
		t.pair("workload daemon CPU per request, whole sequence 1-6, µs: sandfs mirror --fuse-uring vs libfuse passthrough_hp", "µs",
			perReq(ur), perReq(php), atMost, 1.5,
			fmt.Sprintf("the mirror over /dev/fuse %s; requests per sequence: --fuse-uring %s, over /dev/fuse %s",
				num(median(perReq(sfs)), "µs"), sampled(ur.req["total"], "req"), sampled(sfs.req["total"], "req")))
	}
}
