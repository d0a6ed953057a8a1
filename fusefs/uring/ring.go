package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The least of io_uring that the transport needs: one ring, its submission
// and completion queues mmapped, SQEs of 128 bytes (IORING_OP_URING_CMD
// for FUSE carries its command in the second half), and one call that
// submits what was queued and waits for completions. No liburing, no cgo:
// the syscalls and the layouts of include/uapi/linux/io_uring.h.

// The setup flags a Ring may be made with.
const (
	SetupSQE128       = 1 << 10 // 128-byte SQEs: IORING_OP_URING_CMD's command area
	SetupSingleIssuer = 1 << 12 // one thread submits: the one that made the ring
	SetupDeferTaskrun = 1 << 13 // completions' work runs when that thread waits, not by signal
)

// Opcodes used here.
const (
	OpNop      = 0
	OpURingCmd = 46
)

const (
	sysSetup = 425 // io_uring_setup
	sysEnter = 426 // io_uring_enter

	enterGetEvents = 1 // IORING_ENTER_GETEVENTS
	featSingleMmap = 1 // IORING_FEAT_SINGLE_MMAP

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	sqeSize = 128 // with SetupSQE128
	cqeSize = 16
)

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// SQE is one 128-byte submission entry, as struct io_uring_sqe lays it
// out; Cmd is the command area of IORING_OP_URING_CMD (80 bytes from
// offset 48).
type SQE struct {
	Opcode   uint8
	Flags    uint8
	Ioprio   uint16
	Fd       int32
	Off      uint64 // cmd_op in its low 32 bits for IORING_OP_URING_CMD
	Addr     uint64
	Len      uint32
	OpFlags  uint32
	UserData uint64
	BufIndex uint16
	Persona  uint16
	FileIdx  int32
	Cmd      [80]byte
}

// CQE is one completion.
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// Ring is one io_uring instance. A ring made with SetupSingleIssuer must
// be used by the thread that made it only (runtime.LockOSThread).
type Ring struct {
	fd             int
	ringMem        []byte // SQ and CQ rings (one mapping: IORING_FEAT_SINGLE_MMAP)
	cqMem          []byte // the CQ ring when the kernel maps it apart
	sqeMem         []byte
	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        unsafe.Pointer
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           unsafe.Pointer
	tail           uint32 // the SQ tail as filled, published at Submit
}

// NewRing makes a ring of entries submission entries (a power of two)
// with the given setup flags; SetupSQE128 is always added.
func NewRing(entries uint32, flags uint32) (*Ring, error) {
	var p params
	p.flags = flags | SetupSQE128
	fd, _, errno := unix.Syscall(sysSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd)}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mmap(p *params) error {
	sqLen := int(p.sqOff.array + p.sqEntries*4)
	cqLen := int(p.cqOff.cqes + p.cqEntries*cqeSize)
	single := p.features&featSingleMmap != 0
	if single {
		sqLen = max(sqLen, cqLen)
	}
	var err error
	r.ringMem, err = unix.Mmap(r.fd, offSQRing, sqLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sq ring: %w", err)
	}
	cq := r.ringMem
	if !single {
		r.cqMem, err = unix.Mmap(r.fd, offCQRing, cqLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("mmap cq ring: %w", err)
		}
		cq = r.cqMem
	}
	r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sqes: %w", err)
	}
	sq := unsafe.Pointer(&r.ringMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqArray = unsafe.Add(sq, p.sqOff.array)
	c := unsafe.Pointer(&cq[0])
	r.cqHead = (*uint32)(unsafe.Add(c, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(c, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(c, p.cqOff.ringMask))
	r.cqes = unsafe.Add(c, p.cqOff.cqes)
	r.tail = atomic.LoadUint32(r.sqTail)
	return nil
}

// ErrSQFull is returned by Queue when every submission entry is taken.
var ErrSQFull = errors.New("io_uring: submission queue full")

// Queue copies sqe into the next free submission entry; it is submitted
// at the next Submit.
func (r *Ring) Queue(sqe *SQE) error {
	head := atomic.LoadUint32(r.sqHead)
	if r.tail-head > r.sqMask {
		return ErrSQFull
	}
	idx := r.tail & r.sqMask
	*(*SQE)(unsafe.Pointer(&r.sqeMem[int(idx)*sqeSize])) = *sqe
	*(*uint32)(unsafe.Add(r.sqArray, 4*idx)) = idx
	r.tail++
	return nil
}

// Submit publishes the queued entries, hands them to the kernel and, when
// wait > 0, waits until that many completions are ready. A signal (the Go
// runtime's preemption, say) is not an error: the entries the kernel had
// not consumed yet are handed again.
func (r *Ring) Submit(wait uint32) error {
	atomic.StoreUint32(r.sqTail, r.tail)
	for {
		pending := r.tail - atomic.LoadUint32(r.sqHead)
		need := wait > 0 && r.Ready() < wait
		if pending == 0 && !need {
			return nil
		}
		var flags, w uintptr
		if need {
			flags, w = enterGetEvents, uintptr(wait)
		}
		_, _, errno := unix.Syscall6(sysEnter, uintptr(r.fd), uintptr(pending), w, flags, 0, 0)
		switch errno {
		case 0, unix.EINTR:
			// Look again: after a signal, or a wait cut short.
		case unix.EAGAIN, unix.EBUSY:
			// The kernel wants completions read first.
			if r.Ready() > 0 {
				return nil
			}
		default:
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
	}
}

// Ready is how many completions wait to be read.
func (r *Ring) Ready() uint32 {
	return atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead)
}

// Reap calls f with each completion ready, in order, and frees their
// slots.
func (r *Ring) Reap(f func(CQE)) {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := *(*CQE)(unsafe.Add(r.cqes, uintptr(head&r.cqMask)*cqeSize))
		atomic.StoreUint32(r.cqHead, head+1)
		f(c)
	}
}

// Peek calls f with each completion ready without freeing them.
func (r *Ring) Peek(f func(CQE)) {
	head := atomic.LoadUint32(r.cqHead)
	for tail := atomic.LoadUint32(r.cqTail); head != tail; head++ {
		f(*(*CQE)(unsafe.Add(r.cqes, uintptr(head&r.cqMask)*cqeSize)))
	}
}

// Close unmaps the ring and closes it; the kernel cancels what is still
// in flight.
func (r *Ring) Close() error {
	for _, m := range [][]byte{r.sqeMem, r.cqMem, r.ringMem} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	r.sqeMem, r.cqMem, r.ringMem = nil, nil, nil
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}
