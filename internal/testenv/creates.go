package testenv

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// createLoop makes the files f0, f1, ... in dir, one after another, until
// stopped, and returns how many it made. It says "going" after its 50th,
// and, once 100 tries in a row have failed after one succeeded, "cut T N":
// the wall time (Unix nanoseconds) at which its last create returned, and
// how many it made. That is how long a directory moved away from under a
// process stays reachable to it.
func createLoop(dir string, stopped func() bool) int {
	made, fails := 0, 0
	var last time.Time
	for i := 0; !stopped(); i++ {
		fd, err := unix.Open(filepath.Join(dir, "f"+strconv.Itoa(i)), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			fails++
			if made > 0 && fails == 100 {
				fmt.Println("cut", last.UnixNano(), made)
			}
			if fails > 100 {
				time.Sleep(time.Millisecond) // cut off: wait for the stop
			}
			continue
		}
		last = time.Now()
		unix.Close(fd)
		made++
		fails = 0
		if made == 50 {
			fmt.Println("going")
		}
	}
	return made
}
