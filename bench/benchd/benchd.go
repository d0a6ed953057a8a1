// Package benchd starts a sandfs daemon for the benchmarks: a subprocess on
// a free loopback port, ready when /health answers.
package benchd

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// Start runs `bin serve --root root` plus args on a free loopback port and
// waits until it answers. stop interrupts it and waits for it to exit.
func Start(bin, root string, args ...string) (base string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	d := exec.Command(bin, append([]string{"serve", "--root", root, "--listen", addr}, args...)...)
	d.Stderr = io.Discard
	if err := d.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { d.Process.Signal(os.Interrupt); d.Wait() }
	base = "http://" + addr
	for i := 0; ; i++ {
		if r, err := http.Get(base + "/health"); err == nil {
			r.Body.Close()
			return base, stop, nil
		}
		if i > 500 {
			stop()
			return "", nil, fmt.Errorf("daemon not ready at %s", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
