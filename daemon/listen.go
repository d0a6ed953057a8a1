package daemon

// The daemon's listener and its http.Server: TCP or a unix socket (a stale
// socket file is replaced, and removed on exit), and whether the address
// reaches this machine only.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// DefaultMaxHeaderBytes bounds a request's line and headers: room for a
// query naming a 4 KiB path three times over, percent-encoded.
const DefaultMaxHeaderBytes = 64 << 10

// httpServer builds the daemon's http.Server. A client that sends its
// headers slowly, or leaves a keep-alive connection idle, loses the
// connection after the configured time (api.md §1: 10 s, 120 s); request
// lines and headers over MaxHeaderBytes get 431. Bodies have no read
// timeout: a large upload may take as long as it takes, and a client gone
// quiet mid-body is seen by the handler as a failed read when the TCP
// connection dies. Requests run under base, not the signal's context.
func httpServer(h http.Handler, c HTTPConfig, log *slog.Logger, base context.Context) *http.Server {
	maxHeader := c.MaxHeaderBytes
	if maxHeader <= 0 {
		maxHeader = DefaultMaxHeaderBytes
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.HeaderTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    maxHeader,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
}

// LocalAddr reports whether the --listen ADDR reaches this machine only: a
// unix socket, or a TCP address whose host resolves to a loopback IP (an
// empty host is every interface).
func LocalAddr(addr string) bool {
	if strings.HasPrefix(addr, "unix:") {
		return true
	}
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return true // listen reports the bad address; the listener is checked again
	}
	return a.IP != nil && a.IP.IsLoopback()
}

// listen opens ADDR: "unix:/path.sock" (also "unix:///path.sock") or a TCP
// HOST:PORT. It returns the listener, the address as the log tells it, and a
// cleanup that removes the socket file (if it is still ours).
func listen(addr string) (net.Listener, string, func(), error) {
	noop := func() {}
	if !strings.HasPrefix(addr, "unix:") {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, "", nil, fmt.Errorf("listen: %w", err)
		}
		return l, l.Addr().String(), noop, nil
	}
	path := strings.TrimPrefix(strings.TrimPrefix(addr, "unix:"), "//")
	if path == "" {
		return nil, "", nil, fmt.Errorf("--listen %q: no socket path after unix:", addr)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, "", nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("listen: %w", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(true)
	ours, err := os.Lstat(path)
	if err != nil {
		l.Close()
		return nil, "", nil, fmt.Errorf("listen: %w", err)
	}
	cleanup := func() {
		l.Close() // unlinks; Shutdown has usually closed it already
		if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, ours) {
			os.Remove(path)
		}
	}
	return l, "unix:" + path, cleanup, nil
}

// removeStaleSocket removes a socket file nobody listens on. A live socket
// (another daemon) or a file that is not a socket is left alone and refused.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("listen: %s exists and is not a socket; not replacing it", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("listen: another process is serving on %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("listen: removing the stale socket: %w", err)
	}
	return nil
}

// isLocal reports whether only this machine can reach l: a unix socket or a
// loopback TCP address.
func isLocal(l net.Listener) bool {
	switch a := l.Addr().(type) {
	case *net.UnixAddr:
		return true
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	}
	return false
}
