package fusefs

import (
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"sandfs/fusefs/uring"
)

// FUSE over io_uring (Options.Uring; package uring has the transport).
// go-fuse keeps its /dev/fuse descriptor to itself, and the ring needs it,
// so the mirror mounts by itself: it opens /dev/fuse, mounts with mount(2)
// and the options go-fuse's direct mount would give, and hands go-fuse the
// descriptor as the magic mountpoint "/dev/fd/N". go-fuse then answers
// INIT, asking for FUSE_OVER_IO_URING (MountOptions.ExtraCapabilities);
// where the kernel offered it, the ring starts on a duplicate of the
// descriptor and serves through a go-fuse ProtocolServer over the same
// RawFileSystem, while go-fuse's loop keeps /dev/fuse (FORGET, INTERRUPT,
// notifications, and every request until the ring is ready). Where the
// kernel did not offer it (enable_uring=N, a kernel before 6.14) or the
// ring cannot start, the mount is served over /dev/fuse alone, as without
// the option, and the log says so once.

// ringWait bounds the wait for the ring's queues after the unmount: the
// kernel ends them as it tears the connection down.
const ringWait = 5 * time.Second

// mountWithRing mounts the mirror at m.mountpoint as described above.
// Once the kernel agreed to FUSE_OVER_IO_URING it holds every request
// until the ring is ready (fuse_block_alloc), so a ring that cannot start
// would hang the mount: io_uring is tried first (Probe), and a ring that
// fails anyway after INIT has its mount detached and made again without
// asking.
func (m *Mirror) mountWithRing(fo *fs.Options) (*fuse.Server, error) {
	if err := uring.Probe(); err != nil {
		m.log.Warn("fuse: io_uring unusable here: serving over /dev/fuse", "sandbox", m.sb.Name(), "err", err)
		server, _, _, err := m.mountOwn(fo, false)
		return server, err
	}
	server, raw, fd, err := m.mountOwn(fo, true)
	if err != nil {
		return nil, err
	}
	if server.KernelSettings().Flags64()&fuse.CAP_OVER_IO_URING == 0 {
		m.log.Warn("fuse: the kernel does not offer FUSE over io_uring (it needs 6.14+ and /sys/module/fuse/parameters/enable_uring=Y): serving over /dev/fuse",
			"sandbox", m.sb.Name(), "mountpoint", m.mountpoint)
		return server, nil
	}
	t, err := m.startRing(raw, &fo.MountOptions, server.KernelSettings(), fd)
	if err != nil {
		m.log.Warn("fuse: io_uring did not start: mounting again over /dev/fuse", "sandbox", m.sb.Name(), "err", err)
		// Abort first: a request the kernel holds keeps the mount alive
		// past a detach, and go-fuse's loop with it.
		if aerr := AbortMount(m.mountpoint); aerr != nil {
			m.log.Warn("fuse: aborting the connection", "mountpoint", m.mountpoint, "err", aerr)
		}
		unix.Unmount(m.mountpoint, unix.MNT_DETACH)
		server.Wait()
		server, _, _, err = m.mountOwn(fo, false)
		return server, err
	}
	m.ring = t
	m.log.Info("fuse: serving over io_uring", "sandbox", m.sb.Name(), "mountpoint", m.mountpoint)
	primeRoot(m.mountpoint)
	return server, nil
}

// mountOwn mounts with mount(2) on a /dev/fuse of its own and has go-fuse
// serve it (INIT done, its loop started), asking for FUSE_OVER_IO_URING
// when ring.
func (m *Mirror) mountOwn(fo *fs.Options, ring bool) (*fuse.Server, fuse.RawFileSystem, int, error) {
	mo := fo.MountOptions
	mo.DirectMount, mo.DirectMountStrict = false, false
	if ring {
		mo.ExtraCapabilities |= fuse.CAP_OVER_IO_URING
	}
	fd, err := mountDevFuse(m.mountpoint, &mo)
	if err != nil {
		return nil, nil, -1, err
	}
	raw := m.newRaw(fo)
	server, err := fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", fd), &mo)
	if err != nil {
		unix.Unmount(m.mountpoint, unix.MNT_DETACH)
		return nil, nil, -1, err
	}
	raw.server.Store(server)
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		unix.Unmount(m.mountpoint, unix.MNT_DETACH)
		return nil, nil, -1, err
	}
	m.ownMount = true
	if !ring {
		primeRoot(m.mountpoint)
	}
	return server, raw, fd, nil
}

// startRing starts the ring on a duplicate of fd, serving through a
// ProtocolServer over raw that knows the INIT in.
func (m *Mirror) startRing(raw fuse.RawFileSystem, mo *fuse.MountOptions, in *fuse.InitIn, fd int) (*uring.Transport, error) {
	o := *mo
	o.ExtraCapabilities |= fuse.CAP_OVER_IO_URING
	ps := fuse.NewProtocolServer(raw, &o)
	if err := primeInit(ps, in); err != nil {
		return nil, err
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mountpoint := m.mountpoint
	return uring.Start(uring.Config{Fd: dup, Handler: ps, PayloadSize: o.MaxWrite + os.Getpagesize(), Log: m.log,
		OnFail: func(error) {
			// A mount that fails loudly (ENOTCONN) rather than one
			// whose callers on that CPU hang.
			if err := AbortMount(mountpoint); err != nil {
				m.log.Error("fuse: aborting the connection of a failed io_uring queue", "mountpoint", mountpoint, "err", err)
			}
		}})
}

// primeRoot asks for the mount's root once. The kernel makes the root
// inode with the mode rootmode gave (a directory, no permission bits)
// until a GETATTR answers, and drops a GETATTR's answer when an
// invalidation of the inode overtook it: a caller other than root would
// get EACCES at the root until the next one. go-fuse asks at mount (its
// poll hack) except on a "/dev/fd/N" mount; this asks before the
// journal's invalidations start, and only once the connection serves
// (with the ring, once the ring is ready: until then the kernel holds
// every request).
func primeRoot(mountpoint string) {
	var st unix.Stat_t
	_ = unix.Stat(mountpoint, &st)
}

// mountDevFuse opens /dev/fuse and mounts it at mountpoint as go-fuse's
// direct mount does (fusermount3's options: fd, rootmode, user_id,
// group_id, max_read, then the mount's own), and returns the descriptor.
func mountDevFuse(mountpoint string, mo *fuse.MountOptions) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(mountpoint, &st); err != nil {
		return -1, err
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	opts := []string{
		fmt.Sprintf("fd=%d", fd),
		fmt.Sprintf("rootmode=%o", st.Mode&unix.S_IFMT),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", mo.MaxWrite),
	}
	opts = append(opts, mo.Options...)
	if mo.AllowOther {
		opts = append(opts, "allow_other")
	}
	if err := unix.Mount(mo.FsName, mountpoint, "fuse."+mo.Name, unix.MS_NOSUID|unix.MS_NODEV, strings.Join(opts, ",")); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("mount(2): %w", err)
	}
	return fd, nil
}

// primeInit tells ps the INIT the kernel sent and the server answered, by
// serving it once more: a ProtocolServer parses requests by the
// negotiated protocol (minor version, flags), which it learns only so.
// Its answer is the server's, since the options are the same; it goes
// nowhere.
func primeInit(ps *fuse.ProtocolServer, in *fuse.InitIn) error {
	in.Length = uint32(unsafe.Sizeof(*in))
	req := unsafe.Slice((*byte)(unsafe.Pointer(in)), unsafe.Sizeof(*in))
	out := make([]byte, 4096)
	n, st := ps.HandleRequest([][]byte{req}, [][]byte{out})
	if !st.Ok() || n < 16 {
		return fmt.Errorf("INIT for the ring: %v", st)
	}
	var oh fuse.OutHeader
	oh = *(*fuse.OutHeader)(unsafe.Pointer(&out[0]))
	if oh.Status != 0 {
		return fmt.Errorf("INIT for the ring: status %d", oh.Status)
	}
	return nil
}

// stopRing waits for the ring's queues to end once the connection is gone
// (the kernel ends them at unmount).
func (m *Mirror) stopRing() {
	if m.ring == nil {
		return
	}
	select {
	case <-m.ring.Done():
	case <-time.After(ringWait):
		m.log.Warn("fuse: the io_uring queues did not end with the connection", "sandbox", m.sb.Name(), "mountpoint", m.mountpoint)
	}
}

// URingRequests is how many requests the mirror served over io_uring.
func (m *Mirror) URingRequests() uint64 {
	if m.ring == nil {
		return 0
	}
	return m.ring.Requests()
}
