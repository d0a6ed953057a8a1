package uring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The FUSE side of include/uapi/linux/fuse.h for io_uring.
const (
	cmdRegister       = 1 // FUSE_IO_URING_CMD_REGISTER
	cmdCommitAndFetch = 2 // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

	// struct fuse_uring_req_header: in_out (the fuse_in_header in, the
	// fuse_out_header back), op_in (the opcode's own header), then struct
	// fuse_uring_ent_in_out {flags, commit_id, payload_sz, padding,
	// reserved}.
	hdrInOut    = 0
	hdrOpIn     = 128
	hdrEntInOut = 256
	hdrSize     = 288
	opInMax     = 128

	inHeaderSize  = 40 // struct fuse_in_header
	outHeaderSize = 16 // struct fuse_out_header
	opWrite       = 16 // FUSE_WRITE: its payload is read in place
)

// Handler serves one request given as /dev/fuse would give it (in, as
// iovecs) and writes the reply as /dev/fuse would take it (out: the
// fuse_out_header first); go-fuse's *fuse.ProtocolServer is one. It
// returns the bytes written.
type Handler interface {
	HandleRequest(in, out [][]byte) (int, fuse.Status)
}

// Config is what Start needs.
type Config struct {
	// Fd is the connection's /dev/fuse descriptor, a duplicate that the
	// transport owns and closes once every queue has ended.
	Fd int
	// Handler serves the requests.
	Handler Handler
	// PayloadSize is each entry's payload buffer: the kernel refuses one
	// smaller than max(max_write, max_pages pages) of the INIT.
	PayloadSize int
	// Queues is how many queues to register: the kernel wants one per
	// possible CPU (0: that many).
	Queues int
	// Depth is how many entries each queue registers (0: 2).
	Depth int
	Log   *slog.Logger
	// OnFail is called (once) when a queue stops while the connection
	// lives: the kernel would hold the requests sent to that queue for
	// ever, so the caller should end the connection (abort it). Nil: the
	// error is logged only.
	OnFail func(error)
}

// Transport serves a FUSE connection's requests over io_uring: a thread
// per queue, each with its own ring.
type Transport struct {
	cfg      Config
	requests atomic.Uint64
	wg       sync.WaitGroup
	done     chan struct{}
	serving  atomic.Bool // every queue registered: go on (read once gate is closed)
	failed   sync.Once
}

// fail reports a queue that cannot go on.
func (t *Transport) fail(err error) {
	t.cfg.Log.Error("fuse io_uring: "+err.Error()+": the requests of its CPU would wait for ever", "err", err)
	t.failed.Do(func() {
		if t.cfg.OnFail != nil {
			t.cfg.OnFail(err)
		}
	})
}

// Start registers every queue's entries with the kernel and serves them
// until the connection ends (unmount, abort). An error means the ring is
// not serving: what did register is cancelled, and the kernel keeps
// sending requests over /dev/fuse (it switches only once every queue has
// an entry registered).
func Start(cfg Config) (*Transport, error) {
	if cfg.Queues <= 0 {
		n, err := PossibleCPUs()
		if err != nil {
			unix.Close(cfg.Fd)
			return nil, err
		}
		cfg.Queues = n
	}
	if cfg.Depth <= 0 {
		cfg.Depth = 2
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	t := &Transport{cfg: cfg, done: make(chan struct{})}
	started := make(chan error, cfg.Queues)
	gate := make(chan struct{})
	for qid := 0; qid < cfg.Queues; qid++ {
		t.wg.Add(1)
		go t.queue(qid, started, gate)
	}
	var errs []error
	for range cfg.Queues {
		if err := <-started; err != nil {
			errs = append(errs, err)
		}
	}
	ok := len(errs) == 0
	t.serving.Store(ok)
	close(gate)
	go func() {
		t.wg.Wait()
		unix.Close(cfg.Fd)
		close(t.done)
	}()
	if !ok {
		<-t.done
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// Requests is how many requests the rings served.
func (t *Transport) Requests() uint64 { return t.requests.Load() }

// Done is closed once every queue has ended and everything is freed.
func (t *Transport) Done() <-chan struct{} { return t.done }

// entry is one registered ring entry: its two buffers and its iovecs,
// all outside the Go heap (the kernel writes them while no Go code is
// looking).
type entry struct {
	hdr     []byte // hdrSize: struct fuse_uring_req_header
	payload []byte
	iov     []byte // two struct iovec: hdr, payload
	scratch []byte // an input payload that must outlive the reply's writing
	out     [outHeaderSize]byte
	live    bool
}

// queue is one queue's thread: it makes the ring (on this thread: the
// ring is single-issuer), registers the entries, says so on started, and
// serves until every entry has ended.
func (t *Transport) queue(qid int, started chan<- error, gate <-chan struct{}) {
	defer t.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ents, mem, err := newEntries(t.cfg.Depth, t.cfg.PayloadSize)
	if err != nil {
		started <- fmt.Errorf("queue %d: %w", qid, err)
		return
	}
	defer unix.Munmap(mem)
	ring, err := NewRing(uint32(nextPow2(2*t.cfg.Depth)), SetupSingleIssuer|SetupDeferTaskrun)
	if err != nil {
		started <- fmt.Errorf("queue %d: %w", qid, err)
		return
	}
	defer ring.Close()
	for i, e := range ents {
		sqe := t.sqe(qid, uint64(i), cmdRegister, 0)
		sqe.Addr = uint64(uintptr(unsafe.Pointer(&e.iov[0])))
		sqe.Len = 2
		if err := ring.Queue(sqe); err != nil {
			started <- fmt.Errorf("queue %d: %w", qid, err)
			return
		}
		e.live = true
	}
	if err := ring.Submit(0); err != nil {
		started <- fmt.Errorf("queue %d: register: %w", qid, err)
		return
	}
	// A refused REGISTER completes at once; an accepted one completes
	// only when it carries a request, which is served below: peek, do not
	// reap.
	var refused error
	ring.Peek(func(c CQE) {
		if c.Res < 0 && refused == nil {
			refused = fmt.Errorf("queue %d: register: %w", qid, syscall.Errno(-c.Res))
		}
	})
	started <- refused
	if refused != nil {
		return // Close cancels the entries that did register
	}
	// Serve only if every queue registered: otherwise the kernel never
	// switches to the ring, and closing it cancels these entries.
	<-gate
	if t.serving.Load() {
		t.serve(qid, ring, ents)
	}
}

// serve is the queue's loop: wait for completions, serve each request
// and queue its COMMIT_AND_FETCH, which hands the reply back and the
// entry out for the next request, submitted with the next wait.
func (t *Transport) serve(qid int, ring *Ring, ents []*entry) {
	live := len(ents)
	for live > 0 {
		if err := ring.Submit(1); err != nil {
			t.fail(fmt.Errorf("queue %d stops: %w", qid, err))
			return
		}
		ring.Reap(func(c CQE) {
			e := ents[c.UserData]
			if c.Res < 0 {
				// The connection ends (ENOTCONN, ENODEV at unmount,
				// ECANCELED): this entry is done.
				if e.live {
					e.live = false
					live--
				}
				return
			}
			t.handle(e)
			t.requests.Add(1)
			sqe := t.sqe(qid, c.UserData, cmdCommitAndFetch, binary.LittleEndian.Uint64(e.hdr[hdrEntInOut+8:]))
			if err := ring.Queue(sqe); err != nil {
				// This entry will not come back: no CQE will end it.
				t.fail(fmt.Errorf("queue %d cannot commit: %w", qid, err))
				e.live = false
				live--
			}
		})
	}
}

// sqe is an IORING_OP_URING_CMD entry for the connection: cmd_op in the
// low half of off, struct fuse_uring_cmd_req {flags, commit_id, qid} in
// the command area.
func (t *Transport) sqe(qid int, user uint64, op uint32, commitID uint64) *SQE {
	s := &SQE{Opcode: OpURingCmd, Fd: int32(t.cfg.Fd), Off: uint64(op), UserData: user}
	binary.LittleEndian.PutUint64(s.Cmd[8:], commitID)
	binary.LittleEndian.PutUint16(s.Cmd[16:], uint16(qid))
	return s
}

// handle serves the request the kernel put in e and leaves the reply
// there: the fuse_out_header in in_out, the rest in the payload buffer,
// its size in ent_in_out.payload_sz.
func (t *Transport) handle(e *entry) {
	h := e.hdr
	inHdr := h[hdrInOut : hdrInOut+inHeaderSize]
	length := int(binary.LittleEndian.Uint32(inHdr[0:]))
	opcode := binary.LittleEndian.Uint32(inHdr[4:])
	unique := binary.LittleEndian.Uint64(inHdr[8:])
	payloadSz := min(int(binary.LittleEndian.Uint32(h[hdrEntInOut+16:])), len(e.payload))
	// The opcode's header went to op_in, what follows it (names, data)
	// to the payload; the in header's length counts them all.
	opSz := min(max(length-inHeaderSize-payloadSz, 0), opInMax)
	in := [][]byte{inHdr, h[hdrOpIn : hdrOpIn+opSz]}
	if payloadSz > 0 {
		p := e.payload[:payloadSz]
		if opcode != opWrite {
			// The reply is written into the same buffer: keep the input
			// (a name, an xattr) apart while it may still be read.
			if cap(e.scratch) < payloadSz {
				e.scratch = make([]byte, payloadSz)
			}
			p = e.scratch[:copy(e.scratch[:payloadSz], p)]
		}
		in = append(in, p)
	}
	clear(e.out[:])
	n, st := t.cfg.Handler.HandleRequest(in, [][]byte{e.out[:], e.payload})
	if !st.Ok() || n < outHeaderSize {
		// Unparseable, or no reply (nothing the kernel sends over the
		// ring wants none): an error, so the entry comes back.
		if st.Ok() {
			st = fuse.ENOSYS
		}
		n = outHeaderSize
		binary.LittleEndian.PutUint32(e.out[0:], outHeaderSize)
		binary.LittleEndian.PutUint32(e.out[4:], uint32(-int32(st)))
		binary.LittleEndian.PutUint64(e.out[8:], unique)
	}
	copy(h[hdrInOut:], e.out[:])
	binary.LittleEndian.PutUint32(h[hdrEntInOut+16:], uint32(n-outHeaderSize))
}

// newEntries maps depth entries' buffers in one region.
func newEntries(depth, payloadSize int) ([]*entry, []byte, error) {
	page := os.Getpagesize()
	payloadSize = (payloadSize + page - 1) / page * page
	const small = 4096 // header and iovecs of one entry
	mem, err := unix.Mmap(-1, 0, depth*(small+payloadSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap buffers: %w", err)
	}
	ents := make([]*entry, depth)
	for i := range ents {
		base := mem[i*(small+payloadSize):]
		e := &entry{hdr: base[:hdrSize], iov: base[hdrSize : hdrSize+32], payload: base[small : small+payloadSize]}
		binary.LittleEndian.PutUint64(e.iov[0:], uint64(uintptr(unsafe.Pointer(&e.hdr[0]))))
		binary.LittleEndian.PutUint64(e.iov[8:], uint64(len(e.hdr)))
		binary.LittleEndian.PutUint64(e.iov[16:], uint64(uintptr(unsafe.Pointer(&e.payload[0]))))
		binary.LittleEndian.PutUint64(e.iov[24:], uint64(len(e.payload)))
		ents[i] = e
	}
	return ents, mem, nil
}

func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// PossibleCPUs is the kernel's nr_cpu_ids, as /sys says it: the number
// of queues FUSE over io_uring wants.
func PossibleCPUs() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		h, err := strconv.Atoi(hi)
		if err != nil {
			return 0, fmt.Errorf("cpu/possible %q: %w", b, err)
		}
		n = max(n, h+1)
	}
	return n, nil
}

// Probe reports whether this process can make the rings Start makes (an
// io_uring_setup refused by seccomp or kernel.io_uring_disabled, say), so
// a caller can decide before it asks the kernel for FUSE over io_uring:
// once the kernel agreed, it holds every request until the ring is ready.
func Probe() error {
	if _, err := PossibleCPUs(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := NewRing(4, SetupSingleIssuer|SetupDeferTaskrun)
		if err == nil {
			r.Close()
		}
		done <- err
	}()
	return <-done
}
