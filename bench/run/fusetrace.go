package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fuseTrace counts the requests the kernel sends to FUSE daemons, by
// connection and opcode, with the tracepoint fuse:fuse_request_send in a
// tracing instance of its own (so the system's trace buffer and anyone
// else's tracing are left alone), filtered to the connections of the
// mounts being measured. The tracepoint fires as a request is queued for
// the daemon; FORGET and BATCH_FORGET go by a queue of their own that it
// does not see, nor INTERRUPT. This kernel has no hist triggers, so the
// harness reads trace_pipe as it fills and counts; cut writes a numbered
// line to trace_marker and waits for the reader to reach it, so the
// counts it gives are exactly those of the requests sent before it.
type fuseTrace struct {
	dir     string // the instance
	unmount string // tracefs mounted by us, unmounted at close ("": it was there)
	marker  *os.File
	cuts    chan traceCut
	done    chan struct{} // closed when the reader returns
	seq     int
	closed  bool
}

// traceCut is what the reader counted between two marks.
type traceCut struct {
	mark int
	reqs map[uint32]map[string]int // connection → opcode → requests
	lost int                       // events the ring buffer dropped ([LOST n EVENTS])
	err  error
}

const (
	tracefs     = "/sys/kernel/tracing"
	traceMark   = "sandfs-bench-cut "
	traceBuffer = 16384 // KiB per CPU: a whole step's events even if the reader falls behind
)

// startFuseTrace starts counting the requests sent on conns (kernel device
// numbers, as fuseConn gives them).
func startFuseTrace(conns []uint32) (*fuseTrace, error) {
	t := &fuseTrace{dir: filepath.Join(tracefs, "instances", "sandfs-bench-workload"), cuts: make(chan traceCut, 1), done: make(chan struct{})}
	if _, err := os.Stat(filepath.Join(tracefs, "instances")); err != nil {
		if err := syscall.Mount("nodev", tracefs, "tracefs", 0, ""); err != nil {
			return nil, fmt.Errorf("mount tracefs at %s: %v", tracefs, err)
		}
		t.unmount = tracefs
	}
	ev := filepath.Join("events", "fuse", "fuse_request_send")
	if _, err := os.Stat(filepath.Join(tracefs, ev)); err != nil {
		t.close()
		return nil, fmt.Errorf("no tracepoint fuse:fuse_request_send in this kernel: %v", err)
	}
	t.removeInstance() // a run that died left it
	if err := os.Mkdir(t.dir, 0o700); err != nil {
		t.close()
		return nil, fmt.Errorf("tracing instance: %v", err)
	}
	var filter []string
	for _, c := range conns {
		filter = append(filter, fmt.Sprintf("connection == %d", c))
	}
	for _, w := range [][2]string{
		{"buffer_size_kb", strconv.Itoa(traceBuffer)},
		{filepath.Join(ev, "filter"), strings.Join(filter, " || ")},
		{filepath.Join(ev, "enable"), "1"},
	} {
		if err := os.WriteFile(filepath.Join(t.dir, w[0]), []byte(w[1]), 0); err != nil {
			t.close()
			return nil, fmt.Errorf("tracing: %s: %v", w[0], err)
		}
	}
	pipe, err := os.Open(filepath.Join(t.dir, "trace_pipe"))
	if err != nil {
		t.close()
		return nil, err
	}
	if t.marker, err = os.OpenFile(filepath.Join(t.dir, "trace_marker"), os.O_WRONLY, 0); err != nil {
		pipe.Close()
		t.close()
		return nil, err
	}
	go t.read(pipe)
	return t, nil
}

// read counts the lines of trace_pipe, sending the counts at each mark,
// until the mark 0 that close writes.
func (t *fuseTrace) read(pipe *os.File) {
	defer close(t.done)
	defer pipe.Close()
	r := bufio.NewReaderSize(pipe, 1<<20)
	cur := traceCut{reqs: map[uint32]map[string]int{}}
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			cur.err = fmt.Errorf("trace_pipe: %v", err)
			t.cuts <- cur
			return
		}
		ev := parseTraceLine(l)
		switch {
		case ev.send:
			m := cur.reqs[ev.conn]
			if m == nil {
				m = map[string]int{}
				cur.reqs[ev.conn] = m
			}
			m[ev.op]++
		case ev.lost > 0:
			cur.lost += ev.lost
		case ev.mark >= 0:
			cur.mark = ev.mark
			t.cuts <- cur
			if ev.mark == 0 {
				return
			}
			cur = traceCut{reqs: map[uint32]map[string]int{}}
		}
	}
}

// cut gives the requests sent since the last cut.
func (t *fuseTrace) cut() (traceCut, error) {
	t.seq++
	return t.mark(t.seq)
}

func (t *fuseTrace) mark(n int) (traceCut, error) {
	if _, err := fmt.Fprintf(t.marker, "%s%d\n", traceMark, n); err != nil {
		return traceCut{}, fmt.Errorf("trace_marker: %v", err)
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case c := <-t.cuts:
			if c.err != nil {
				return c, c.err
			}
			if c.mark == n {
				return c, nil
			}
		case <-t.done:
			return traceCut{}, fmt.Errorf("the trace reader stopped before mark %d", n)
		case <-timeout:
			return traceCut{}, fmt.Errorf("the trace reader never reached mark %d", n)
		}
	}
}

// close stops the event, lets the reader finish, and removes the instance
// (and tracefs, when it was mounted here).
func (t *fuseTrace) close() {
	if t.closed {
		return
	}
	t.closed = true
	os.WriteFile(filepath.Join(t.dir, "events", "fuse", "fuse_request_send", "enable"), []byte("0"), 0)
	if t.marker != nil {
		t.mark(0)
		t.marker.Close()
	}
	t.removeInstance()
	if t.unmount != "" {
		syscall.Unmount(t.unmount, 0)
	}
}

func (t *fuseTrace) removeInstance() {
	if _, err := os.Stat(t.dir); err != nil {
		return
	}
	os.WriteFile(filepath.Join(t.dir, "events", "fuse", "fuse_request_send", "enable"), []byte("0"), 0)
	os.WriteFile(filepath.Join(t.dir, "events", "fuse", "fuse_request_send", "filter"), []byte("0"), 0)
	for i := 0; i < 50; i++ { // EBUSY while a reader still holds trace_pipe
		if err := syscall.Rmdir(t.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	logf("tracing: could not remove %s", t.dir)
}

// traceLine is one line of trace_pipe.
type traceLine struct {
	send bool   // a fuse_request_send event
	conn uint32 // its connection
	op   string // its opcode's name without FUSE_ (LOOKUP), or the number
	mark int    // a line of ours on trace_marker: its number; else -1
	lost int    // a [LOST n EVENTS] line: n
}

// parseTraceLine reads one line of trace_pipe, as
//
//	tar-1234 [001] ...1.  3544.918048: fuse_request_send: connection 43 req 4 opcode 3 (FUSE_GETATTR) len 56
//	bench-99 [000] ...1.  3544.943208: tracing_mark_write: sandfs-bench-cut 7
//	CPU:1 [LOST 123 EVENTS]
func parseTraceLine(l string) traceLine {
	ev := traceLine{mark: -1}
	if i := strings.Index(l, "fuse_request_send: "); i >= 0 {
		f := strings.Fields(l[i+len("fuse_request_send: "):])
		if len(f) < 6 || f[0] != "connection" || f[4] != "opcode" {
			return ev
		}
		c, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil {
			return ev
		}
		ev.send, ev.conn, ev.op = true, uint32(c), f[5]
		if len(f) > 6 && strings.HasPrefix(f[6], "(") {
			ev.op = strings.TrimPrefix(strings.Trim(f[6], "()"), "FUSE_")
		}
		return ev
	}
	if i := strings.Index(l, "tracing_mark_write: "+traceMark); i >= 0 {
		if n, err := strconv.Atoi(strings.TrimSpace(l[i+len("tracing_mark_write: "+traceMark):])); err == nil {
			ev.mark = n
		}
		return ev
	}
	if i := strings.Index(l, "[LOST "); i >= 0 {
		if f := strings.Fields(l[i+len("[LOST "):]); len(f) > 0 {
			ev.lost, _ = strconv.Atoi(f[0])
		}
	}
	return ev
}

// fuseConn is the connection number the tracepoint gives for the FUSE
// mount at mnt: the kernel's dev_t of its superblock, major << 20 | minor,
// from stat's st_dev in glibc's encoding.
func fuseConn(mnt string) (uint32, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		return 0, err
	}
	return kernelDev(st.Dev), nil
}

func kernelDev(dev uint64) uint32 {
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	return uint32(major<<20 | minor)
}

// total is the requests of a cut on conn; byOp adds them by opcode to m.
func (c traceCut) total(conn uint32) int {
	n := 0
	for _, v := range c.reqs[conn] {
		n += v
	}
	return n
}

func (c traceCut) byOp(conn uint32, m map[string]int) {
	for op, v := range c.reqs[conn] {
		m[op] += v
	}
}
