package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandfs/fusefs"
)

// watchdog fails a test whose requests to a daemon's mount (or API) stop
// moving: an operation under way for longer than stuckAfter makes it dump
// the daemon's goroutines (its --debug-listen address) and the kernel
// stacks of the daemon's threads and of this process's, then abort the
// mount's FUSE connection, which ends every request still waiting on it,
// so the test fails instead of hanging.
type watchdog struct {
	t     *testing.T
	d     *Daemon
	dbg   string // the daemon's --debug-listen address
	mnt   string
	mu    sync.Mutex
	ops   map[int]inFlight
	next  int
	fire  atomic.Bool
	done  chan struct{}
	ended sync.WaitGroup
}

type inFlight struct {
	what  string
	since time.Time
}

func newWatchdog(t *testing.T, d *Daemon, dbg, mnt string) *watchdog {
	w := &watchdog{t: t, d: d, dbg: dbg, mnt: mnt, ops: map[int]inFlight{}, done: make(chan struct{})}
	w.ended.Add(1)
	go w.watch()
	return w
}

// begin notes an operation under way; the function it returns ends it.
func (w *watchdog) begin(what string) (end func()) {
	w.mu.Lock()
	id := w.next
	w.next++
	w.ops[id] = inFlight{what, time.Now()}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.ops, id)
		w.mu.Unlock()
	}
}

// fired reports whether the watchdog found a stuck operation.
func (w *watchdog) fired() bool { return w.fire.Load() }

func (w *watchdog) stop() {
	close(w.done)
	w.ended.Wait()
}

func (w *watchdog) watch() {
	defer w.ended.Done()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-tick.C:
		}
		if stuck := w.stuck(); len(stuck) > 0 {
			w.fire.Store(true)
			w.t.Errorf("requests stuck for more than %v: %s\n%s", stuckAfter, strings.Join(stuck, "; "), w.dump())
			if err := fusefs.AbortMount(w.mnt); err != nil {
				w.t.Errorf("abort the FUSE connection of %s: %v", w.mnt, err)
			}
			return
		}
	}
}

// stuck lists the operations under way for longer than stuckAfter.
func (w *watchdog) stuck() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, o := range w.ops {
		if took := time.Since(o.since); took > stuckAfter {
			out = append(out, fmt.Sprintf("%s (%v)", o.what, took.Round(time.Second)))
		}
	}
	sort.Strings(out)
	return out
}

// dump is the daemon's goroutines and the kernel stacks of its threads
// and of this process's.
func (w *watchdog) dump() string {
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+w.dbg+"/debug/pprof/goroutine?debug=2", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		fmt.Fprintf(&b, "daemon goroutines: %v\n", err)
	} else {
		g, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&b, "== daemon goroutines\n%s\n", g)
	}
	fmt.Fprintf(&b, "== daemon kernel stacks (pid %d)\n%s", w.d.cmd.Process.Pid, kernelStacks(w.d.cmd.Process.Pid))
	fmt.Fprintf(&b, "== this process's kernel stacks\n%s", kernelStacks(os.Getpid()))
	return b.String()
}

// kernelStacks reads /proc/PID/task/*/stack (root only).
func kernelStacks(pid int) string {
	var b strings.Builder
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, task := range tasks {
		stack, err := os.ReadFile(filepath.Join(task, "stack"))
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", task, err)
			continue
		}
		if s := strings.TrimSpace(string(stack)); s != "" {
			comm, _ := os.ReadFile(filepath.Join(task, "comm"))
			fmt.Fprintf(&b, "%s (%s):\n%s\n", task, strings.TrimSpace(string(comm)), s)
		}
	}
	return b.String()
}
