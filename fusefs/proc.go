package fusefs

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The caller's command name and cgroup, read from /proc when a change is
// told (core.Actor.Process): a request that changes nothing reads nothing.
// The daemon runs as root, so the reads follow nothing a caller controls:
// /proc is opened once and checked to be procfs, and each file is opened
// beneath it with openat2 refusing every symlink, magic links included
// (/proc/PID itself is a directory the kernel makes; /proc/self, a link, is
// never taken). The pid is the one the kernel gave the request, in the
// daemon's pid namespace; one that is gone leaves both empty (a pid
// reused in between names the new process: the window is the request's).

var procDir = sync.OnceValue(func() int {
	fd, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil || st.Type != unix.PROC_SUPER_MAGIC {
		unix.Close(fd)
		return -1
	}
	return fd
})

// maxCgroupFile bounds what is read of /proc/PID/cgroup.
const maxCgroupFile = 8 << 10

// procTTL is how long what was read of a pid serves its next changes: a
// burst through the mount (tar, git, rm -rf) reads /proc once per process
// and per procTTL, not twice per change (the reads cost about as much as
// the unlink they describe). A process that execs or renames itself is
// told by its old comm for at most that long; the pid itself is always
// the request's.
const procTTL = 250 * time.Millisecond

// procCacheMax bounds the pids remembered; past it the cache starts over.
const procCacheMax = 1024

type procSeen struct {
	comm, cgroup string
	at           time.Time
}

var procCache struct {
	sync.Mutex
	m map[uint32]procSeen
}

// process is the command name and cgroup v2 path of pid, "" where unknown.
func process(pid uint32) (comm, cgroup string) {
	now := time.Now()
	procCache.Lock()
	e, ok := procCache.m[pid]
	procCache.Unlock()
	if ok && now.Sub(e.at) < procTTL {
		return e.comm, e.cgroup
	}
	comm, cgroup = readProcess(pid)
	procCache.Lock()
	if procCache.m == nil || len(procCache.m) >= procCacheMax {
		procCache.m = map[uint32]procSeen{}
	}
	procCache.m[pid] = procSeen{comm, cgroup, now}
	procCache.Unlock()
	return comm, cgroup
}

// readProcess reads the command name and cgroup of pid from /proc.
func readProcess(pid uint32) (comm, cgroup string) {
	dir := procDir()
	if dir < 0 || pid == 0 {
		return "", ""
	}
	p := strconv.FormatUint(uint64(pid), 10)
	var buf [maxCgroupFile]byte
	if b := readProc(dir, p+"/comm", buf[:64]); b != nil {
		comm = string(bytes.TrimSuffix(b, []byte("\n")))
	}
	if b := readProc(dir, p+"/cgroup", buf[:]); b != nil {
		cgroup = unifiedCgroup(b, len(b) == len(buf))
	}
	return comm, cgroup
}

// readProc reads name beneath dir into buf, nil when it cannot.
func readProc(dir int, name string, buf []byte) []byte {
	fd, err := unix.Openat2(dir, name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if err == unix.ENOSYS {
		// Before Linux 5.6: the one directory on the way is the numeric
		// one the kernel makes for the pid, and the file is not followed.
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n]
}

// unifiedCgroup is the path of the "0::PATH" line of a /proc/PID/cgroup
// (the cgroup v2 hierarchy), "" when there is none or it was cut (the
// read filled its buffer: cut).
func unifiedCgroup(b []byte, cut bool) string {
	for len(b) > 0 {
		line, rest, found := bytes.Cut(b, []byte("\n"))
		if p, ok := bytes.CutPrefix(line, []byte("0::")); ok {
			if !found && cut {
				return ""
			}
			return string(p)
		}
		b = rest
	}
	return ""
}

// maxStatusFile bounds what is read of /proc/PID/status: its Groups line
// lists at most NGROUPS_MAX (65,536) ids, but a process of more than a few
// hundred groups is left unknown rather than read whole.
const maxStatusFile = 16 << 10

// inGroup reports whether the process pid has gid among its supplementary
// groups (/proc/PID/status); false where that cannot be read whole.
func inGroup(pid, gid uint32) bool {
	dir := procDir()
	if dir < 0 || pid == 0 {
		return false
	}
	var buf [maxStatusFile]byte
	b := readProc(dir, strconv.FormatUint(uint64(pid), 10)+"/status", buf[:])
	if b == nil || len(b) == len(buf) {
		return false
	}
	_, rest, ok := bytes.Cut(b, []byte("\nGroups:"))
	if !ok {
		return false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	want := strconv.FormatUint(uint64(gid), 10)
	for _, g := range bytes.Fields(line) {
		if string(g) == want {
			return true
		}
	}
	return false
}
