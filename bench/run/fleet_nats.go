package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"sandfs/natsout"
	"sandfs/natsout/natstest"
)

// stored is how many messages the stream holds (-1: unknown, the stream
// not made yet or the broker away).
func stored(js jetstream.JetStream) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := js.Stream(ctx, natsout.StreamName)
	if err != nil {
		return -1
	}
	info, err := st.Info(ctx)
	if err != nil {
		return -1
	}
	return int64(info.State.Msgs)
}

// journalSeq is the newest seq of the daemon's sandbox default.
func journalSeq(base string) (int64, error) {
	r, err := client.Get(base + "/v1/sandboxes/default/events?last=1")
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	var page struct {
		Latest int64 `json:"latest"`
	}
	return page.Latest, json.NewDecoder(r.Body).Decode(&page)
}

// createLoopEnv makes this binary, run as a child, a create loop: "DIR N"
// (createLoopChild).
const createLoopEnv = "SANDFS_BENCH_CREATE_LOOP"

// createLoop runs this harness's binary again as a child process that
// creates n empty files in dir (on the mount), one open(O_CREAT|O_EXCL)
// and close each, back to back: the mount's fastest appender, not the
// daemon.
func createLoop(dir string, n int) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), createLoopEnv+"="+dir+" "+strconv.Itoa(n))
	return cmd, nil
}

// createLoopChild is the child's loop, when createLoopEnv is set: it exits
// the process.
func createLoopChild(spec string) {
	dir, count, _ := strings.Cut(spec, " ")
	n, err := strconv.Atoi(count)
	if err != nil {
		fatal(fmt.Errorf("%s=%q: %v", createLoopEnv, spec, err))
	}
	for i := 0; i < n; i++ {
		fd, err := syscall.Open(filepath.Join(dir, "f"+strconv.Itoa(i)), syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			fatal(err)
		}
		syscall.Close(fd)
	}
	os.Exit(0)
}

// caughtUp polls the stream every 10 ms until it holds want messages (or
// limit passes), and returns when it first moved past from and when it
// reached want.
func caughtUp(js jetstream.JetStream, from, want int64, limit time.Duration) (first, last time.Time, err error) {
	deadline := time.Now().Add(limit)
	for {
		n := stored(js)
		now := time.Now()
		if n > from && first.IsZero() {
			first = now
		}
		if n >= want {
			return first, now, nil
		}
		if now.After(deadline) {
			return first, now, fmt.Errorf("the stream holds %d messages after %v, want %d", n, limit, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fleetNATS: a daemon with --events and --mount; a create loop in a child
// process on the mount. Live: events appended per second over the loop
// against messages stored per second from the loop's start until the
// stream holds them all (the drain after the loop included). Backlog: the
// same loop with the broker away, then the broker back: messages stored per
// second while the backlog drains (the publisher's own throughput) against
// the live append rate of the same run.
func fleetNATS(c *cfg, t *table) error {
	if err := needApt("fusermount3", "fuse3"); err != nil {
		return err
	}
	dir, err := tmpfsDir(c, "fleet-nats")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root, mnt := filepath.Join(dir, "root"), filepath.Join(dir, "mnt")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	b, err := natstest.StartServer(filepath.Join(dir, "jetstream")) // in this process, the module of go.mod, as the tests run it
	if err != nil {
		return err
	}
	defer b.Stop()
	d, err := startMount(c, root, mnt, "--events", b.URL(), "--events-host", "bench")
	if err != nil {
		return err
	}
	defer d.stop()
	nc, err := nats.Connect(b.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	n := 20_000
	if c.quick {
		n = 4_000
	}
	var appendRate, liveRate, lagMs, drainRate []float64
	// loop runs the create loop in a fresh directory and returns the
	// journal's seq after it (every event reportable: the stream is to
	// hold that many), how many the loop appended, and when it started and
	// how long it took.
	loop := func(name string) (seq1, appended int64, t0 time.Time, took time.Duration, err error) {
		sub := filepath.Join(mnt, name)
		if err = os.Mkdir(sub, 0o755); err != nil {
			return
		}
		seq0, err := journalSeq(d.base)
		if err != nil {
			return
		}
		cmd, err := createLoop(sub, n)
		if err != nil {
			return
		}
		t0 = time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, 0, t0, 0, fmt.Errorf("create loop: %v: %s", err, out)
		}
		took = time.Since(t0)
		seq1, err = journalSeq(d.base)
		return seq1, seq1 - seq0, t0, took, err
	}
	for i := 0; i < c.runs; i++ {
		// Live.
		seq1, appended, t0, took, err := loop(fmt.Sprintf("live%d", i))
		if err != nil {
			return err
		}
		_, last, err := caughtUp(js, -1, seq1, 60*time.Second)
		if err != nil {
			return err
		}
		appendRate = append(appendRate, float64(appended)/took.Seconds())
		liveRate = append(liveRate, float64(appended)/last.Sub(t0).Seconds())
		lagMs = append(lagMs, float64(last.Sub(t0)-took)/1e6)

		// Backlog: the broker away during the loop.
		b.Stop()
		s0 := seq1
		seq1, backlog, _, _, err := loop(fmt.Sprintf("backlog%d", i))
		if err != nil {
			return err
		}
		if err := b.Restart(); err != nil {
			return err
		}
		// first: the first of the backlog stored (the mkdir's event, stored
		// with it, is one more).
		first, last, err := caughtUp(js, s0+1, seq1, 60*time.Second)
		if err != nil {
			return err
		}
		drainRate = append(drainRate, float64(backlog)/last.Sub(first).Seconds())
		logf("fleet nats run %d: %d events in %v (%.0f/s), live stored %.0f/s (drained %.0f ms after the loop); backlog of %d drained at %.0f/s",
			i+1, appended, took.Round(time.Millisecond), appendRate[i], liveRate[i], lagMs[i], backlog, drainRate[i])
	}
	note := fmt.Sprintf("`serve --mount --events` to a nats-server in the harness; a child of the harness (the harness run again) creating %d empty files on the mount back to back (open O_CREAT|O_EXCL, close); roots on tmpfs, the journal's state on the disk", n)
	t.pair("fleet: JetStream messages stored/s, loop start to the last stored (drain included), vs journal events appended/s under the mount's create loop", "ev/s", liveRate, appendRate, atLeast, 0.95,
		note+fmt.Sprintf("; the stream stores an event only after it is appended, so 1.0 is the ceiling and the shortfall is the drain after the loop: median %.0f ms", median(lagMs)))
	t.pair("fleet: JetStream publish throughput draining a backlog (the broker away during the loop) vs the journal's append rate under the create loop", "ev/s", drainRate, appendRate, atLeast, 1.0,
		"the same loop with the broker stopped, then started: messages stored per second from the first to the last of the backlog (the publisher's own rate: one connection, 256 acks in flight); anchor: the live loop's append rate of the same run")
	return nil
}
