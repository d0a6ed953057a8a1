// Command watchcost measures what core/watch/doc.go quotes for issue
// 17: the cost of inotify watches on a tree like a .git and a node_modules
// (time and unreclaimable kernel memory to place them, by path and by
// descriptor), of an event to a writer and to the reader, and whether a
// fanotify filesystem mark with FAN_REPORT_DFID_NAME and FAN_RENAME works
// here, what it hears of the rest of the filesystem and what resolving a
// handle costs. Run as root, on the filesystem the roots live on:
//
//	go build -o /tmp/watchcost ./core/testdata/watchcost
//	BG='cp -r /usr/local/go/src /tmp/wc-cp; rm -rf /tmp/wc-cp' /tmp/watchcost /tmp/wc-tree 800
//
// BG is a command run elsewhere on the disk while the fanotify mark
// listens for 10 s; the second argument is the number of node_modules
// packages (7 directories each). It is a measurement, not a test.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func meminfo() map[string]int {
	f, _ := os.Open("/proc/meminfo")
	defer f.Close()
	m := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		v, _ := strconv.Atoi(fs[1])
		m[strings.TrimSuffix(fs[0], ":")] = v
	}
	return m
}

func mkdirs(root string, pkgs int) {
	for _, d := range []string{"refs/heads", "refs/tags", "hooks", "info", "logs/refs/heads", "objects/info", "objects/pack"} {
		os.MkdirAll(filepath.Join(root, ".git", d), 0o755)
	}
	for i := 0; i < 256; i++ {
		os.MkdirAll(filepath.Join(root, ".git/objects", fmt.Sprintf("%02x", i)), 0o755)
	}
	for p := 0; p < pkgs; p++ {
		for _, d := range []string{"lib", "dist/esm", "dist/cjs", "src/a", "src/b", "test", "types"} {
			os.MkdirAll(filepath.Join(root, "node_modules", fmt.Sprintf("pkg%d", p), d), 0o755)
		}
	}
}

func dirsOf(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

const mask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

func inotifyPlace(dirs []string, byFd bool) {
	runtimeSettle()
	before := meminfo()
	t0 := time.Now()
	in, _ := unix.InotifyInit1(unix.IN_CLOEXEC)
	for _, d := range dirs {
		if byFd {
			fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				panic(err)
			}
			if _, err := unix.InotifyAddWatch(in, "/proc/self/fd/"+strconv.Itoa(fd), mask); err != nil {
				panic(err)
			}
			unix.Close(fd)
		} else if _, err := unix.InotifyAddWatch(in, d, mask|unix.IN_DONT_FOLLOW); err != nil {
			panic(err)
		}
	}
	el := time.Since(t0)
	time.Sleep(200 * time.Millisecond)
	after := meminfo()
	fmt.Printf("inotify byFd=%v: %d watches in %v (%.1f us/watch); Slab %+d KiB SUnreclaim %+d KiB (%.0f B/watch unreclaimable)\n",
		byFd, len(dirs), el, float64(el.Microseconds())/float64(len(dirs)),
		after["Slab"]-before["Slab"], after["SUnreclaim"]-before["SUnreclaim"],
		float64(after["SUnreclaim"]-before["SUnreclaim"])*1024/float64(len(dirs)))
	t1 := time.Now()
	unix.Close(in)
	fmt.Printf("  close (drop all watches): %v\n", time.Since(t1))
}

func runtimeSettle() { time.Sleep(300 * time.Millisecond) }

// churn creates and unlinks n files in dir; returns the time per pair.
func churn(dir string, n int) time.Duration {
	t0 := time.Now()
	dfd, _ := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	for i := 0; i < n; i++ {
		name := "f" + strconv.Itoa(i)
		fd, err := unix.Openat(dfd, name, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			panic(err)
		}
		unix.Write(fd, []byte("x"))
		unix.Close(fd)
		unix.Unlinkat(dfd, name, 0)
	}
	unix.Close(dfd)
	return time.Since(t0) / time.Duration(n)
}

func perEvent(dir string) {
	const n = 3000
	fmt.Printf("writer, create+write+close+unlink, per op (3 inotify events):\n")
	fmt.Printf("  unwatched:        %v\n", churn(dir, n))
	in, _ := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	unix.InotifyAddWatch(in, dir, mask)
	fmt.Printf("  inotify watched:  %v\n", churn(dir, n))
	buf := make([]byte, 256<<10)
	t0 := time.Now()
	evs := 0
	for {
		m, err := unix.Read(in, buf)
		if err != nil || m <= 0 {
			break
		}
		for off := 0; off < m; {
			raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			off += unix.SizeofInotifyEvent + int(raw.Len)
			evs++
		}
	}
	el := time.Since(t0)
	fmt.Printf("  inotify reader: %d events read in %v (%.2f us/event)\n", evs, el, float64(el.Nanoseconds())/float64(evs)/1000)
	unix.Close(in)

	fa, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_REPORT_DFID_NAME|unix.FAN_UNLIMITED_QUEUE, unix.O_RDONLY)
	if err != nil {
		fmt.Println("fanotify_init:", err)
		return
	}
	fmask := uint64(unix.FAN_CREATE | unix.FAN_DELETE | unix.FAN_MOVED_FROM | unix.FAN_MOVED_TO | unix.FAN_RENAME | unix.FAN_ATTRIB | unix.FAN_MODIFY | unix.FAN_DELETE_SELF | unix.FAN_MOVE_SELF | unix.FAN_ONDIR)
	if err := unix.FanotifyMark(fa, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, fmask, unix.AT_FDCWD, dir); err != nil {
		fmt.Println("fanotify_mark FILESYSTEM:", err)
		return
	}
	fmt.Printf("  fanotify fs mark: %v (FAN_MARK_FILESYSTEM + FAN_REPORT_DFID_NAME + FAN_RENAME accepted)\n", churn(dir, n))
	t0 = time.Now()
	evs = 0
	var bytes int
	for {
		m, err := unix.Read(fa, buf)
		if err != nil || m <= 0 {
			break
		}
		bytes += m
		for off := 0; off+int(unix.FAN_EVENT_METADATA_LEN) <= m; {
			md := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&buf[off]))
			off += int(md.Event_len)
			evs++
		}
	}
	el = time.Since(t0)
	fmt.Printf("  fanotify reader: %d events (%d B) in %v (%.2f us/event)\n", evs, bytes, el, float64(el.Nanoseconds())/float64(max(evs, 1))/1000)
	// mount marks and dirent events
	fm, _ := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_REPORT_DFID_NAME, unix.O_RDONLY)
	err = unix.FanotifyMark(fm, unix.FAN_MARK_ADD|unix.FAN_MARK_MOUNT, fmask, unix.AT_FDCWD, dir)
	fmt.Println("  fanotify FAN_MARK_MOUNT with dirent events:", err)
	unix.Close(fm)

	// background: the whole filesystem, nobody in the sandbox writing.
	for {
		if _, err := unix.Read(fa, buf); err != nil {
			break
		}
	}
	t0 = time.Now()
	evs, bytes = 0, 0
	if c := os.Getenv("BG"); c != "" {
		go exec.Command("sh", "-c", c).Run()
	}
	for time.Since(t0) < 10*time.Second {
		m, err := unix.Read(fa, buf)
		if err != nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		bytes += m
		for off := 0; off+int(unix.FAN_EVENT_METADATA_LEN) <= m; {
			md := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&buf[off]))
			off += int(md.Event_len)
			evs++
		}
	}
	fmt.Printf("  fanotify fs mark, 10 s with the root idle (BG=%q): %d events, %d B (%.0f events/s), all outside the root\n", os.Getenv("BG"), evs, bytes, float64(evs)/10)
	unix.Close(fa)

	// open_by_handle_at cost: resolve a directory handle to a path.
	h, mnt, err := unix.NameToHandleAt(unix.AT_FDCWD, dir, 0)
	if err != nil {
		fmt.Println("name_to_handle_at:", err)
		return
	}
	_ = mnt
	mfd, _ := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	const k = 20000
	t0 = time.Now()
	lb := make([]byte, 4096)
	for i := 0; i < k; i++ {
		fd, err := unix.OpenByHandleAt(mfd, h, unix.O_PATH)
		if err != nil {
			fmt.Println("open_by_handle_at:", err)
			return
		}
		unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), lb)
		unix.Close(fd)
	}
	fmt.Printf("  open_by_handle_at + readlink(/proc/self/fd) + close: %.2f us each\n", float64(time.Since(t0).Nanoseconds())/k/1000)
}

func main() {
	base := os.Args[1]
	pkgs, _ := strconv.Atoi(os.Args[2])
	os.RemoveAll(base)
	mkdirs(base, pkgs)
	dirs := dirsOf(base)
	fmt.Printf("tree: %d directories (.git with 256 object dirs, node_modules with %d packages)\n", len(dirs), pkgs)
	for i := 0; i < 2; i++ {
		inotifyPlace(dirs, false)
		inotifyPlace(dirs, true)
	}
	os.MkdirAll(base+"/churn", 0o755)
	perEvent(base + "/churn")
	os.RemoveAll(base)
}
