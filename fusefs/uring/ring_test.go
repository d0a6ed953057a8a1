package uring

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"sandfs/internal/testenv"
)

// The layouts the kernel reads: a 128-byte SQE with its command area at
// 48, a 16-byte CQE, the 120-byte io_uring_params.
func TestLayouts(t *testing.T) {
	var s SQE
	if unsafe.Sizeof(s) != sqeSize || unsafe.Offsetof(s.Cmd) != 48 || unsafe.Offsetof(s.UserData) != 32 || unsafe.Offsetof(s.Addr) != 16 {
		t.Fatalf("SQE: size %d, cmd at %d, user_data at %d", unsafe.Sizeof(s), unsafe.Offsetof(s.Cmd), unsafe.Offsetof(s.UserData))
	}
	if unsafe.Sizeof(CQE{}) != cqeSize || unsafe.Sizeof(params{}) != 120 {
		t.Fatalf("CQE %d, params %d", unsafe.Sizeof(CQE{}), unsafe.Sizeof(params{}))
	}
}

// newTestRing makes a ring as the transport does, on this locked thread,
// or skips where io_uring is not allowed (a seccomp filter, the sysctl
// kernel.io_uring_disabled).
func newTestRing(t *testing.T, entries uint32) *Ring {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r, err := NewRing(entries, SetupSingleIssuer|SetupDeferTaskrun)
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
		testenv.Skip(t, nil, "io_uring unavailable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// A NOP goes through the SQ and comes back on the CQ with its user_data,
// many times round, past the rings' ends.
func TestNopRoundTrip(t *testing.T) {
	r := newTestRing(t, 4)
	next := uint64(1)
	for round := 0; round < 10; round++ {
		for i := 0; i < 3; i++ {
			if err := r.Queue(&SQE{Opcode: OpNop, UserData: next + uint64(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Submit(3); err != nil {
			t.Fatal(err)
		}
		var got []uint64
		r.Reap(func(c CQE) {
			if c.Res != 0 {
				t.Errorf("nop res %d", c.Res)
			}
			got = append(got, c.UserData)
		})
		if len(got) != 3 || got[0] != next || got[2] != next+2 {
			t.Fatalf("round %d: completions %v, want %d..%d", round, got, next, next+2)
		}
		next += 3
	}
	if r.Ready() != 0 {
		t.Fatalf("%d completions left", r.Ready())
	}
}

// The SQ holds as many entries as the ring was made with, no more.
func TestQueueFull(t *testing.T) {
	r := newTestRing(t, 2)
	for i := 0; i < 2; i++ {
		if err := r.Queue(&SQE{Opcode: OpNop}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Queue(&SQE{Opcode: OpNop}); !errors.Is(err, ErrSQFull) {
		t.Fatalf("third entry: %v, want ErrSQFull", err)
	}
	if err := r.Submit(2); err != nil {
		t.Fatal(err)
	}
}

// A URING_CMD on a file that is not /dev/fuse is refused on its CQE, as
// a refused REGISTER is: what Start's peek looks for.
func TestCmdRefused(t *testing.T) {
	r := newTestRing(t, 2)
	fds := make([]int, 2)
	if err := syscall.Pipe(fds); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	if err := r.Queue(&SQE{Opcode: OpURingCmd, Fd: int32(fds[0]), Off: cmdRegister, UserData: 7}); err != nil {
		t.Fatal(err)
	}
	if err := r.Submit(1); err != nil {
		t.Fatal(err)
	}
	var res int32
	r.Reap(func(c CQE) { res = c.Res })
	if res >= 0 {
		t.Fatalf("uring_cmd on a pipe: res %d, want an error", res)
	}
}

func TestPossibleCPUs(t *testing.T) {
	n, err := PossibleCPUs()
	if err != nil || n < runtime.NumCPU() {
		t.Fatalf("PossibleCPUs = %d, %v; NumCPU %d", n, err, runtime.NumCPU())
	}
}
